// Several people on one project, each in a browser context of their own: a
// version conflict between two writers, an invitation from e-mail link to a
// readable value (and one declined), a viewer who never sees a value, and a
// session ended elsewhere.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import {
  acceptInvitation,
  getSecret,
  grantMember,
  inviteMember,
  listMembers,
  openVault,
  revokeSession,
  sessions,
} from '@coffer/sdk';
import {
  Visitor,
  assertAccessible,
  hasChromium,
  mainPage,
  screenshots,
  serviceMissing,
  startCofferAndBrowser,
  type Coffer,
  CHROMIUM_MISSING,
} from './support/browser.js';
import { expect, expectTitle } from './support/expect.js';
import {
  cell,
  confirmRecoveryKey,
  editCell,
  fillSignUp,
  grid,
  newAccount,
  revealedValue,
  signIn,
  unlock,
} from './support/flows.js';
import { seedAccount, seedProject, type Seeded } from './support/seed.js';

const VALUES = {
  staging: {
    PAYMENT_API_KEY: 'pk_stg_0a7f3e2d1c9b',
    WEBHOOK_SECRET: 'whsec_stg_5e8d7c6b5a4f',
    LOG_LEVEL: 'info',
  },
  production: {
    PAYMENT_API_KEY: 'pk_live_9b8c7d6e5f4a',
    WEBHOOK_SECRET: 'whsec_live_1f2e3d4c5b6a',
  },
};
const ALL_VALUES = Object.values(VALUES).flatMap((v) => Object.values(v));

let browser: Browser | undefined;
let coffer: Coffer;
let admin: Seeded;
let projectId: string;
const visitors: Visitor[] = [];

before(async () => {
  if (!hasChromium()) return;
  [coffer, browser] = await startCofferAndBrowser();
  admin = await seedAccount(coffer, 'admin');
  projectId = await seedProject(admin, 'Payments', VALUES);
});
after(async () => {
  for (const visitor of visitors) await visitor.close().catch(() => undefined);
  await browser?.close();
  await coffer?.stop();
});

async function open(
  options: Parameters<typeof Visitor.open>[2] = {},
  ...secrets: string[]
): Promise<Visitor> {
  const visitor = await Visitor.open(browser!, coffer, options);
  visitor.secret(...ALL_VALUES, ...secrets);
  visitors.push(visitor);
  return visitor;
}

/** Signs in at the project's URL (sign-in first, then back there). */
async function signedInAt(visitor: Visitor, account: { email: string; password: string }) {
  await visitor.goto(`/projects/${projectId}`);
  await visitor.page.waitForURL(/\/signin\?next=/);
  await signIn(visitor.page, account);
  await visitor.page.waitForURL(new RegExp(`/projects/${projectId}$`));
  await expect(grid(visitor.page)).toHaveAttribute('aria-busy', 'false');
}

const secretOf = async (environment: string, name: string) => {
  const vault = await openVault(admin.client, projectId, admin.keys);
  try {
    return await getSecret({ client: admin.client, projectId, keys: vault }, environment, name);
  } finally {
    vault.forget();
  }
};

async function guarded(label: string, visitors: Visitor[], body: () => Promise<void>) {
  try {
    await body();
    for (const visitor of visitors) visitor.check();
  } catch (error) {
    for (const [i, visitor] of visitors.entries())
      await screenshots(visitor.page, `failed-${label}-${i}`).catch(() => undefined);
    throw error;
  }
}

test('version conflict: the second writer sees the first one’s value; Keep mine and Keep theirs', async (t) => {
  if (!browser) return serviceMissing(t, CHROMIUM_MISSING);
  const mine = { key: 'pk_stg_second-writer-77', hook: 'whsec_stg_second-writer-88' };
  const theirs = { key: 'pk_stg_first-writer-11', hook: 'whsec_stg_first-writer-22' };
  const secrets = [...Object.values(mine), ...Object.values(theirs), admin.password];
  const [first, second] = await Promise.all([open({}, ...secrets), open({}, ...secrets)]);
  await guarded('conflict', [first, second], async () => {
    await signedInAt(first, admin);
    await signedInAt(second, admin);
    const base = (await secretOf('staging', 'PAYMENT_API_KEY')).version;

    const stage = async (visitor: Visitor, values: { key: string; hook: string }) => {
      const { page } = visitor;
      for (const [name, value] of [
        ['PAYMENT_API_KEY', values.key],
        ['WEBHOOK_SECRET', values.hook],
      ] as const) {
        await editCell(page, name, 'staging', value);
      }
      await expect(page.getByRole('region', { name: 'Pending changes' })).toContainText(
        /2 unsaved changes in \w+ —/,
      );
    };
    await stage(first, theirs);
    await stage(second, mine);

    // The first saves.
    await first.page.getByRole('button', { name: 'Review' }).click();
    const firstReview = first.page.getByRole('dialog', { name: 'Review changes' });
    await firstReview.getByRole('button', { name: 'Save 2 changes' }).click();
    await expect(firstReview).toBeHidden({ timeout: 20_000 });
    assert.equal((await secretOf('staging', 'PAYMENT_API_KEY')).version, base + 1);

    // The second's save is refused as a whole, each secret with both values.
    const page = second.page;
    await page.getByRole('button', { name: 'Review' }).click();
    const review = page.getByRole('dialog', { name: 'Review changes' });
    await review.getByRole('button', { name: 'Save 2 changes' }).click();
    const conflicts = review.getByRole('region', { name: 'Changed by someone else meanwhile' });
    await expect(conflicts).toBeVisible({ timeout: 20_000 });
    const keyConflict = conflicts.locator('.conflict').filter({ hasText: 'PAYMENT_API_KEY' });
    const hookConflict = conflicts.locator('.conflict').filter({ hasText: 'WEBHOOK_SECRET' });
    await expect(keyConflict).toContainText(`is now at version ${base + 1}`);
    const masked = (await conflicts.textContent()) ?? '';
    for (const value of [theirs.key, mine.key, theirs.hook, mine.hook])
      assert.ok(!masked.includes(value), 'conflict values stay masked until revealed');
    await review.getByRole('button', { name: 'Reveal all' }).click();
    await expect(keyConflict).toContainText(theirs.key);
    await expect(keyConflict).toContainText(mine.key);
    await expect(hookConflict).toContainText(theirs.hook);
    await expect(hookConflict).toContainText(mine.hook);
    assert.equal((await secretOf('staging', 'PAYMENT_API_KEY')).value, theirs.key);

    await keyConflict.getByRole('button', { name: 'Keep mine' }).click();
    await hookConflict.getByRole('button', { name: 'Keep theirs' }).click();
    await expect(conflicts).toBeHidden();
    await review.getByRole('button', { name: 'Save 1 change' }).click();
    await expect(review).toBeHidden({ timeout: 20_000 });

    const key = await secretOf('staging', 'PAYMENT_API_KEY');
    assert.equal(key.value, mine.key);
    assert.equal(key.version, base + 2);
    const hook = await secretOf('staging', 'WEBHOOK_SECRET');
    assert.equal(hook.value, theirs.hook);
    assert.equal(hook.version, base + 1);
    assert.equal(await revealedValue(page, 'WEBHOOK_SECRET', 'staging'), theirs.hook);
  });
});

let invitee: { visitor: Visitor; email: string; password: string } | undefined;

test('invitation: e-mail link, sign-up with the token, accept, wait for the key, granted, read; decline another', async (t) => {
  if (!browser) return serviceMissing(t, CHROMIUM_MISSING);
  const account = newAccount('invitee');
  const visitor = await open({}, account.password);
  await guarded('invitation', [visitor], async () => {
    const { page } = visitor;
    await inviteMember(admin.client, projectId, { email: account.email, role: 'developer' });
    const link = await coffer.invitationLink(account.email);
    assert.ok(link.startsWith(`${coffer.url}/invite?token=`), link);

    await page.goto(link);
    await expect(
      page.getByRole('heading', { name: 'You are invited to a Coffer project' }),
    ).toBeVisible();
    await page.getByRole('button', { name: 'Create an account' }).click();
    const recoveryKey = await fillSignUp(page, account);
    visitor.secret(recoveryKey);
    await confirmRecoveryKey(page);

    // The invitation: project, role, inviter.
    const card = page.getByRole('listitem').filter({ hasText: 'Payments' });
    await expect(card).toContainText(admin.name);
    await expect(card).toContainText(admin.email);
    await expect(card).toContainText('developer');
    await mainPage(page, 'invitation');
    await card.getByRole('button', { name: 'Accept' }).click();
    // Accepted, the page is one of the app's: its header leads on.
    await expect(page.getByRole('link', { name: 'Open Payments' })).toBeVisible();
    await expect(page.getByRole('banner').getByRole('navigation', { name: 'Main' })).toBeVisible();
    await expectTitle(page, 'Your invitation · Coffer');
    await mainPage(page, 'invitation-accepted');
    await page.getByRole('link', { name: 'Open Payments' }).click();
    await page.waitForURL(new RegExp(`/projects/${projectId}$`));

    // Names, but no values until an admin grants the key.
    await expect(grid(page)).toHaveAttribute('aria-busy', 'false');
    const waiting = page.getByRole('status').filter({ hasText: 'Waiting for the project key' });
    await expect(waiting).toBeVisible();
    await expect(grid(page).getByRole('rowheader', { name: /^PAYMENT_API_KEY/ })).toBeVisible();
    const fingerprint = ((await waiting.locator('p.mono').textContent()) ?? '').trim();
    assert.ok(fingerprint.length > 10, `a fingerprint is shown: ${fingerprint}`);
    await mainPage(page, 'awaiting-grant');

    const members = await listMembers(admin.client, projectId, { per_page: 100 });
    const member = members.data.find((m) => m.user.email === account.email)!;
    assert.equal(member.status, 'active');
    const vault = await openVault(admin.client, projectId, admin.keys);
    await grantMember(vault, member.user.id, { expectedFingerprint: fingerprint });
    vault.forget();

    await page.reload();
    await unlock(page, account);
    await expect(waiting).toBeHidden();
    assert.equal(
      await revealedValue(page, 'PAYMENT_API_KEY', 'production'),
      VALUES.production.PAYMENT_API_KEY,
    );

    // A second invitation, declined from the invitations page.
    const legacy = await seedProject(admin, 'Payments Legacy', {});
    await inviteMember(admin.client, legacy, { email: account.email, role: 'developer' });
    // The list the dashboard holds is fresh for a few seconds: a reload shows the new one.
    await visitor.goto('/invitations');
    await unlock(page, account);
    const legacyCard = page.getByRole('listitem').filter({ hasText: 'Payments Legacy' });
    await expect(legacyCard).toBeVisible();
    await mainPage(page, 'invitations');
    await legacyCard.getByRole('button', { name: 'Decline' }).click();
    await expect(page.getByText('No pending invitations.')).toBeVisible();
    const legacyMembers = await listMembers(admin.client, legacy, { per_page: 100 });
    assert.ok(
      !legacyMembers.data.some((m) => m.user.email === account.email && m.status !== 'revoked'),
      'the declined invitation is no membership',
    );
    invitee = { visitor, email: account.email, password: account.password };
  });
});

test('viewer: names and "no access", no reveal, copy or edit, no value anywhere in the page', async (t) => {
  if (!browser) return serviceMissing(t, CHROMIUM_MISSING);
  const email = newAccount('viewer').email;
  const invited = await inviteMember(admin.client, projectId, { email, role: 'viewer' });
  const link = await coffer.invitationLink(email);
  const token = new URL(link).searchParams.get('token')!;
  const viewer = await seedAccount(coffer, 'viewer-x', token, email);
  await acceptInvitation(viewer.client, invited.id, token);
  const visitor = await open({}, viewer.password);
  await guarded('viewer', [visitor], async () => {
    const { page } = visitor;
    await signedInAt(visitor, viewer);
    await expect(page.getByText('You are a viewer')).toBeVisible();
    await expect(cell(page, 'PAYMENT_API_KEY', 'production')).toContainText('no access');
    await expect(cell(page, 'LOG_LEVEL', 'staging')).toContainText('no access');
    await expect(cell(page, 'LOG_LEVEL', 'production')).toContainText('missing');
    await expect(
      page.getByRole('button', { name: /^(Reveal|Copy|Edit|Delete|Undo) .* in / }),
    ).toHaveCount(0);
    await expect(page.getByRole('button', { name: /^Add (a )?secret$/ })).toHaveCount(0);
    await expect(page.getByRole('button', { name: /as \.env text$/ })).toHaveCount(0);
    await expect(page.getByRole('button', { name: 'Compare' })).toHaveCount(0);
    // Keys do nothing either.
    await cell(page, 'PAYMENT_API_KEY', 'staging').click();
    await page.keyboard.press('Enter');
    await page.keyboard.press('Space');
    await expect(page.getByRole('textbox', { name: /^Value of / })).toHaveCount(0);
    const content = await page.content();
    for (const value of ALL_VALUES) assert.ok(!content.includes(value), `${value} not in the page`);
    await mainPage(page, 'viewer-grid');

    // Session end: every session of the viewer is revoked elsewhere (the SDK's own last).
    const list = await sessions(viewer.client, { per_page: 100 });
    for (const session of list.data.filter((s) => !s.current))
      await revokeSession(viewer.client, session.id);
    // The next action that asks the server (the members list is not cached yet).
    await page
      .getByRole('navigation', { name: 'Project' })
      .getByRole('link', { name: 'Members' })
      .click();
    await page.waitForURL(/\/signin\?next=/);
    const next = new URL(page.url()).searchParams.get('next');
    assert.equal(next, `/projects/${projectId}/members`);
    await expect(page.getByText('Your session ended.')).toBeVisible();
    await signIn(page, viewer);
    await page.waitForURL(new RegExp(`/projects/${projectId}/members$`));
    await expect(page.getByRole('heading', { name: 'Members' })).toBeVisible();
  });
});

test('session end: signing out in another context sends the next action to sign-in, and back', async (t) => {
  if (!browser || !invitee) return serviceMissing(t, CHROMIUM_MISSING);
  const { visitor } = invitee;
  await guarded('session-end', [visitor], async () => {
    const { page } = visitor;
    // The same person's other browser session, ended from the API.
    const login = await coffer.logIn(invitee!.email, invitee!.password);
    const list = await sessions(login.client, { per_page: 100 });
    for (const session of list.data.filter((s) => !s.current))
      await revokeSession(login.client, session.id);
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Projects' })
      .click();
    await page.waitForURL(/\/signin\?next=%2Fprojects$/);
    await signIn(page, invitee!);
    await page.waitForURL(/\/projects$/);
    await expect(page.getByRole('link', { name: 'Payments', exact: true })).toBeVisible();
  });
});

test('accessibility: no serious or critical axe finding on the team pages', (t) => {
  if (!browser) return serviceMissing(t, CHROMIUM_MISSING);
  assertAccessible(t);
});
