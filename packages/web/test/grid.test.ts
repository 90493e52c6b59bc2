// The secrets grid of one realistic project (development, staging, production;
// some names missing in production), one signed-in browser for the whole file:
// keyboard use, .env paste with a bad line, compare and promote, history with
// diff and rollback, and the documentation screenshots.
import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import type { Browser } from 'playwright-core';
import { getSecret, openVault } from '@coffer/sdk';
import {
  Visitor,
  assertAccessible,
  hasChromium,
  mainPage,
  onSharedPage,
  serviceMissing,
  startCofferAndBrowser,
  type Coffer,
  CHROMIUM_MISSING,
} from './support/browser.js';
import { expect } from './support/expect.js';
import { cell, discardAll, editCell, grid, revealedValue, signIn } from './support/flows.js';
import { seedAccount, seedProject, type Seeded } from './support/seed.js';

const VALUES = {
  development: {
    DATABASE_URL: 'postgres://app:dev-5d1e@localhost:5432/checkout_dev',
    REDIS_URL: 'redis://localhost:6379/0',
    LOG_LEVEL: 'debug',
    STRIPE_SECRET_KEY: 'sk_test_51Hx9DevCheckoutKeyR2w8LmN4pQ',
    SESSION_SECRET: 'dev-session-3b0c6f1e9d',
  },
  staging: {
    DATABASE_URL: 'postgres://app:stg-a09b@db.staging.internal:5432/checkout',
    REDIS_URL: 'redis://:stg-cache-77aa@cache.staging.internal:6379/0',
    LOG_LEVEL: 'info',
    STRIPE_SECRET_KEY: 'sk_test_51Hx9StagingCheckoutKeyT6yUiO',
    SENTRY_DSN: 'https://4f1c2b7e9a@o4500.ingest.sentry.io/4501',
  },
  production: {
    DATABASE_URL: 'postgres://app:prd-c3f8@db.prod.internal:5432/checkout',
    LOG_LEVEL: 'warn',
  },
};
const ALL_VALUES = Object.values(VALUES).flatMap((v) => Object.values(v));

let browser: Browser | undefined;
let coffer: Coffer | undefined;
let visitor: Visitor | undefined;
let owner: Seeded;
let projectId: string;

before(async () => {
  if (!hasChromium()) return;
  [coffer, browser] = await startCofferAndBrowser();
  owner = await seedAccount(coffer, 'grid');
  projectId = await seedProject(owner, 'Checkout', VALUES);
  visitor = await Visitor.open(browser, coffer, {
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  visitor.secret(owner.password, ...ALL_VALUES);
  await visitor.goto(`/projects/${projectId}`);
  await visitor.page.waitForURL(/\/signin\?next=/);
  await signIn(visitor.page, owner);
  await visitor.page.waitForURL(new RegExp(`/projects/${projectId}$`));
  await expect(grid(visitor.page)).toHaveAttribute('aria-busy', 'false');
});
after(async () => {
  await visitor?.close();
  await browser?.close();
  await coffer?.stop();
});

const onGrid = (t: TestContext, name: string, body: (v: Visitor) => Promise<void>) =>
  onSharedPage(t, visitor, name, body);

const sdkRead = async (environment: string, name: string) => {
  const vault = await openVault(owner.client, projectId, owner.keys);
  try {
    return await getSecret({ client: owner.client, projectId, keys: vault }, environment, name);
  } finally {
    vault.forget();
  }
};

test('the grid of a realistic project, one staged change, and its review (documentation screenshots)', (t) =>
  onGrid(t, 'docs', async ({ page }) => {
    await expect(cell(page, 'REDIS_URL', 'production')).toContainText('missing');
    await expect(page.getByRole('columnheader', { name: /production/ })).toContainText('4 missing');
    await editCell(page, 'LOG_LEVEL', 'production', 'error');
    await expect(page.getByRole('region', { name: 'Pending changes' })).toContainText(
      '1 unsaved change in production — show',
    );
    await expect(cell(page, 'LOG_LEVEL', 'production')).toContainText('unsaved');
    await page.mouse.move(0, 0);
    await mainPage(page, 'secrets-grid');
    await page.getByRole('button', { name: 'Review' }).click();
    const review = page.getByRole('dialog', { name: 'Review changes' });
    await expect(review).toContainText('changed');
    assert.ok(!((await review.textContent()) ?? '').includes(VALUES.production.LOG_LEVEL));
    await mainPage(page, 'review-dialog');
    // Reveal all: old and new side by side, the changed characters marked.
    await review.getByRole('button', { name: 'Reveal all' }).click();
    const item = review.getByRole('listitem').filter({ hasText: 'LOG_LEVEL' });
    await expect(item).toContainText('warn');
    await expect(item).toContainText('error');
    await expect(item.locator('del').first()).toBeVisible();
    await expect(item.locator('ins').first()).toBeVisible();
    await mainPage(page, 'review-diff');
    await review.getByRole('button', { name: 'Hide all' }).click();
    assert.ok(!((await review.textContent()) ?? '').includes('error'));
    await review.getByRole('button', { name: 'Close', exact: true }).first().click();
    await discardAll(page);
  }));

test('views: "N missing" and Missing / Changed / All filter the rows; a missing cell starts adding there', (t) =>
  onGrid(t, 'views', async ({ page }) => {
    const rows = grid(page).getByRole('row');
    await expect(rows).toHaveCount(7);
    await page
      .getByRole('columnheader', { name: /production/ })
      .getByRole('button', { name: '4 missing' })
      .click();
    await expect(rows).toHaveCount(5);
    await expect(page.getByText('4 names missing in production')).toBeVisible();
    await expect(grid(page).getByRole('rowheader', { name: 'LOG_LEVEL' })).toHaveCount(0);
    await page
      .getByRole('group', { name: 'Show' })
      .getByRole('button', { name: 'Missing' })
      .click();
    await expect(rows).toHaveCount(5); // missing somewhere: all but DATABASE_URL and LOG_LEVEL

    // Clicking the "missing" mark edits that cell: the value is staged as an addition.
    const target = cell(page, 'REDIS_URL', 'production');
    await target.getByRole('button', { name: 'Missing: add REDIS_URL in production' }).click();
    const editor = page.getByLabel('Value of REDIS_URL in production', { exact: true });
    await editor.fill('redis://cache.prod.internal:6379/0');
    await editor.press('Enter');
    await expect(target).toHaveAttribute('data-state', 'added');
    await page
      .getByRole('group', { name: 'Show' })
      .getByRole('button', { name: 'Changed' })
      .click();
    await expect(rows).toHaveCount(2);
    await expect(page.getByText('1 name with unsaved changes')).toBeVisible();
    await page.getByRole('group', { name: 'Show' }).getByRole('button', { name: 'All' }).click();
    await expect(rows).toHaveCount(7);
    await discardAll(page);
  }));

test('review: a changed value shows old and new with only the changed characters marked', (t) =>
  onGrid(t, 'review-diff', async ({ page }) => {
    const next = VALUES.staging.DATABASE_URL.replace(':5432/', ':6543/');
    visitor!.secret(next);
    await editCell(page, 'DATABASE_URL', 'staging', next);
    await page.getByRole('button', { name: 'Review' }).click();
    const review = page.getByRole('dialog', { name: 'Review changes' });
    const item = review.getByRole('listitem').filter({ hasText: 'DATABASE_URL' });
    assert.ok(!((await item.textContent()) ?? '').includes('5432'), 'masked until revealed');
    await item.getByRole('button', { name: 'Reveal DATABASE_URL in staging' }).click();
    await expect(item).toContainText(VALUES.staging.DATABASE_URL);
    await expect(item).toContainText(next);
    const removed = (await item.locator('del').allTextContents()).join('');
    const added = (await item.locator('ins').allTextContents()).join('');
    assert.ok(removed.length <= 4 && added.length <= 4, `${removed} → ${added}: only the port`);
    assert.ok(/^[0-9]+$/.test(removed) && /^[0-9]+$/.test(added));
    await review.getByRole('button', { name: 'Close', exact: true }).first().click();
    await discardAll(page);
  }));

test('copy shows "Copied"; a cell shows its version, date and author on focus', (t) =>
  onGrid(t, 'copy', async ({ page }) => {
    const target = cell(page, 'LOG_LEVEL', 'staging');
    await target.hover();
    await target.getByRole('button', { name: 'Copy LOG_LEVEL in staging' }).click();
    await expect(
      page.getByRole('status').filter({ hasText: 'Copied LOG_LEVEL in staging' }),
    ).toBeVisible();
    assert.equal(
      await page.evaluate(() => navigator.clipboard.readText()),
      VALUES.staging.LOG_LEVEL,
    );
    await target.focus();
    const meta = target.locator('.cell-meta');
    await expect(meta).toBeVisible();
    await expect(meta).toContainText('v1 ·');
    await expect(meta).toContainText('by you');
  }));

test('keyboard only: arrows, Enter, Escape, /, ? and Shift+R', (t) =>
  onGrid(t, 'keyboard', async ({ page }) => {
    const names = ['DATABASE_URL', 'LOG_LEVEL', 'REDIS_URL', 'SENTRY_DSN'];
    await cell(page, 'DATABASE_URL', 'development').click();
    await expect(cell(page, 'DATABASE_URL', 'development')).toBeFocused();
    await page.keyboard.press('ArrowRight');
    await expect(cell(page, 'DATABASE_URL', 'staging')).toBeFocused();
    await page.keyboard.press('ArrowDown');
    await expect(cell(page, names[1]!, 'staging')).toBeFocused();
    await page.keyboard.press('ArrowDown');
    await expect(cell(page, names[2]!, 'staging')).toBeFocused();
    await page.keyboard.press('ArrowLeft');
    await expect(cell(page, names[2]!, 'development')).toBeFocused();
    await page.keyboard.press('ArrowUp');
    await expect(cell(page, 'LOG_LEVEL', 'development')).toBeFocused();

    // Enter edits; Escape cancels and leaves nothing staged.
    await page.keyboard.press('Enter');
    const editor = page.getByLabel('Value of LOG_LEVEL in development', { exact: true });
    await expect(editor).toBeFocused();
    await expect(editor).toHaveValue(VALUES.development.LOG_LEVEL);
    await page.keyboard.press('Control+A');
    await page.keyboard.type('trace');
    await page.keyboard.press('Escape');
    await expect(editor).toBeHidden();
    await expect(cell(page, 'LOG_LEVEL', 'development')).toBeFocused();
    await expect(page.getByRole('region', { name: 'Pending changes' })).toBeHidden();

    // Enter, type, Enter stages; the focus is back on the cell.
    await page.keyboard.press('Enter');
    await expect(editor).toBeFocused();
    await page.keyboard.press('Control+A');
    await page.keyboard.type('trace');
    await page.keyboard.press('Enter');
    await expect(editor).toBeHidden();
    await expect(cell(page, 'LOG_LEVEL', 'development')).toBeFocused();
    await expect(cell(page, 'LOG_LEVEL', 'development')).toHaveAttribute('data-state', 'changed');
    await expect(page.getByRole('region', { name: 'Pending changes' })).toContainText(
      '1 unsaved change in development',
    );

    // / focuses the filter; Escape empties it.
    await page.keyboard.press('/');
    const filter = page.getByRole('searchbox', { name: 'Filter secrets by name' });
    await expect(filter).toBeFocused();
    await page.keyboard.type('redis');
    await expect(grid(page).getByRole('row')).toHaveCount(2);
    await page.keyboard.press('Escape');
    await expect(filter).toHaveValue('');
    await page.keyboard.press('ArrowDown');
    await expect(cell(page, 'DATABASE_URL', 'development')).toBeFocused();

    // ? lists the shortcuts; Escape closes it.
    await page.keyboard.press('?');
    const shortcuts = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await expect(shortcuts).toBeVisible();
    await expect(shortcuts).toContainText('Review pending changes');
    await expect(shortcuts).toContainText('Delete or Backspace');
    await page.keyboard.press('Escape');
    await expect(shortcuts).toBeHidden();

    // Shift+R opens Review.
    await cell(page, 'DATABASE_URL', 'development').focus();
    await page.keyboard.press('Shift+R');
    const review = page.getByRole('dialog', { name: 'Review changes' });
    await expect(review).toBeVisible();
    await expect(review).toContainText('LOG_LEVEL');
    await page.keyboard.press('Escape');
    await expect(review).toBeHidden();
    await discardAll(page);
  }));

test('.env paste: a bad line is named by number and stages nothing; fixed, it saves', (t) =>
  onGrid(t, 'dotenv', async ({ page }) => {
    visitor!.secret('2000', 'v2-checkout', 'orders,refunds');
    await page.getByRole('button', { name: 'Edit development as .env text' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit development as .env' });
    const text = dialog.getByLabel('.env text', { exact: true });
    await mainPage(page, 'env-text-dialog');
    const pasted = [
      '# pasted from the old .env',
      'API_TIMEOUT_MS=2000',
      'this line is not a variable',
      'FEATURE_FLAGS="orders,refunds"',
      'export CHECKOUT_VERSION=v2-checkout',
    ];
    await text.fill(pasted.join('\n'));
    await dialog.getByRole('button', { name: 'Stage changes' }).click();
    await expect(dialog.getByRole('alert')).toContainText('Line 3');
    await expect(dialog).toBeVisible();
    await expect(page.getByRole('region', { name: 'Pending changes' })).toBeHidden();

    pasted.splice(2, 1);
    await text.fill(pasted.join('\n'));
    await expect(dialog.getByRole('alert')).toBeHidden();
    await dialog.getByRole('button', { name: 'Stage changes' }).click();
    await expect(dialog).toBeHidden();
    await expect(page.getByRole('region', { name: 'Pending changes' })).toContainText(
      '3 unsaved changes in development',
    );
    await expect(cell(page, 'API_TIMEOUT_MS', 'development')).toHaveAttribute(
      'data-state',
      'added',
    );
    await page.getByRole('button', { name: 'Review' }).click();
    const review = page.getByRole('dialog', { name: 'Review changes' });
    await review.getByRole('button', { name: 'Save 3 changes' }).click();
    await expect(review).toBeHidden({ timeout: 20_000 });

    assert.equal((await sdkRead('development', 'API_TIMEOUT_MS')).value, '2000');
    assert.equal((await sdkRead('development', 'FEATURE_FLAGS')).value, 'orders,refunds');
    assert.equal((await sdkRead('development', 'CHECKOUT_VERSION')).value, 'v2-checkout');
    // The rest of development is untouched.
    assert.equal((await sdkRead('development', 'LOG_LEVEL')).value, 'debug');
  }));

test('compare staging with production and promote two values', (t) =>
  onGrid(t, 'compare', async ({ page }) => {
    await page.getByRole('button', { name: 'Compare' }).click();
    const dialog = page.getByRole('dialog', { name: 'Compare environments' });
    await expect(dialog.getByLabel('From', { exact: true })).toHaveValue(
      await dialog
        .getByRole('option', { name: 'staging' })
        .first()
        .getAttribute('value')
        .then(String),
    );
    await expect(dialog).toContainText(
      '3 only in staging, 0 only in production, 2 with different values, 0 the same.',
    );
    const text = (await dialog.textContent()) ?? '';
    for (const value of [...Object.values(VALUES.staging), ...Object.values(VALUES.production)])
      assert.ok(!text.includes(value), 'compare masks values until revealed');
    await mainPage(page, 'compare-dialog');
    const stage = dialog.getByRole('button', { name: 'Select secrets to copy' });
    await expect(stage).toBeDisabled();
    await dialog.getByRole('checkbox', { name: 'Select all' }).check();
    await expect(dialog.getByRole('button', { name: 'Copy 5 to production' })).toBeEnabled();
    await dialog.getByRole('button', { name: 'Select none' }).click();
    await expect(stage).toBeDisabled();
    await dialog.getByRole('checkbox', { name: 'Copy REDIS_URL to production' }).check();
    await dialog.getByRole('checkbox', { name: 'Copy LOG_LEVEL to production' }).check();
    await dialog.getByRole('button', { name: 'Copy 2 to production' }).click();
    await expect(dialog).toBeHidden();
    await expect(cell(page, 'REDIS_URL', 'production')).toHaveAttribute('data-state', 'added');
    await expect(cell(page, 'LOG_LEVEL', 'production')).toHaveAttribute('data-state', 'changed');
    await page.getByRole('button', { name: 'Review' }).click();
    const review = page.getByRole('dialog', { name: 'Review changes' });
    await review.getByRole('button', { name: 'Save 2 changes' }).click();
    await expect(review).toBeHidden({ timeout: 20_000 });

    assert.equal((await sdkRead('production', 'REDIS_URL')).value, VALUES.staging.REDIS_URL);
    assert.equal((await sdkRead('production', 'LOG_LEVEL')).value, VALUES.staging.LOG_LEVEL);
    assert.equal(
      (await sdkRead('production', 'DATABASE_URL')).value,
      VALUES.production.DATABASE_URL,
    );
    assert.equal((await sdkRead('staging', 'LOG_LEVEL')).version, 1, 'the source is untouched');
  }));

test('compare: a name only in the target can be staged for deletion there', (t) =>
  onGrid(t, 'compare-delete', async ({ page }) => {
    await page.getByRole('button', { name: 'Compare' }).click();
    const dialog = page.getByRole('dialog', { name: 'Compare environments' });
    const options = dialog.getByLabel('From', { exact: true }).locator('option');
    const idOf = async (name: string) =>
      String(await options.filter({ hasText: name }).first().getAttribute('value'));
    await dialog.getByLabel('From', { exact: true }).selectOption(await idOf('development'));
    await dialog.getByLabel('To', { exact: true }).selectOption(await idOf('staging'));
    await dialog.getByRole('checkbox', { name: 'Delete SENTRY_DSN from staging' }).check();
    await dialog.getByRole('button', { name: 'Delete 1 from staging' }).click();
    await expect(dialog).toBeHidden();
    await expect(cell(page, 'SENTRY_DSN', 'staging')).toHaveAttribute('data-state', 'deleted');
    await expect(page.getByRole('region', { name: 'Pending changes' })).toContainText(
      '1 unsaved change in staging',
    );
    await discardAll(page);
  }));

test('history: two saves, both versions listed, their diff, roll back to the first', (t) =>
  onGrid(t, 'history', async ({ page }) => {
    const first = VALUES.development.SESSION_SECRET;
    const second = 'dev-session-rotated-81aa\nsecond line';
    const third = 'dev-session-rotated-81aa\nthird line';
    visitor!.secret(second, third);
    for (const value of [second, third]) {
      await cell(page, 'SESSION_SECRET', 'development').dblclick();
      const editor = page.getByLabel('Value of SESSION_SECRET in development', { exact: true });
      await editor.fill(value);
      await editor.press('Enter');
      await page.getByRole('button', { name: 'Review' }).click();
      const review = page.getByRole('dialog', { name: 'Review changes' });
      // The first save by its button, the second by the keyboard (Ctrl+Enter).
      if (value === second) await review.getByRole('button', { name: 'Save 1 change' }).click();
      else await page.keyboard.press('Control+Enter');
      await expect(review).toBeHidden({ timeout: 20_000 });
    }
    assert.equal((await sdkRead('development', 'SESSION_SECRET')).version, 3);

    const target = cell(page, 'SESSION_SECRET', 'development');
    await target.hover();
    await target.getByRole('button', { name: 'History of SESSION_SECRET in development' }).click();
    const dialog = page.getByRole('dialog', { name: 'History of SESSION_SECRET in development' });
    await expect(dialog.getByRole('checkbox', { name: /^Compare version/ })).toHaveCount(3);
    await expect(dialog).toContainText('v3 (current)');
    assert.ok(!((await dialog.textContent()) ?? '').includes('rotated'), 'values masked');
    await dialog.getByRole('checkbox', { name: 'Compare version 2' }).check();
    await dialog.getByRole('checkbox', { name: 'Compare version 3' }).check();
    await dialog.getByRole('button', { name: 'Reveal both to see the differences' }).click();
    const diff = dialog.getByRole('region', { name: 'Differences' });
    await expect(diff).toContainText('v2 → v3');
    await expect(diff).toContainText('- second line');
    await expect(diff).toContainText('+ third line');
    await expect(diff).toContainText('  dev-session-rotated-81aa');
    await mainPage(page, 'history-dialog');

    await dialog
      .getByRole('row')
      .filter({ hasText: /^v1/ })
      .getByRole('button', { name: 'Roll back' })
      .click();
    const confirm = page.getByRole('dialog', { name: 'Roll SESSION_SECRET back to v1?' });
    await confirm.getByRole('button', { name: 'Roll back' }).click();
    await expect(confirm).toBeHidden({ timeout: 20_000 });
    await expect(dialog).toContainText('v4 (current)');
    const now = await sdkRead('development', 'SESSION_SECRET');
    assert.equal(now.version, 4);
    assert.equal(now.value, first);
    await dialog.getByRole('button', { name: 'Close' }).click();
    assert.equal(await revealedValue(page, 'SESSION_SECRET', 'development'), first);
  }));

test('accessibility: no serious or critical axe finding on the grid and its dialogs', (t) => {
  if (!visitor) return serviceMissing(t, CHROMIUM_MISSING);
  assertAccessible(t);
});
