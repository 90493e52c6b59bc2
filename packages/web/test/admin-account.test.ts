// My account in the dashboard, across three browsers of one person: the
// sessions list and "Sign out everywhere else", a password change that ends
// the other browser's session, and recovery from the sign-in page with the
// recovery key shown at sign-up, after which the values still decrypt.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
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
import {
  addSecret,
  confirmRecoveryKey,
  createProject,
  fillSignUp,
  newAccount,
  revealedValue,
  reviewAndSave,
  signIn,
} from './support/flows.js';
import { adminPage, adminScreenshots, assertAdminAccessible } from './support/admin.js';

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

const VALUE = 'ledger-signing-key-3a91c07e5b';
const account = newAccount('account');
const changed = `${account.password} changed`;
const recovered = `${account.password} recovered`;

/** The session of this browser ended elsewhere: its next request lands on sign-in. */
async function endedSession(page: Page, next: RegExp) {
  await expect(page.getByRole('heading', { name: 'Sign in to Coffer' })).toBeVisible();
  await expect(page.getByRole('status')).toContainText('Your session ended.');
  assert.match(decodeURIComponent(new URL(page.url()).search), next);
}

const projectTab = (page: Page, name: string) =>
  page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name });

const sessionItems = (page: Page) =>
  page
    .getByRole('main')
    .getByRole('listitem')
    .filter({ hasText: /signed in .* last used/ });

test('sessions, sign out everywhere else, password change, recovery with the recovery key', async (t) => {
  if (!browser || !coffer) return serviceMissing(t, CHROMIUM_MISSING);
  const open = async () => {
    const visitor = await Visitor.open(browser!, coffer!);
    visitor.secret(account.password, changed, recovered, VALUE);
    visitors.push(visitor);
    return visitor;
  };
  const first = await open();
  const second = await open();
  const a = first.page;
  const b = second.page;
  let projectId = '';
  let recoveryKey = '';
  let step = 'setup';
  try {
    await first.goto('/signup');
    recoveryKey = await fillSignUp(a, account);
    for (const v of [first, second]) v.secret(recoveryKey);
    await confirmRecoveryKey(a);
    projectId = await createProject(a, 'Ledger');
    await addSecret(a, 'LEDGER_KEY', VALUE, ['development']);
    await reviewAndSave(a, 1);

    // The second browser signs in too: two sessions, this one marked.
    await second.goto(`/projects/${projectId}`);
    await signIn(b, account);
    await b.waitForURL(new RegExp(`/projects/${projectId}$`));
    step = 'sessions';
    await a
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Account' })
      .click();
    await expect(a.getByRole('heading', { name: 'Account', level: 1 })).toBeVisible();
    await expect(a.getByLabel('Your key fingerprint')).toHaveText(/^[0-9A-F]{8}( [0-9A-F]{8}){4}$/);
    await expect(sessionItems(a)).toHaveCount(2);
    await expect(sessionItems(a).filter({ hasText: 'this session' })).toHaveCount(1);
    await expect(sessionItems(a).filter({ hasText: 'Chrome on Linux' })).toHaveCount(2);
    await adminPage(a, 'account');

    await a.getByRole('button', { name: 'Sign out everywhere else' }).click();
    await expect(sessionItems(a)).toHaveCount(1);
    await expect(sessionItems(a)).toContainText('this session');
    await expect(a.getByRole('button', { name: 'Sign out everywhere else' })).toBeHidden();
    // The other browser's next action (opening Members) returns it to sign-in, keeping the page.
    await projectTab(b, 'Members').click();
    await endedSession(b, /next=\/projects\/[^/]+\/members$/);
    await signIn(b, account);
    await expect(b.getByRole('heading', { name: 'Members' })).toBeVisible();

    // A new password here ends the other session; the old password stops working.
    step = 'password';
    const form = a.getByRole('form', { name: 'Change password' });
    await form.getByLabel('Current password', { exact: true }).fill(account.password);
    await form.getByLabel('New password', { exact: true }).fill(changed);
    await form.getByLabel('Repeat the new password', { exact: true }).fill(changed);
    await form.getByRole('button', { name: 'Change password' }).click();
    await expect(form.getByRole('status')).toHaveText(
      'Password changed. Other sessions were signed out.',
      { timeout: 30_000 },
    );
    await projectTab(b, 'Tokens').click();
    await endedSession(b, /next=\/projects\/[^/]+\/tokens$/);
    await b.getByLabel('E-mail', { exact: true }).fill(account.email);
    await b.getByLabel('Password', { exact: true }).fill(account.password);
    await b.getByRole('button', { name: 'Sign in' }).click();
    await expect(b.getByRole('alert')).toBeVisible({ timeout: 30_000 });
    await expect(b.getByRole('heading', { name: 'Sign in to Coffer' })).toBeVisible();
    await signIn(b, { ...account, password: changed });
    await expect(b.getByRole('heading', { name: 'CI tokens' })).toBeVisible();
    assert.equal(await revealedValueAfter(b, projectId), VALUE);

    // Forgot the password: the recovery key from sign-up sets a new one.
    step = 'recover';
    const third = await open();
    third.secret(recoveryKey);
    const c = third.page;
    await third.goto('/signin');
    await c.getByRole('link', { name: 'Forgot your password?' }).click();
    await expect(c.getByRole('heading', { name: 'Recover your account' })).toBeVisible();
    await c.getByLabel('E-mail', { exact: true }).fill(account.email);
    await c.getByLabel('Recovery key', { exact: true }).fill(recoveryKey);
    await c.getByLabel('New password', { exact: true }).fill(recovered);
    await c.getByLabel('Repeat the new password', { exact: true }).fill(recovered);
    await adminPage(c, 'recover');
    await c.getByRole('button', { name: 'Set the new password' }).click();
    await c.waitForURL(/\/projects$/, { timeout: 30_000 });
    assert.equal(await revealedValueAfter(c, projectId), VALUE);

    // Every other session ended with it; the new password signs in, the old ones do not.
    await a
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Projects' })
      .click();
    await endedSession(a, /next=\/projects$/);
    await assert.rejects(coffer.logIn(account.email, changed));
    const login = await coffer.logIn(account.email, recovered);
    assert.deepEqual(await coffer.read(login, projectId, 'development'), { LEDGER_KEY: VALUE });
    for (const v of [first, second, third]) v.check();
  } catch (error) {
    for (const [i, v] of visitors.entries())
      await adminScreenshots(v.page, `failed-account-${step}-${i}`).catch(() => undefined);
    throw error;
  }
});

/** Opens the project from the projects page and reveals LEDGER_KEY in development. */
async function revealedValueAfter(page: Page, projectId: string): Promise<string> {
  await page
    .getByRole('navigation', { name: 'Main' })
    .getByRole('link', { name: 'Projects' })
    .click();
  await page.getByRole('link', { name: 'Ledger' }).click();
  await page.waitForURL(new RegExp(`/projects/${projectId}$`));
  return revealedValue(page, 'LEDGER_KEY', 'development');
}

test('accessibility: no serious or critical axe finding on the account pages', (t) => {
  if (!browser) return serviceMissing(t, CHROMIUM_MISSING);
  assertAdminAccessible(t);
});
