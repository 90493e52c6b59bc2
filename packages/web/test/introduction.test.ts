// Verified introductions in the dashboard, against a real server process: the
// admin invites on the Members page and gets an introduction link; the invitee
// opens it and accepts; the admin's grant dialog then needs no fingerprint
// comparison. With the invitee's keys replaced in the server's database after
// they accepted (as an attacker with database access would), the grant dialog
// refuses instead of sealing the project key to the attacker.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { generateUserKeys, ready, toBase64url } from '@coffer/sdk';
import type { Browser } from 'playwright-core';
import {
  Visitor,
  hasChromium,
  mainPage,
  serviceMissing,
  startCofferAndBrowser,
  type Coffer,
} from './support/browser.js';
import { expect, type Page } from './support/expect.js';
import { signIn, unlock, type Credentials } from './support/flows.js';
import { invitationToken } from './support/admin.js';
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

const VALUE = 'introduced-and-verified-7d2e';

async function open(): Promise<Visitor> {
  const visitor = await Visitor.open(browser!, coffer!);
  visitors.push(visitor);
  return visitor;
}

/** Opens a page of the dashboard as a signed-in user: a page load drops the keys, so unlock. */
async function visit(page: Page, path: string, account: Credentials): Promise<void> {
  await page.goto(`${coffer!.url}${path}`);
  await unlock(page, account);
}

/** The admin invites on the Members page and reads the introduction link shown once. */
async function inviteInBrowser(
  page: Page,
  admin: Credentials,
  projectId: string,
  email: string,
): Promise<string> {
  await visit(page, `/projects/${projectId}/members`, admin);
  const form = page.getByRole('form', { name: 'Invite a member' });
  await form.getByLabel('Invite by e-mail').fill(email);
  await form.getByRole('button', { name: 'Invite' }).click();
  const link = form.getByLabel('Introduction link');
  await expect(link).toBeVisible();
  const value = await link.inputValue();
  // The secret, then the project's chain root (its identity, from the inviter rather than the server).
  assert.match(value, /\/invite\?member=mbr_[0-9A-Za-z]+#k=[A-Za-z0-9_-]{43}&r=[A-Za-z0-9_-]{43}$/);
  return value;
}

/** The invitee (signed up with the e-mail's token) opens the introduction link and accepts. */
async function acceptInBrowser(invitee: Seeded, link: string): Promise<void> {
  const visitor = await open();
  const page = visitor.page;
  await page.goto(link);
  // The secret after # is taken out of the address bar at once.
  await expect(
    page.getByRole('heading', { name: 'You are invited to a Coffer project' }),
  ).toBeVisible();
  assert.ok(!page.url().includes('#k='), `the address bar still holds the secret: ${page.url()}`);
  await page.getByRole('link', { name: 'Sign in' }).click();
  await signIn(page, invitee);
  await expect(page.getByText('introduction link').first()).toBeVisible();
  await page.getByRole('button', { name: 'Accept' }).click();
  // The link named the project's root: the fingerprint shown is the inviter's, not the server's word.
  const joined = page.getByRole('status').filter({ hasText: 'You joined' });
  await expect(joined.getByLabel('Project fingerprint')).toHaveText(
    /^[0-9A-F]{8}( [0-9A-F]{8}){4}$/,
  );
  await expect(joined).toContainText('It matches the one in');
  await mainPage(page, 'joined-project-fingerprint');
  await joined.getByRole('link', { name: /^Open / }).click();
  await expect(page.getByText('Waiting for the project key')).toBeVisible();
  await visitor.check();
}

async function grantDialog(page: Page, admin: Credentials, projectId: string, email: string) {
  await visit(page, `/projects/${projectId}/access`, admin);
  await page.getByRole('button', { name: `Grant the key to ${email}` }).click();
  return page.getByRole('dialog');
}

test('an introduced member is granted without a fingerprint comparison', async (t) => {
  if (!browser || !coffer) return serviceMissing(t, 'Chromium');
  const admin = await seedAccount(coffer, 'intro-admin');
  const projectId = await seedProject(admin, 'Introduced', { staging: { API_TOKEN: VALUE } });
  const adminVisitor = await open();
  adminVisitor.secret(VALUE);
  await adminVisitor.page.goto(`${coffer.url}/signin`);
  await signIn(adminVisitor.page, admin);

  const inviteeEmail = `intro-${Date.now()}@example.test`;
  const link = await inviteInBrowser(adminVisitor.page, admin, projectId, inviteeEmail);
  const invitee = await seedAccount(
    coffer,
    'intro-invitee',
    await invitationToken(coffer, inviteeEmail),
    inviteeEmail,
  );
  await acceptInBrowser(invitee, link);

  const dialog = await grantDialog(adminVisitor.page, admin, projectId, inviteeEmail);
  await expect(dialog.getByRole('status')).toContainText('accepted with the introduction link');
  await dialog.getByRole('button', { name: 'Grant the key', exact: true }).click();
  await expect(adminVisitor.page.getByRole('dialog')).toHaveCount(0);
  await adminVisitor.check();

  const login = await coffer.logIn(invitee.email, invitee.password);
  assert.deepEqual(await coffer.read(login, projectId, 'staging'), { API_TOKEN: VALUE });
});

test('keys substituted in the database after the introduction: the grant dialog refuses', async (t) => {
  if (!browser || !coffer) return serviceMissing(t, 'Chromium');
  const admin = await seedAccount(coffer, 'subst-admin');
  const projectId = await seedProject(admin, 'Substituted', { staging: { API_TOKEN: VALUE } });
  const adminVisitor = await open();
  adminVisitor.secret(VALUE);
  await adminVisitor.page.goto(`${coffer.url}/signin`);
  await signIn(adminVisitor.page, admin);

  const inviteeEmail = `subst-${Date.now()}@example.test`;
  const link = await inviteInBrowser(adminVisitor.page, admin, projectId, inviteeEmail);
  const invitee = await seedAccount(
    coffer,
    'subst-invitee',
    await invitationToken(coffer, inviteeEmail),
    inviteeEmail,
  );
  await acceptInBrowser(invitee, link);

  // Behind the server's back: the invitee's public keys become an attacker's.
  await ready();
  const attacker = generateUserKeys();
  const db = openSqlite(`${coffer.dataDir}/coffer.db`);
  try {
    const changed = db
      .prepare('update users set public_key = ?, signing_public_key = ? where id = ?')
      .run(
        toBase64url(attacker.encryption.publicKey),
        toBase64url(attacker.signing.publicKey),
        invitee.id,
      );
    assert.equal(changed.changes, 1);
  } finally {
    db.close();
  }

  const dialog = await grantDialog(adminVisitor.page, admin, projectId, inviteeEmail);
  await expect(dialog.getByRole('alert')).toContainText('Do not grant.');
  await expect(dialog.getByRole('button', { name: 'Grant the key', exact: true })).toBeDisabled();
  // No fingerprint field is offered either: comparing the attacker's fingerprint must not help.
  await expect(dialog.getByLabel(/Fingerprint as told by/)).toHaveCount(0);
  await adminVisitor.check();

  // Nothing was granted: the invitee still waits for the key.
  const login = await coffer.logIn(invitee.email, invitee.password);
  await assert.rejects(coffer.read(login, projectId, 'staging'));
});
