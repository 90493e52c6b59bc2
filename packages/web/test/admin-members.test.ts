// Project administration in the dashboard, end to end against the real built
// app and a real server: an invitation read from the server's outbox and
// accepted in a second browser, the key granted only after the fingerprints
// are compared, roles (with the last-admin refusal), the members list's
// filters, sorting and pages, a removal followed by a re-key (and one put off
// with "Later"), and the audit log of all of it. The tests run in order and
// share one server: each builds on what the previous one left.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { createCiToken, inviteMember, listCiTokens, listMembers, type Role } from '@coffer/sdk';
import {
  Visitor,
  hasChromium,
  serviceMissing,
  startCofferAndBrowser,
  type Coffer,
  CHROMIUM_MISSING,
} from './support/browser.js';
import { eventually, expect, expectTitle } from './support/expect.js';
import {
  addSecret,
  cell,
  confirmRecoveryKey,
  createProject,
  editCell,
  fillSignUp,
  newAccount,
  revealedValue,
  reviewAndSave,
  signUp,
  unlock,
} from './support/flows.js';
import {
  adminPage,
  adminScreenshots,
  assertAdminAccessible,
  filterSelect,
  bodyRows,
  memberEmails,
  openTab,
  sdkMember,
} from './support/admin.js';

let browser: Browser | undefined;
let coffer: Coffer | undefined;

before(async () => {
  if (!hasChromium()) return;
  [coffer, browser] = await startCofferAndBrowser();
});
after(async () => {
  await adminVisitor?.close().catch(() => undefined);
  await inviteeVisitor?.close().catch(() => undefined);
  await browser?.close();
  await coffer?.stop();
});

const VALUES = {
  db: 'postgres://payments:b7e1-granted@db.staging.internal/payments',
  afterRekey: 'sk_live_after_rekey_5d2c91f0aa',
};

// Shared by the tests of this file, in order.
const admin = newAccount('admin');
const invitee = newAccount('invitee');
let projectId = '';
let adminVisitor: Visitor | undefined;
let inviteeVisitor: Visitor | undefined;
let remaining: Awaited<ReturnType<typeof sdkMember>> | undefined;
let later: Awaited<ReturnType<typeof sdkMember>> | undefined;

const ready = (t: import('node:test').TestContext) => {
  if (!browser || !coffer) {
    serviceMissing(t, CHROMIUM_MISSING);
    return false;
  }
  return true;
};

async function failed<T>(visitor: Visitor | undefined, name: string, run: () => Promise<T>) {
  try {
    return await run();
  } catch (error) {
    if (visitor) await adminScreenshots(visitor.page, `failed-${name}`).catch(() => undefined);
    throw error;
  }
}

test('invite by e-mail, sign up from the link, compare fingerprints, grant, read', async (t) => {
  if (!ready(t)) return;
  adminVisitor = await Visitor.open(browser!, coffer!);
  inviteeVisitor = await Visitor.open(browser!, coffer!);
  const a = adminVisitor.page;
  const b = inviteeVisitor.page;
  for (const v of [adminVisitor, inviteeVisitor])
    v.secret(admin.password, invitee.password, ...Object.values(VALUES));

  await failed(adminVisitor, 'invite-admin', async () => {
    await signUp(adminVisitor!, admin);
    projectId = await createProject(a, 'Payments');
    await addSecret(a, 'DATABASE_URL', VALUES.db, ['staging']);
    await reviewAndSave(a, 1);

    // Invite on the Members page; the same address again is refused at the field.
    await openTab(a, 'Members');
    const invite = a.getByRole('form', { name: 'Invite a member' });
    const email = invite.getByLabel('Invite by e-mail', { exact: true });
    await email.fill(invitee.email);
    await invite.getByLabel('Role', { exact: true }).selectOption('developer');
    await invite.getByRole('button', { name: 'Invite' }).click();
    await expect(invite.getByRole('status')).toContainText(`Invited ${invitee.email}`);
    await expect(bodyRows(a).filter({ hasText: invitee.email })).toContainText('pending');
    await email.fill(invitee.email);
    await invite.getByRole('button', { name: 'Invite' }).click();
    await expect(email).toHaveAttribute('aria-invalid', 'true');
    const describedBy = (await email.getAttribute('aria-describedby')) ?? '';
    const fieldError = a.locator(`[id="${describedBy.split(' ').at(-1)}"]`);
    await expect(fieldError).toContainText('already');
    // Invited, not yet a member: the words say so.
    await expect(fieldError).toHaveText(`${invitee.email} is already invited (pending)`);
    // The only admin has no Remove on their own row (the server would refuse it): a note instead.
    const own = bodyRows(a).filter({ hasText: admin.email });
    await expect(own).toContainText('The only admin');
    await expect(own.getByRole('button', { name: `Remove ${admin.email}` })).toHaveCount(0);
    await adminPage(a, 'members');
  });

  let inviteeFingerprint = '';
  await failed(inviteeVisitor, 'invite-invitee', async () => {
    // The e-mail in the server's outbox (quoted-printable undone) carries the link.
    const link = await coffer!.invitationLink(invitee.email);
    assert.equal(new URL(link).origin, coffer!.url);
    await b.goto(link);
    await expect(
      b.getByRole('heading', { name: 'You are invited to a Coffer project' }),
    ).toBeVisible();
    await adminPage(b, 'invite');
    await b.getByRole('button', { name: 'Create an account' }).click();
    const recoveryKey = await fillSignUp(b, invitee);
    inviteeVisitor!.secret(recoveryKey);
    await confirmRecoveryKey(b);
    await expect(b.getByRole('heading', { name: 'Your invitation' })).toBeVisible();
    const card = b.getByRole('listitem').filter({ hasText: 'Payments' });
    await expect(card).toContainText(`${admin.name} (${admin.email}) invited you as developer`);
    await card.getByRole('button', { name: 'Accept' }).click();
    // Accepted: the project's fingerprint (its chain's root, pinned now), to compare with the inviter.
    const joined = b.getByRole('status').filter({ hasText: 'You joined Payments' });
    await expect(joined.getByLabel('Project fingerprint')).toHaveText(
      /^[0-9A-F]{8}( [0-9A-F]{8}){4}$/,
    );
    await expect(joined).toContainText(`compare it with ${admin.name}`);
    await joined.getByRole('link', { name: 'Open Payments' }).click();
    await b.waitForURL(new RegExp(`/projects/${projectId}$`));

    // Names without values until an admin grants the key; the fingerprint to read out.
    const waiting = b.getByRole('status').filter({ hasText: 'Waiting for the project key' });
    await expect(waiting).toBeVisible();
    inviteeFingerprint = ((await waiting.locator('p.mono').textContent()) ?? '').trim();
    assert.match(inviteeFingerprint, /^[0-9A-F]{8}( [0-9A-F]{8}){4}$/);
    await expect(cell(b, 'DATABASE_URL', 'staging')).toBeVisible();
    await cell(b, 'DATABASE_URL', 'staging').hover(); // a cell's actions are there on hover
    await expect(cell(b, 'DATABASE_URL', 'staging').locator('.cell-actions')).toHaveCount(1);
    assert.equal(
      await cell(b, 'DATABASE_URL', 'staging')
        .getByRole('button', { name: 'Reveal DATABASE_URL in staging' })
        .count(),
      0,
      'no reveal before the grant',
    );
    await adminPage(b, 'awaiting-grant');
    await b
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Account' })
      .click();
    await expect(b.getByLabel('Your key fingerprint')).toHaveText(inviteeFingerprint);
  });

  await failed(adminVisitor, 'grant', async () => {
    await openTab(a, 'Access');
    const row = bodyRows(a).filter({ hasText: invitee.email });
    await expect(row).toContainText(inviteeFingerprint);
    await expect(row).toContainText('developer');
    await adminPage(a, 'access');
    await row.getByRole('button', { name: `Grant the key to ${invitee.email}` }).click();
    const dialog = a.getByRole('dialog', { name: `Grant the project key to ${invitee.name}` });
    await expect(dialog.getByLabel(`Fingerprint of ${invitee.email}`)).toHaveText(
      inviteeFingerprint,
    );
    const told = dialog.getByLabel(`Fingerprint as told by ${invitee.name} (optional)`);
    const grant = dialog.getByRole('button', { name: 'Grant the key' });
    await expect(grant).toBeDisabled();
    // One character off: the mismatch is said and granting stays impossible, ticked or not.
    const last = inviteeFingerprint.at(-1)!;
    const wrong = inviteeFingerprint.slice(0, -1) + (last === 'A' ? 'B' : 'A');
    await told.fill(wrong);
    await expect(told).toHaveAttribute('aria-invalid', 'true');
    await expect(dialog).toContainText('This is not the fingerprint the server shows');
    await dialog.getByLabel(`${invitee.name} confirmed this fingerprint to me`).check();
    await expect(grant).toBeDisabled();
    await adminPage(a, 'grant-dialog');
    // As read out: lower case and without spaces still compares equal.
    await told.fill(inviteeFingerprint.replace(/\s+/g, '').toLowerCase());
    await expect(grant).toBeEnabled();
    await grant.click();
    await expect(dialog).toBeHidden();
    await expect(a.getByRole('main')).toContainText('Nobody is waiting.');
  });

  await failed(inviteeVisitor, 'grant-read', async () => {
    await b.reload();
    await unlock(b, invitee);
    await b
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Projects' })
      .click();
    await b.getByRole('link', { name: 'Payments' }).click();
    assert.equal(await revealedValue(b, 'DATABASE_URL', 'staging'), VALUES.db);
    await expect(
      b.getByRole('status').filter({ hasText: 'Waiting for the project key' }),
    ).toBeHidden();

    // A developer has no Audit tab, and the page itself refuses.
    await expect(b.getByRole('navigation', { name: 'Project' }).getByRole('link')).toHaveCount(4);
    assert.equal(
      await b
        .getByRole('navigation', { name: 'Project' })
        .getByRole('link', { name: 'Audit' })
        .count(),
      0,
    );
    await inviteeVisitor!.goto(`/projects/${projectId}/audit`);
    await unlock(b, invitee);
    const refusal = await eventually(
      'a refusal on the audit page',
      async () => (await b.getByRole('alert').allTextContents()).join(' '),
      (text) => text.trim() !== '',
    );
    assert.match(refusal, /admin|permission|not allowed|forbidden/i);
    assert.equal(await b.getByRole('main').getByRole('listitem').count(), 0, 'no event shown');
  });
  adminVisitor.check();
  inviteeVisitor.check();
});

test('roles: the last admin cannot be demoted; promote and demote; filters, sorting, pages', async (t) => {
  if (!ready(t) || !adminVisitor) return;
  const a = adminVisitor.page;
  await failed(adminVisitor, 'roles', async () => {
    await openTab(a, 'Members');
    // The only admin: the API's last_admin refusal appears in that row.
    const mine = bodyRows(a).filter({ hasText: admin.email });
    await mine.getByLabel(`Role of ${admin.email}`).selectOption('developer');
    await expect(mine.getByRole('alert')).toContainText(
      'Cannot demote the last admin of the project',
    );
    await expect(mine.getByLabel(`Role of ${admin.email}`)).toHaveValue('admin');

    const theirs = () => bodyRows(a).filter({ hasText: invitee.email });
    const roleOf = async () => {
      const login = await coffer!.logIn(admin.email, admin.password);
      const list = await listMembers(login.client, projectId, { per_page: 100 });
      return list.data.find((m) => m.user.email === invitee.email)?.role;
    };
    await theirs().getByLabel(`Role of ${invitee.email}`).selectOption('admin');
    await expect(mine.getByRole('alert')).toBeHidden();
    await expect(theirs().getByLabel(`Role of ${invitee.email}`)).toHaveValue('admin');
    await eventually('the invitee is admin', roleOf, (r) => r === 'admin');
    // With a second admin, the first may remove themself.
    await expect(mine.getByRole('button', { name: `Remove ${admin.email}` })).toBeVisible();
    await theirs().getByLabel(`Role of ${invitee.email}`).selectOption('developer');
    await expect(theirs().getByLabel(`Role of ${invitee.email}`)).toHaveValue('developer');
    assert.equal(await roleOf(), 'developer');

    // 21 more invitations through the SDK: 23 members, 20 to a page.
    const login = await coffer!.logIn(admin.email, admin.password);
    const roles: Role[] = ['developer', 'viewer', 'admin'];
    const invited = Array.from({ length: 21 }, (_, i) => ({
      email: `bulk-${String(i).padStart(2, '0')}-${projectId.slice(-6)}@example.test`.toLowerCase(),
      role: roles[i % 3]!,
    }));
    await Promise.all(invited.map((m) => inviteMember(login.client, projectId, m)));
    await a.reload();
    await unlock(a, admin);
    const pages = a.getByRole('navigation', { name: 'Pages of members' });
    await expect(pages).toContainText('Page 1 of 2 · 23 members');
    await expect(bodyRows(a)).toHaveCount(20);
    await pages.getByRole('button', { name: 'Next' }).click();
    await expect(pages).toContainText('Page 2 of 2 · 23 members');
    await expect(bodyRows(a)).toHaveCount(3);
    // Newest first by default: the oldest two (the admin and the invitee) are on page 2.
    assert.ok((await memberEmails(a)).includes(admin.email));

    await filterSelect(a, 'Role').selectOption('viewer');
    await expect(pages).toBeHidden();
    await expect(a.getByRole('main')).toContainText('7 members');
    await expect(bodyRows(a)).toHaveCount(7);
    for (const text of await bodyRows(a).allTextContents()) assert.match(text, /viewer/);

    await filterSelect(a, 'Role').selectOption('');
    await filterSelect(a, 'Status').selectOption('active');
    await expect(bodyRows(a)).toHaveCount(2);
    assert.deepEqual((await memberEmails(a)).sort(), [admin.email, invitee.email].sort());

    await filterSelect(a, 'Status').selectOption('pending');
    await filterSelect(a, 'Role').selectOption('admin');
    await expect(bodyRows(a)).toHaveCount(7);
    await filterSelect(a, 'Sort by').selectOption('email');
    await filterSelect(a, 'Order').selectOption('asc');
    const expected = invited
      .filter((m) => m.role === 'admin')
      .map((m) => m.email)
      .sort();
    await eventually(
      'sorted by e-mail, A–Z',
      () => memberEmails(a),
      (e) => e[0] === expected[0],
    );
    assert.deepEqual(await memberEmails(a), expected);
    await filterSelect(a, 'Order').selectOption('desc');
    await eventually(
      'sorted by e-mail, Z–A',
      () => memberEmails(a),
      (e) => e[0] === expected.at(-1),
    );
    assert.deepEqual(await memberEmails(a), [...expected].reverse());
    await filterSelect(a, 'Status').selectOption('');
    await filterSelect(a, 'Role').selectOption('');
    await expect(pages).toContainText('Page 1 of 2 · 23 members');
  });
  adminVisitor.check();
});

test('removing a developer offers the re-key; the removed browser loses the project; "Later" keeps the banner', async (t) => {
  if (!ready(t) || !adminVisitor || !inviteeVisitor) return;
  const a = adminVisitor.page;
  const login = await coffer!.logIn(admin.email, admin.password);
  [remaining, later] = await Promise.all([
    sdkMember(coffer!, login, projectId, 'remaining', 'developer'),
    sdkMember(coffer!, login, projectId, 'later', 'developer'),
  ]);

  await failed(adminVisitor, 'remove', async () => {
    await a.reload();
    await unlock(a, admin);
    await filterSelect(a, 'Status').selectOption('active');
    await bodyRows(a)
      .filter({ hasText: invitee.email })
      .getByRole('button', { name: `Remove ${invitee.email}` })
      .click();
    const confirm = a.getByRole('dialog', { name: `Remove ${invitee.name}?` });
    await expect(confirm).toContainText('re-key the vault afterwards');
    await confirm.getByRole('button', { name: 'Remove member' }).click();
    const rekey = a.getByRole('dialog', { name: 'Re-key the vault' });
    await expect(rekey).toContainText(`${invitee.name} could read this project's secrets.`);
    await adminPage(a, 'rekey-dialog');
    await rekey.getByRole('button', { name: 'Re-key now' }).click();
    await expect(rekey.getByRole('status')).toHaveText('The vault is re-keyed: epoch 2.', {
      timeout: 30_000,
    });
    const bar = rekey.getByRole('progressbar', { name: 'Done' });
    await expect(bar).toBeVisible();
    assert.equal(await bar.getAttribute('value'), await bar.getAttribute('max'));
    await rekey.getByRole('button', { name: 'Done' }).click();
    await expect(rekey).toBeHidden();
    await expect(bodyRows(a).filter({ hasText: invitee.email })).toHaveCount(0);
  });

  await failed(inviteeVisitor, 'removed', async () => {
    // The removed developer's open dashboard: after a reload the project is gone.
    const b = inviteeVisitor!.page;
    await b.reload();
    await unlock(b, invitee);
    await expect(b.getByRole('heading', { name: 'Project unavailable' })).toBeVisible();
    const why = await eventually(
      'why the project is unavailable',
      async () => (await b.getByRole('alert').allTextContents()).join(' '),
      (text) => text.trim() !== '',
    );
    assert.match(why, /not found|no access|not a member/i);
    assert.ok(!(await b.content()).includes('DATABASE_URL'), 'no secret name shown');
    await inviteeVisitor!.goto('/projects');
    await unlock(b, invitee);
    await expect(b.getByRole('heading', { name: 'Projects', level: 1 })).toBeVisible();
    assert.equal(await b.getByRole('link', { name: 'Payments' }).count(), 0);
  });

  await failed(adminVisitor, 'after-rekey', async () => {
    // Written after the re-key; the remaining developer decrypts it.
    await openTab(a, 'Secrets');
    await editCell(a, 'DATABASE_URL', 'production', VALUES.afterRekey);
    await reviewAndSave(a, 1);
    const values = await coffer!.read(remaining!.login, projectId, 'production');
    assert.equal(values.DATABASE_URL, VALUES.afterRekey);
    assert.equal(
      (await coffer!.read(remaining!.login, projectId, 'staging')).DATABASE_URL,
      VALUES.db,
    );

    // The pipeline of a developer about to be removed: the dialog names its CI
    // token, which goes with them.
    const laterVault = await coffer!.vault(later!.login, projectId);
    const { ciToken } = await createCiToken(laterVault, {
      name: 'nightly-deploy',
      scopes: { staging: 'read' },
    }).finally(() => laterVault.forget());

    // "Later": the banner stays on the project's pages until a re-key from Access.
    await openTab(a, 'Members');
    await bodyRows(a)
      .filter({ hasText: later!.account.email })
      .getByRole('button', { name: `Remove ${later!.account.email}` })
      .click();
    const confirmLater = a.getByRole('dialog', { name: `Remove ${later!.account.name}?` });
    await expect(confirmLater).toContainText(
      `Their CI token is revoked with them: whatever runs with it stops working.`,
    );
    await expect(confirmLater.getByRole('listitem')).toHaveCount(1);
    await expect(confirmLater.getByRole('listitem')).toHaveText(
      `CI token nightly-deploy ${ciToken.id}`,
    );
    await adminPage(a, 'remove-member-dialog');
    await confirmLater.getByRole('button', { name: 'Remove member' }).click();
    const rekey = a.getByRole('dialog', { name: 'Re-key the vault' });
    await rekey.getByRole('button', { name: 'Later' }).click();
    await expect(rekey).toBeHidden();
    const tokens = await listCiTokens(login.client, projectId, { per_page: 100 });
    assert.ok(
      tokens.data.find((token) => token.id === ciToken.id)?.revoked_at,
      'the removed developer’s CI token is revoked',
    );
    const banner = a.getByRole('status').filter({ hasText: 'Re-key recommended.' });
    for (const tab of ['Members', 'Secrets', 'Tokens', 'Audit', 'Access']) {
      await openTab(a, tab);
      await expect(banner).toBeVisible();
    }
    await a.reload();
    await unlock(a, admin);
    await expect(banner).toBeVisible();
    await expect(a.getByRole('main')).toContainText('re-key recommended');
    // The Access page's own button (the banner's is the first of the two).
    await a.getByRole('main').getByRole('button', { name: 'Re-key now' }).last().click();
    const again = a.getByRole('dialog', { name: 'Re-key the vault' });
    await again.getByRole('button', { name: 'Re-key now' }).click();
    await expect(again.getByRole('status')).toHaveText('The vault is re-keyed: epoch 3.', {
      timeout: 30_000,
    });
    await again.getByRole('button', { name: 'Done' }).click();
    await expect(banner).toBeHidden();
    await expect(a.getByRole('main')).toContainText('no re-key needed');
    await openTab(a, 'Secrets');
    await expect(banner).toBeHidden();
    assert.equal(
      (await coffer!.read(remaining!.login, projectId, 'production')).DATABASE_URL,
      VALUES.afterRekey,
    );
  });
  adminVisitor.check();
  inviteeVisitor.check();
});

test('audit log: sentences with names, actor once per group, action picker, filters as they change, Clear', async (t) => {
  if (!ready(t) || !adminVisitor || !remaining) return;
  const a = adminVisitor.page;
  await failed(adminVisitor, 'audit', async () => {
    await openTab(a, 'Audit');
    await expectTitle(a, `Audit · Payments · Coffer`);
    const events = a.getByRole('list', { name: 'Audit events' }).getByRole('listitem');
    await expect(events.first()).toBeVisible();
    const times = await a
      .getByRole('main')
      .locator('time')
      .evaluateAll((els) => els.map((el) => el.getAttribute('datetime') ?? ''));
    assert.ok(times.length > 20, `events listed: ${times.length}`);
    assert.deepEqual(times, [...times].sort().reverse(), 'newest first');
    // Times to the second, in the one format of the rows and the time filters.
    const shownTimes = await a.getByRole('main').locator('time').allTextContents();
    for (const shown of shownTimes) assert.match(shown, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    const sentences = async () =>
      (await events.locator('summary .audit-sentence').allTextContents()).map((s) =>
        s.replace(/\s+/g, ' ').trim(),
      );
    const all = await sentences();
    const me = admin.name;
    assert.match(all[0]!, new RegExp(`^${escape(me)} re-keyed the vault \\(key epoch 2 → 3, `));
    for (const sentence of [
      `${me} created DATABASE_URL in staging (v1)`,
      `${me} invited ${invitee.email} as developer`,
      `${me} changed the role of ${invitee.email} (no longer a member) from developer to admin`,
      `${me} granted the project key to ${remaining!.account.name}`,
      `${me} removed ${invitee.email} (no longer a member)`,
      `${remaining!.account.name} accepted the invitation as developer`,
      // The removed invitee: named by the e-mail their member events recorded.
      `${invitee.email} (no longer a member) accepted the invitation as developer`,
    ])
      assert.ok(all.includes(sentence), `"${sentence}" in:\n${all.join('\n')}`);
    assert.ok(!all.some((s) => /\b(user|mem|env)_[0-9a-z]{6,}/i.test(s)), 'no ids in sentences');
    // The actor once per group: shown on the first of their consecutive events, kept for
    // screen readers on the others.
    const actors = await events.evaluateAll((items) =>
      items.map((li) => {
        const actor = li.querySelector('summary .audit-sentence > span')!;
        return {
          name: actor.textContent ?? '',
          shown: !actor.classList.contains('visually-hidden'),
        };
      }),
    );
    actors.forEach((row, i) =>
      assert.equal(row.shown, i === 0 || actors[i - 1]!.name !== row.name, `row ${i}: ${row.name}`),
    );
    assert.ok(actors.filter((r) => !r.shown).length > 10, 'groups of several events');
    await adminPage(a, 'audit');

    // The action is picked from the known actions and applies at once.
    const form = a.getByRole('form', { name: 'Filter the audit log' });
    const action = form.getByRole('combobox', { name: 'Action' });
    await expect(action.getByRole('option', { name: 'Member invited' })).toHaveCount(1);
    await action.selectOption({ label: 'Member invited' });
    await eventually(
      'only invitations',
      sentences,
      (list) => list.length > 0 && list.every((s) => s.startsWith(`${me} invited `)),
    );
    // The invitee, 21 addresses, and two SDK members.
    await expect(events).toHaveCount(24);

    // Expanding shows the event's data.
    const one = events.first();
    const data = one.locator('pre');
    await expect(data).toBeHidden();
    await one.locator('summary').click();
    await expect(data).toBeVisible();
    const json = JSON.parse((await data.textContent()) ?? '{}') as {
      email?: string;
      after?: { role: string; status: string };
    };
    assert.equal(json.after?.status, 'pending');
    assert.match(json.email ?? '', /@example\.test$/);

    // By actor (and any action), as the select changes.
    const remainingName = remaining!.account.name;
    await action.selectOption('');
    await form
      .getByRole('combobox', { name: 'Actor' })
      .selectOption({ label: `${remainingName} (${remaining!.account.email})` });
    await eventually(
      `only ${remainingName}`,
      sentences,
      (list) => list.length > 0 && list.every((s) => s.startsWith(`${remainingName} `)),
    );
    const mine = (await sentences()).join('\n');
    assert.match(mine, /accepted the invitation/);
    assert.doesNotMatch(mine, /re-keyed/);

    // A row's time, typed into From as it is shown: that event and the newer ones.
    await form.getByRole('combobox', { name: 'Actor' }).selectOption('');
    const from = form.getByRole('textbox', { name: 'From' });
    await expect(from).toHaveAttribute('placeholder', 'YYYY-MM-DD HH:MM:SS');
    const cut = shownTimes[10]!;
    await from.fill(cut.slice(0, 13));
    await expect(from).toHaveAttribute('aria-invalid', 'true');
    await from.fill(cut);
    await expect(from).toHaveAttribute('aria-invalid', 'false');
    await eventually(
      `events from ${cut}`,
      () => a.getByRole('main').locator('time').allTextContents(),
      (list) => list.length >= 11 && list.length < shownTimes.length && list.every((x) => x >= cut),
    );
    // A time range past every event: nothing; Clear brings every event back.
    await form.getByRole('combobox', { name: 'Actor' }).selectOption({ index: 1 });
    await from.fill('2099-01-01');
    await expect(a.getByRole('main')).toContainText('No event matches these filters.');
    await form.getByRole('button', { name: 'Clear' }).click();
    await expect(form.getByRole('combobox', { name: 'Actor' })).toHaveValue('');
    await expect(from).toHaveValue('');
    await eventually('every event again', sentences, (list) => list.length > 20);
    await expect(form.getByRole('button', { name: 'Clear' })).toBeDisabled();
  });
  adminVisitor.check();
});

test('accessibility: no serious or critical axe finding on the administration pages', (t) => {
  if (!browser) return serviceMissing(t, CHROMIUM_MISSING);
  assertAdminAccessible(t);
});

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
