// The first visit, end to end: sign-up with the recovery key, a project, edits
// across environments reviewed and saved as encrypted batches, a reload that
// locks (not signs out), unlock, copy without revealing, and the values read
// back through the SDK in Node: the browser encrypted them for real. Once on
// SQLite and, with COFFER_TEST_DATABASE_URL, once on PostgreSQL.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import {
  POSTGRES_URL,
  assertAccessible,
  Visitor,
  createPostgresDatabase,
  hasChromium,
  mainPage,
  screenshots,
  serviceMissing,
  startCoffer,
  startCofferAndBrowser,
  type Coffer,
  CHROMIUM_MISSING,
} from './support/browser.js';
import { expect, expectTitle } from './support/expect.js';
import {
  addSecret,
  browserStorage,
  cell,
  confirmRecoveryKey,
  createProject,
  editCell,
  fillSignUp,
  newAccount,
  revealedValue,
  unlock,
} from './support/flows.js';

let browser: Browser | undefined;
let coffer: Coffer | undefined;

before(async () => {
  if (!hasChromium()) return;
  [coffer, browser] = await startCofferAndBrowser();
});
after(async () => {
  await browser?.close();
  await coffer?.stop();
});

const VALUES = {
  devDb: 'postgres://app:dev-3f9a@localhost:5432/storefront_dev',
  stagingDb: 'postgres://app:stg-81c2@db.staging.internal:5432/storefront',
  prodDb: 'postgres://app:prd-77e0@db.prod.internal:5432/storefront',
  prodDb2: 'postgres://app:prd-rotated-19b4@db.prod.internal:5432/storefront',
  stagingStripe: 'sk_test_51HcStagingKey4eC39HqLyjWDarjtT1zdp7dc',
  prodStripe: 'sk_live_51HcLiveKeyZ0kq8TYv2mQpR4sNw7bXe1',
  logLevel: 'debug',
  redis: 'redis://:r3d1s-pw@cache.staging.internal:6379/0',
};

async function journey(browser: Browser, coffer: Coffer, options: { pages: boolean }) {
  const visitor = await Visitor.open(browser, coffer, {
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  visitor.secret(...Object.values(VALUES));
  const { page } = visitor;
  const account = newAccount('journey');
  visitor.secret(account.password);
  try {
    // Signed out: / goes to sign-in.
    await visitor.goto('/');
    await page.waitForURL(/\/signin$/);
    await expect(page.getByRole('heading', { name: 'Sign in to Coffer' })).toBeVisible();
    await expectTitle(page, 'Sign in · Coffer');
    if (options.pages) await mainPage(page, 'sign-in');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await expect(page.getByRole('heading', { name: 'Create your Coffer account' })).toBeVisible();
    await expectTitle(page, 'Create account · Coffer');
    if (options.pages) await mainPage(page, 'sign-up');

    // The recovery key, shown once; Continue waits for the confirmation.
    const recoveryKey = await fillSignUp(page, account);
    visitor.secret(recoveryKey);
    assert.match(recoveryKey, /\S{20,}/);
    if (options.pages) await mainPage(page, 'recovery-key');
    await confirmRecoveryKey(page);
    await expect(page.getByRole('heading', { name: 'Create your first project' })).toBeVisible();
    await expectTitle(page, 'Projects · Coffer');
    if (options.pages) await mainPage(page, 'projects-empty');

    const projectId = await createProject(page, 'Storefront');
    await page.waitForFunction(() => document.title === 'Secrets · Storefront · Coffer');

    if (options.pages) {
      // The "Add secret" dialog as it opens, for the screenshots.
      await page
        .getByRole('button', { name: /^Add (a )?secret$/ })
        .first()
        .click();
      const adding = page.getByRole('dialog', { name: 'Add a secret' });
      await expect(adding).toBeVisible();
      await mainPage(page, 'add-secret-dialog');
      await page.keyboard.press('Escape');
      await expect(adding).toBeHidden();
    }

    // First batch: names added through the dialog, then cells edited per environment.
    await addSecret(page, 'DATABASE_URL', VALUES.devDb);
    await editCell(page, 'DATABASE_URL', 'staging', VALUES.stagingDb);
    await editCell(page, 'DATABASE_URL', 'production', VALUES.prodDb);
    await addSecret(page, 'STRIPE_SECRET_KEY', VALUES.stagingStripe, ['staging', 'production']);
    await editCell(page, 'STRIPE_SECRET_KEY', 'production', VALUES.prodStripe);
    await addSecret(page, 'LOG_LEVEL', VALUES.logLevel, ['development']);
    const bar = page.getByRole('region', { name: 'Pending changes' });
    await expect(bar).toContainText('6 unsaved changes in development, staging and production');
    await expect(cell(page, 'LOG_LEVEL', 'production')).toContainText('missing');
    await bar.getByRole('button', { name: 'Review' }).click();
    let review = page.getByRole('dialog', { name: 'Review changes' });
    await expect(review.getByRole('region', { name: /^production/ })).toContainText('2 changes');
    await review.getByRole('button', { name: 'Save 6 changes' }).click();
    await expect(review).toBeHidden({ timeout: 20_000 });
    await expect(bar).toBeHidden();

    // Second batch: one change, one deletion, one addition, in three environments.
    await editCell(page, 'DATABASE_URL', 'production', VALUES.prodDb2);
    await cell(page, 'LOG_LEVEL', 'development').hover();
    await cell(page, 'LOG_LEVEL', 'development')
      .getByRole('button', { name: 'Delete LOG_LEVEL in development' })
      .click();
    await addSecret(page, 'REDIS_URL', VALUES.redis, ['staging']);
    await expect(bar).toContainText('3 unsaved changes in development, staging and production');
    await expect(cell(page, 'DATABASE_URL', 'production')).toHaveAttribute('data-state', 'changed');
    await expect(cell(page, 'LOG_LEVEL', 'development')).toHaveAttribute('data-state', 'deleted');
    await expect(cell(page, 'REDIS_URL', 'staging')).toHaveAttribute('data-state', 'added');
    assert.ok(!(await page.content()).includes(VALUES.prodDb2), 'a staged value stays masked');
    if (options.pages) await mainPage(page, 'journey-secrets-grid');

    await bar.getByRole('button', { name: 'Review' }).click();
    review = page.getByRole('dialog', { name: 'Review changes' });
    const rowOf = (environment: string, name: string) =>
      review
        .getByRole('region', { name: new RegExp(`^${environment}`) })
        .getByRole('listitem')
        .filter({ hasText: name });
    await expect(rowOf('development', 'LOG_LEVEL')).toContainText('deleted');
    await expect(rowOf('staging', 'REDIS_URL')).toContainText('added');
    await expect(rowOf('production', 'DATABASE_URL')).toContainText('changed');
    let text = (await review.textContent()) ?? '';
    for (const value of [VALUES.prodDb, VALUES.prodDb2, VALUES.redis, VALUES.logLevel])
      assert.ok(!text.includes(value), `review masks ${value} until revealed`);
    if (options.pages) await mainPage(page, 'journey-review-dialog');
    await review.getByRole('button', { name: 'Reveal DATABASE_URL in production' }).click();
    await expect(rowOf('production', 'DATABASE_URL')).toContainText(VALUES.prodDb2);
    await expect(rowOf('production', 'DATABASE_URL')).toContainText(VALUES.prodDb);
    text = (await review.textContent()) ?? '';
    assert.ok(!text.includes(VALUES.redis), 'revealing one row reveals only that row');
    await review.getByRole('button', { name: 'Save 3 changes' }).click();
    await expect(review).toBeHidden({ timeout: 20_000 });
    await expect(bar).toBeHidden();

    // A reload keeps the session but not the keys: the unlock screen.
    await page.reload();
    await expect(page.getByRole('heading', { name: 'Unlock Coffer' })).toBeVisible();
    await expect(page.getByRole('heading', { name: 'Sign in to Coffer' })).toBeHidden();
    if (options.pages) await mainPage(page, 'unlock');
    await unlock(page, account);
    await expect(cell(page, 'DATABASE_URL', 'production')).toContainText('••••');
    await expect(cell(page, 'LOG_LEVEL', 'development')).toHaveCount(0);
    await expect(cell(page, 'REDIS_URL', 'production')).toContainText('missing');
    const masked = await page.content();
    for (const value of [VALUES.devDb, VALUES.stagingDb, VALUES.prodDb2, VALUES.prodStripe])
      assert.ok(!masked.includes(value), `${value} is not in the page before it is revealed`);

    // Nothing kept in the browser beyond the auto-lock preference and the highest
    // key-pins version seen (a number, kept to catch a server rolling pins back).
    const storage = await browserStorage(page);
    assert.deepEqual(
      storage.localStorage.filter(
        (k) =>
          k !== 'coffer.autolock-minutes' && !/^coffer\.pins-version\.usr_[0-9A-Za-z]+$/.test(k),
      ),
      [],
      'localStorage',
    );
    assert.deepEqual(storage.sessionStorage, [], 'sessionStorage');
    assert.deepEqual(storage.indexedDB, [], 'IndexedDB');
    assert.equal(storage.cookie, '', 'document.cookie (the session cookie is HttpOnly)');
    assert.deepEqual(storage.caches, [], 'Cache Storage');

    // Copy without revealing: the clipboard gets the value, the page does not.
    await cell(page, 'STRIPE_SECRET_KEY', 'production').hover();
    await cell(page, 'STRIPE_SECRET_KEY', 'production')
      .getByRole('button', { name: 'Copy STRIPE_SECRET_KEY in production' })
      .click();
    await expect(page.getByRole('status').filter({ hasText: 'Copied' })).toContainText(
      'Copied STRIPE_SECRET_KEY in production',
    );
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), VALUES.prodStripe);
    assert.ok(!(await page.content()).includes(VALUES.prodStripe), 'copying does not reveal');

    // Revealed after unlock: the values saved before the reload.
    assert.equal(await revealedValue(page, 'DATABASE_URL', 'development'), VALUES.devDb);
    assert.equal(await revealedValue(page, 'DATABASE_URL', 'staging'), VALUES.stagingDb);
    assert.equal(await revealedValue(page, 'DATABASE_URL', 'production'), VALUES.prodDb2);
    assert.equal(await revealedValue(page, 'REDIS_URL', 'staging'), VALUES.redis);

    if (options.pages) {
      await visitor.goto('/projects');
      await unlock(page, account);
      await expect(page.getByRole('link', { name: 'Storefront' })).toBeVisible();
      await mainPage(page, 'projects');
    }

    // The same values through the SDK in Node, decrypted with the user's own keys.
    const login = await coffer.logIn(account.email, account.password);
    assert.deepEqual(await coffer.read(login, projectId, 'development'), {
      DATABASE_URL: VALUES.devDb,
    });
    assert.deepEqual(await coffer.read(login, projectId, 'staging'), {
      DATABASE_URL: VALUES.stagingDb,
      REDIS_URL: VALUES.redis,
      STRIPE_SECRET_KEY: VALUES.stagingStripe,
    });
    assert.deepEqual(await coffer.read(login, projectId, 'production'), {
      DATABASE_URL: VALUES.prodDb2,
      STRIPE_SECRET_KEY: VALUES.prodStripe,
    });
    visitor.check();
  } catch (error) {
    await screenshots(page, `failed-journey-${options.pages ? 'sqlite' : 'postgres'}`).catch(
      () => undefined,
    );
    throw error;
  } finally {
    await visitor.close();
  }
}

test('first visit: sign-up, recovery key, project, staged edits, review, save, reload, unlock, SDK read-back', async (t) => {
  if (!browser || !coffer) return serviceMissing(t, CHROMIUM_MISSING);
  await journey(browser, coffer, { pages: true });
});

test('the same journey on PostgreSQL', async (t) => {
  if (!browser) return serviceMissing(t, CHROMIUM_MISSING);
  if (!POSTGRES_URL) return serviceMissing(t, 'PostgreSQL (COFFER_TEST_DATABASE_URL)');
  const database = await createPostgresDatabase(POSTGRES_URL);
  const server = await startCoffer({ DATABASE_URL: database.url });
  try {
    await journey(browser, server, { pages: false });
  } finally {
    await server.stop();
    await database.drop();
  }
});

test('accessibility: no serious or critical axe finding on the pages of the journey', (t) => {
  if (!browser) return serviceMissing(t, CHROMIUM_MISSING);
  assertAccessible(t);
});
