// The signed membership chain in the dashboard, against a real server process
// whose database is changed behind its back: role changes and removals made on
// the Members page are signed statements (read back and verified through the
// SDK); Access shows the project's fingerprint and who signed whom in; a
// project from before chains (its statements deleted) shows a banner and is
// signed from Access; a grant planted by a user the server alone promoted to
// admin is refused in the member's grid, in words and without values.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  createGrant,
  getMembershipChain,
  openVault,
  ready,
  verifyMembershipChain,
  type MembershipState,
  type MembershipStatement,
} from '@coffer/sdk';
import type { Browser } from 'playwright-core';
import {
  Visitor,
  hasChromium,
  serviceMissing,
  startCofferAndBrowser,
  type Coffer,
  CHROMIUM_MISSING,
} from './support/browser.js';
import { expect, type Page } from './support/expect.js';
import { cell, grid, signIn, unlock, type Credentials } from './support/flows.js';
import { adminPage, assertAdminAccessible, bodyRows, openTab, sdkMember } from './support/admin.js';
import { seedAccount, seedProject, type Seeded } from './support/seed.js';
import { openSqlite } from '../../server/src/db/sqlite-driver.js';

let browser: Browser | undefined;
let coffer: Coffer | undefined;
const visitors: Visitor[] = [];

before(async () => {
  if (!hasChromium()) return;
  [coffer, browser] = await startCofferAndBrowser();
});
after(async () => {
  for (const visitor of visitors) await visitor.close().catch(() => undefined);
  await browser?.close();
  await coffer?.stop();
});

const VALUE = 'chain-protected-value-41c9';

async function open(): Promise<Visitor> {
  const visitor = await Visitor.open(browser!, coffer!);
  visitor.secret(VALUE);
  visitors.push(visitor);
  return visitor;
}

/** Signs in at `path` (a page load drops the keys: sign-in, then unlock if asked). */
async function signedIn(account: Credentials, path: string): Promise<Visitor> {
  const visitor = await open();
  await visitor.goto('/signin');
  await signIn(visitor.page, account);
  await visit(visitor.page, path, account);
  return visitor;
}

async function visit(page: Page, path: string, account: Credentials): Promise<void> {
  await page.goto(`${coffer!.url}${path}`);
  await unlock(page, account);
}

const login = (account: Seeded) => coffer!.logIn(account.email, account.password);

/** The project's chain as the server serves it, verified by the SDK (throws if it does not verify). */
async function chainOf(
  account: Seeded,
  projectId: string,
): Promise<{ statements: MembershipStatement[]; state: MembershipState }> {
  await ready();
  const { statements } = await getMembershipChain((await login(account)).client, projectId);
  return { statements, state: verifyMembershipChain(statements, projectId) };
}

function database<T>(run: (db: ReturnType<typeof openSqlite>) => T): T {
  const db = openSqlite(`${coffer!.dataDir}/coffer.db`);
  try {
    return run(db);
  } finally {
    db.close();
  }
}

test('a role change and a removal on the Members page are signed; Access shows the fingerprint', async (t) => {
  if (!browser || !coffer) return serviceMissing(t, 'Chromium');
  const admin = await seedAccount(coffer, 'chain-admin');
  const projectId = await seedProject(admin, 'Chained', { staging: { API_TOKEN: VALUE } });
  const adminLogin = await login(admin);
  const [dev, gone] = await Promise.all([
    sdkMember(coffer, adminLogin, projectId, 'chain-dev', 'developer'),
    sdkMember(coffer, adminLogin, projectId, 'chain-gone', 'developer'),
  ]);
  const before = await chainOf(admin, projectId);
  assert.deepEqual(
    before.statements.map((s) => s.kind),
    ['root', 'add', 'add'],
  );

  const visitor = await signedIn(admin, `/projects/${projectId}/members`);
  const page = visitor.page;
  // A chained project: no banner.
  await expect(bodyRows(page).filter({ hasText: dev.account.email })).toBeVisible();
  await expect(page.getByText('no signed membership chain yet')).toBeHidden();

  const row = bodyRows(page).filter({ hasText: dev.account.email });
  await row.getByLabel(`Role of ${dev.account.email}`).selectOption('admin');
  await expect(row.getByRole('status')).toContainText(
    "Role changed, signed in the project's membership chain.",
  );
  const promoted = await chainOf(admin, projectId);
  assert.equal(promoted.state.length, 4);
  const role = promoted.statements[3]!;
  assert.equal(role.kind, 'role');
  assert.equal(role.user_id, dev.login.user.id);
  assert.equal(role.role, 'admin');
  assert.equal(role.signer_id, admin.id);
  assert.equal(promoted.state.members.get(dev.login.user.id)?.role, 'admin');
  await adminPage(page, 'members-signed');

  await bodyRows(page)
    .filter({ hasText: gone.account.email })
    .getByRole('button', { name: `Remove ${gone.account.email}` })
    .click();
  await page
    .getByRole('dialog', { name: `Remove ${gone.account.name}?` })
    .getByRole('button', { name: 'Remove member' })
    .click();
  const rekey = page.getByRole('dialog', { name: 'Re-key the vault' });
  await rekey.getByRole('button', { name: 'Later' }).click();
  await expect(rekey).toBeHidden();
  await expect(
    page.getByRole('status').filter({ hasText: `${gone.account.name} was removed` }),
  ).toContainText("signed in the project's membership chain");
  const removed = await chainOf(admin, projectId);
  assert.equal(removed.state.length, 5);
  const removal = removed.statements[4]!;
  assert.equal(removal.kind, 'remove');
  assert.equal(removal.user_id, gone.login.user.id);
  assert.equal(removal.signer_id, admin.id);
  assert.equal(removed.state.members.has(gone.login.user.id), false);
  // The chain's root is unchanged by later statements: the project keeps its fingerprint.
  assert.equal(removed.state.fingerprint, before.state.fingerprint);

  // Access: the fingerprint the SDK computes from the verified chain, and the statements.
  await openTab(page, 'Access');
  await expect(page.getByLabel('Project fingerprint')).toHaveText(removed.state.fingerprint);
  const statements = page.getByRole('list', { name: 'Signed membership statements' });
  await expect(statements.getByRole('listitem')).toHaveCount(5);
  const items = (await statements.getByRole('listitem').allTextContents()).map((s) =>
    s.replace(/\s+/g, ' '),
  );
  const adminName = `${admin.name} (${admin.email})`;
  assert.match(items[0]!, new RegExp(`^${escape(adminName)} created the chain, as admin`));
  assert.match(items[3]!, new RegExp(`made ${escape(dev.account.name)} .* admin`));
  assert.ok(items[4]!.startsWith(`${adminName} removed `), items[4]);
  await adminPage(page, 'access-chain');
  visitor.check();
});

test('a project from before chains: the banner, then the admin signs its membership in Access', async (t) => {
  if (!browser || !coffer) return serviceMissing(t, 'Chromium');
  const admin = await seedAccount(coffer, 'legacy-admin');
  const projectId = await seedProject(admin, 'Legacy', { staging: { API_TOKEN: VALUE } });
  const adminLogin = await login(admin);
  const dev = await sdkMember(coffer, adminLogin, projectId, 'legacy-dev', 'developer');
  const viewer = await sdkMember(coffer, adminLogin, projectId, 'legacy-viewer', 'viewer');
  // As if created before chains: no statement (the browser has not seen the chain either).
  const deleted = database(
    (db) =>
      db.prepare('delete from membership_statements where project_id = ?').run(projectId).changes,
  );
  assert.equal(Number(deleted), 2);
  assert.deepEqual((await getMembershipChain(adminLogin.client, projectId)).statements, []);

  const visitor = await signedIn(admin, `/projects/${projectId}`);
  const page = visitor.page;
  const banner = page.getByRole('status').filter({ hasText: 'no signed membership chain yet' });
  await expect(banner).toBeVisible();
  // Values still open (accepted with a warning): the grid works.
  await expect(grid(page)).toHaveAttribute('aria-busy', 'false');
  await adminPage(page, 'chain-banner');
  // Dismissed, it stays away while in the project…
  await banner.getByRole('button', { name: 'Dismiss' }).click();
  await expect(banner).toBeHidden();
  await openTab(page, 'Members');
  await expect(banner).toBeHidden();
  // …and is back on the next visit of the project.
  await visit(page, `/projects/${projectId}`, admin);
  await expect(banner).toBeVisible();
  await banner.getByRole('link', { name: 'Sign it in Access' }).click();
  await page.waitForURL(/\/access$/);

  await expect(page.getByLabel('Project fingerprint')).toHaveCount(0);
  await page.getByRole('button', { name: 'Sign membership' }).click();
  const dialog = page.getByRole('dialog', { name: "Sign the project's membership" });
  const holders = dialog.getByRole('table').getByRole('row');
  // The header, the admin and the developer: a viewer holds no key and is not listed.
  await expect(holders).toHaveCount(3);
  const devRow = holders.filter({ hasText: dev.account.email });
  await expect(devRow).toContainText('developer');
  await expect(devRow).toContainText(dev.fingerprint);
  await expect(devRow).toContainText('first seen now');
  await expect(holders.filter({ hasText: admin.email })).toContainText('you');
  assert.equal(await holders.filter({ hasText: viewer.account.email }).count(), 0);
  await expect(dialog).toContainText('You have not verified the keys of');
  await adminPage(page, 'sign-chain-dialog');
  await dialog.getByRole('button', { name: 'Sign membership' }).click();
  await expect(dialog).toBeHidden({ timeout: 20_000 });

  const signed = await chainOf(admin, projectId);
  assert.deepEqual(
    signed.statements.map((s) => [s.kind, s.user_id, s.role, s.signer_id]),
    [
      ['root', admin.id, 'admin', admin.id],
      ['add', dev.login.user.id, 'developer', admin.id],
    ],
  );
  await expect(page.getByLabel('Project fingerprint')).toHaveText(signed.state.fingerprint);
  await expect(
    page.getByRole('list', { name: 'Signed membership statements' }).getByRole('listitem'),
  ).toHaveCount(2);
  await expect(banner).toBeHidden();
  // The developer's client opens the vault against the new chain.
  const devVault = await openVault(dev.login.client, projectId, dev.login.keys);
  assert.equal(devVault.projectFingerprint, signed.state.fingerprint);
  devVault.forget();
  visitor.check();
});

test("a grant planted by a user the server alone made admin: the member's grid refuses in words", async (t) => {
  if (!browser || !coffer) return serviceMissing(t, 'Chromium');
  const admin = await seedAccount(coffer, 'plant-admin');
  const projectId = await seedProject(admin, 'Planted', { staging: { API_TOKEN: VALUE } });
  const adminLogin = await login(admin);
  const [mallory, member] = await Promise.all([
    sdkMember(coffer, adminLogin, projectId, 'plant-mallory', 'developer'),
    sdkMember(coffer, adminLogin, projectId, 'plant-member', 'developer'),
  ]);

  // Behind the chain's back: the server makes Mallory admin (no signed statement), and
  // Mallory's signature replaces the admin's on the member's grant (the real project
  // key: were the grant accepted, the values would show).
  await ready();
  const vault = await openVault(mallory.login.client, projectId, mallory.login.keys);
  const { key, epoch } = vault.projectKey();
  const planted = createGrant({
    key,
    kind: 'project_key',
    projectId,
    epoch,
    recipientId: member.login.user.id,
    recipientPublicKey: member.login.keys.encryption.publicKey,
    granterId: mallory.login.user.id,
    granterSigningSecretKey: mallory.login.keys.signing.secretKey,
  });
  vault.forget();
  database((db) => {
    const promoted = db
      .prepare("update members set role = 'admin' where project_id = ? and user_id = ?")
      .run(projectId, mallory.login.user.id);
    assert.equal(Number(promoted.changes), 1);
    const replaced = db
      .prepare(
        'update vault_grants set sealed_key = ?, signature = ?, granter_id = ? where project_id = ? and recipient_id = ? and epoch = ?',
      )
      .run(
        planted.sealed_key,
        planted.signature,
        mallory.login.user.id,
        projectId,
        member.login.user.id,
        epoch,
      );
    assert.equal(Number(replaced.changes), 1);
  });
  const chain = await chainOf(admin, projectId);
  assert.equal(chain.state.members.get(mallory.login.user.id)?.role, 'developer');

  const visitor = await signedIn(member.account, `/projects/${projectId}`);
  const page = visitor.page;
  const refusal = page.getByRole('main').getByRole('alert');
  await expect(refusal).toContainText(
    "Your project key was granted by someone the project's signed membership chain does not show as an admin",
  );
  // The SDK's account names who signed.
  await expect(refusal).toContainText(mallory.account.email);
  await expect(cell(page, 'API_TOKEN', 'staging')).toHaveCount(0);
  assert.ok(!(await page.content()).includes(VALUE), 'the value is not on the page');
  await adminPage(page, 'planted-grant-refused');
  visitor.check();
});

test('accessibility: no serious or critical axe finding on the membership chain screens', (t) => {
  if (!browser) return serviceMissing(t, CHROMIUM_MISSING);
  assertAdminAccessible(t);
});

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
