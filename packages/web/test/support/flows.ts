// What a person does in the dashboard, step by step, through roles and labels
// (what a screen reader announces), never CSS selectors into the app's markup.
import assert from 'node:assert/strict';
import { expect, type Page } from './expect.js';
import { emailFor, type Visitor } from './browser.js';

export interface Account {
  name: string;
  email: string;
  password: string;
}

export type Credentials = Pick<Account, 'email' | 'password'>;

export const newAccount = (prefix: string): Account => ({
  name: `${prefix[0]!.toUpperCase()}${prefix.slice(1)} Tester`,
  email: emailFor(prefix),
  password: `correct horse battery ${Math.random().toString(36).slice(2, 8)}`,
});

/** Fills the sign-up form (at /signup or the invitation's) and waits for the recovery key. */
export async function fillSignUp(page: Page, account: Account): Promise<string> {
  await page.getByLabel('Name', { exact: true }).fill(account.name);
  await page.getByLabel('E-mail', { exact: true }).fill(account.email);
  await page.getByLabel('Password', { exact: true }).fill(account.password);
  await page.getByLabel('Repeat password', { exact: true }).fill(account.password);
  await page.getByRole('button', { name: 'Create account' }).click();
  const key = page.getByLabel('Recovery key', { exact: true });
  await expect(key).toBeVisible({ timeout: 30_000 });
  return (await key.textContent()) ?? '';
}

/** Confirms the recovery key is stored (Continue is disabled until then) and goes on. */
export async function confirmRecoveryKey(page: Page): Promise<void> {
  const next = page.getByRole('button', { name: 'Continue' });
  await expect(next).toBeDisabled();
  await page.getByLabel('I have stored my recovery key somewhere safe').check();
  await expect(next).toBeEnabled();
  await next.click();
}

export async function signUp(visitor: Visitor, account: Account): Promise<void> {
  await visitor.goto('/signup');
  const recoveryKey = await fillSignUp(visitor.page, account);
  assert.ok(recoveryKey.length > 20, `a recovery key is shown: ${recoveryKey}`);
  await confirmRecoveryKey(visitor.page);
  await expect(visitor.page.getByRole('heading', { name: 'Projects', level: 1 })).toBeVisible();
}

export async function signIn(page: Page, account: Credentials): Promise<void> {
  await expect(page.getByRole('heading', { name: 'Sign in to Coffer' })).toBeVisible();
  await page.getByLabel('E-mail', { exact: true }).fill(account.email);
  await page.getByLabel('Password', { exact: true }).fill(account.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Sign in to Coffer' })).toBeHidden({
    timeout: 30_000,
  });
}

export async function unlock(page: Page, account: Credentials): Promise<void> {
  await expect(page.getByRole('heading', { name: 'Unlock Coffer' })).toBeVisible();
  await page.getByLabel('Password', { exact: true }).fill(account.password);
  await page.getByRole('button', { name: 'Unlock' }).click();
  await expect(page.getByRole('heading', { name: 'Unlock Coffer' })).toBeHidden({
    timeout: 30_000,
  });
}

/** Creates a project from the projects page; returns its id (from the URL it opens). */
export async function createProject(page: Page, name: string): Promise<string> {
  await page
    .getByRole('button', { name: /^(New project|Create a project)$/ })
    .first()
    .click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  await dialog.getByLabel('Name', { exact: true }).fill(name);
  await dialog.getByRole('button', { name: 'Create project' }).click();
  await page.waitForURL(/\/projects\/[^/]+$/);
  await expect(page.getByRole('heading', { name, level: 1 })).toBeVisible();
  await expect(grid(page)).toHaveAttribute('aria-busy', 'false');
  return new URL(page.url()).pathname.split('/')[2]!;
}

export const grid = (page: Page) => page.getByRole('grid');
/** The environments of a new project, in the grid's column order. */
export const ENVIRONMENTS = ['development', 'staging', 'production'];

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A cell as a screen reader finds it: the row whose header is the name, the
 * column of the environment (cells are named by their headers, not a label).
 */
export const cell = (page: Page, name: string, environment: string, columns = ENVIRONMENTS) =>
  grid(page)
    .getByRole('row')
    .filter({ has: page.getByRole('rowheader', { name: new RegExp(`^${escape(name)}(\\s|$)`) }) })
    .getByRole('gridcell')
    .nth(columns.indexOf(environment));

/**
 * Stages a new name through "Add secret": one value in every environment
 * ("Same value in all"), the same value in the chosen ones, or a value per
 * environment (`{ staging: "…", production: "…" }`); the others stay empty.
 */
export async function addSecret(
  page: Page,
  name: string,
  value: string | Record<string, string>,
  environments?: string[],
): Promise<void> {
  await page
    .getByRole('button', { name: /^Add (a )?secret$/ })
    .first()
    .click();
  const dialog = page.getByRole('dialog', { name: 'Add a secret' });
  await dialog.getByLabel('Name', { exact: true }).fill(name);
  if (typeof value === 'string' && !environments) {
    await dialog.getByLabel('Same value in all environments').check();
    await dialog.getByLabel('Value', { exact: true }).fill(value);
  } else {
    const values =
      typeof value === 'string'
        ? Object.fromEntries((environments ?? []).map((e) => [e, value]))
        : value;
    const fields = dialog.getByRole('group', { name: 'Value per environment' });
    for (const [environment, text] of Object.entries(values))
      await fields.getByLabel(environment, { exact: true }).fill(text);
  }
  await dialog.getByRole('button', { name: 'Add to changes' }).click();
  await expect(dialog).toBeHidden();
}

/** Double-click a cell, type, Enter: the value is staged (not sent). */
export async function editCell(
  page: Page,
  name: string,
  environment: string,
  value: string,
): Promise<void> {
  // Near the left edge: the hover actions overlay the cell and, in a narrow
  // column, its middle (a double-click there toggles Reveal twice).
  await cell(page, name, environment).dblclick({ position: { x: 12, y: 12 } });
  const editor = page.getByLabel(`Value of ${name} in ${environment}`, { exact: true });
  await editor.fill(value);
  await editor.press('Enter');
  await expect(editor).toBeHidden();
}

/** Opens Review from the pending bar and saves; waits until the bar is gone. */
export async function reviewAndSave(page: Page, changes: number): Promise<void> {
  await page
    .getByRole('region', { name: 'Pending changes' })
    .getByRole('button', { name: 'Review' })
    .click();
  const dialog = page.getByRole('dialog', { name: 'Review changes' });
  await dialog
    .getByRole('button', { name: `Save ${changes} ${changes === 1 ? 'change' : 'changes'}` })
    .click();
  await expect(dialog).toBeHidden({ timeout: 20_000 });
  await expect(page.getByRole('region', { name: 'Pending changes' })).toBeHidden();
}

/** "Discard all" from the pending bar, confirmed; the bar goes. */
export async function discardAll(page: Page): Promise<void> {
  const bar = page.getByRole('region', { name: 'Pending changes' });
  await bar.getByRole('button', { name: 'Discard all' }).click();
  await page
    .getByRole('dialog', { name: 'Discard all unsaved changes?' })
    .getByRole('button', { name: 'Discard all' })
    .click();
  await expect(bar).toBeHidden();
}

/** Reveals one cell and returns the text it shows. */
export async function revealedValue(page: Page, name: string, environment: string) {
  const target = cell(page, name, environment);
  await target.hover();
  const reveal = target.getByRole('button', { name: `Reveal ${name} in ${environment}` });
  if (await reveal.count()) await reveal.click();
  await expect(
    target.getByRole('button', { name: `Hide ${name} in ${environment}` }),
  ).toBeVisible();
  return ((await target.locator('.value').textContent()) ?? '').toString();
}

export async function hideCell(page: Page, name: string, environment: string) {
  const target = cell(page, name, environment);
  await target.hover();
  await target.getByRole('button', { name: `Hide ${name} in ${environment}` }).click();
}

/** The dashboard's storage after unlock: nothing but the auto-lock preference. */
export async function browserStorage(page: Page) {
  return page.evaluate(async () => ({
    localStorage: Object.keys(localStorage),
    sessionStorage: Object.keys(sessionStorage),
    indexedDB: (await indexedDB.databases()).map((d) => d.name),
    cookie: document.cookie,
    caches: await caches.keys(),
  }));
}
