// Staged (unsaved) edits never vanish without a word: they survive the
// auto-lock sealed (with a countdown before it), the browser asks before a
// reload while anything is staged, leaving the project or signing out asks
// first, and "Discard all" asks and can be undone. Then "Add secret" with a
// value per environment. One signed-in browser whose clock the test moves on
// (Playwright's clock: the app's own timers, the user's real auto-lock setting).
import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import type { Browser } from 'playwright-core';
import { createEnvironment, deleteEnvironment } from '@coffer/sdk';
import {
  Visitor,
  assertAccessible,
  checkA11y,
  hasChromium,
  onSharedPage,
  screenshots,
  serviceMissing,
  startCofferAndBrowser,
  type Coffer,
  CHROMIUM_MISSING,
} from './support/browser.js';
import { expect } from './support/expect.js';
import {
  addSecret,
  browserStorage,
  cell,
  editCell,
  grid,
  revealedValue,
  signIn,
  unlock,
} from './support/flows.js';
import { seedAccount, seedProject, type Seeded } from './support/seed.js';

const VALUES = {
  development: { LOG_LEVEL: 'debug', STRIPE_SECRET_KEY: 'sk_test_51Hx9DevKeyR2w8LmN4pQ' },
  staging: { LOG_LEVEL: 'info', STRIPE_SECRET_KEY: 'sk_test_51Hx9StagingKeyT6yUiO' },
  production: { LOG_LEVEL: 'warn' },
};
const STAGED = {
  production: 'error-7f3a1c',
  staging: 'sk_test_51Hx9StagingRotated9d2e',
  qa: 'https://qa.internal/api-5b8e',
};
const DOCUMENTED = new Set([
  'lock-countdown',
  'unlock-sealed',
  'unlock-restored',
  'add-secret',
  'leave-guard',
]);

let browser: Browser | undefined;
let coffer: Coffer | undefined;
let visitor: Visitor | undefined;
let owner: Seeded;
let projectId: string;

before(async () => {
  if (!hasChromium()) return;
  [coffer, browser] = await startCofferAndBrowser();
  owner = await seedAccount(coffer, 'staged');
  projectId = await seedProject(owner, 'Checkout', VALUES);
  visitor = await Visitor.open(browser, coffer, {
    // The app's timers (the auto-lock) run on a clock the test can move on.
    beforeLoad: (context) => context.clock.install(),
  });
  visitor.secret(owner.password, ...Object.values(STAGED));
  const { page } = visitor;
  await visitor.goto('/account');
  await signIn(page, owner);
  // The shortest auto-lock a user can choose: its last 30 s are announced.
  await page.getByLabel('Lock the dashboard after this long without activity').selectOption('1');
  await visitor.goto(`/projects/${projectId}`);
  await unlock(page, owner);
  await expect(grid(page)).toHaveAttribute('aria-busy', 'false');
});
after(async () => {
  await visitor?.close();
  await browser?.close();
  await coffer?.stop();
});

const onPage = (t: TestContext, name: string, body: (v: Visitor) => Promise<void>) =>
  onSharedPage(t, visitor, name, body);

const pendingBar = (v: Visitor) => v.page.getByRole('region', { name: 'Pending changes' });

/** Whether a beforeunload listener would make the browser ask before leaving the page. */
const asksBeforeUnload = (v: Visitor) =>
  v.page.evaluate(() => {
    const event = new Event('beforeunload', { cancelable: true });
    window.dispatchEvent(event);
    return event.defaultPrevented;
  });

test('staged edits survive the auto-lock sealed, after a countdown, and are restored on unlock', (t) =>
  onPage(t, 'autolock', async (v) => {
    const { page } = v;
    assert.equal(await asksBeforeUnload(v), false, 'nothing staged: no beforeunload prompt');
    await editCell(page, 'LOG_LEVEL', 'production', STAGED.production);
    await editCell(page, 'STRIPE_SECRET_KEY', 'staging', STAGED.staging);
    await expect(pendingBar(v)).toContainText('2 unsaved changes in staging and production');
    assert.equal(await asksBeforeUnload(v), true, 'a reload or a closed tab asks first');

    // The last 30 s of the 1-minute auto-lock are announced; activity cancels it.
    const countdown = page.getByRole('alert').filter({ hasText: 'The dashboard locks in' });
    await page.clock.fastForward(31_000);
    await expect(countdown).toBeVisible();
    await expect(countdown).toContainText('Your 2 unsaved changes will be kept sealed');
    await screenshots(page, 'lock-countdown', DOCUMENTED);
    await checkA11y(page, 'lock-countdown');
    await page.mouse.move(300, 300);
    await page.mouse.move(320, 320);
    await expect(countdown).toBeHidden();

    await page.clock.fastForward(31_000);
    await expect(countdown).toBeVisible();
    await page.clock.fastForward(30_000);
    await expect(page.getByRole('heading', { name: 'Unlock Coffer' })).toBeVisible();
    const note = page.getByRole('status').filter({ hasText: 'kept sealed' });
    await expect(note).toContainText('Your 2 unsaved changes are kept sealed with your key');
    const text = await page.evaluate(() => document.body.innerText);
    for (const value of Object.values(STAGED)) assert.ok(!text.includes(value));
    const storage = await browserStorage(page);
    assert.deepEqual(
      storage.localStorage.filter((k) => !k.startsWith('coffer.pins-version.')),
      ['coffer.autolock-minutes'],
      'nothing of the staged changes in any storage API',
    );
    assert.deepEqual(storage.sessionStorage, []);
    assert.deepEqual(storage.indexedDB, []);
    await screenshots(page, 'unlock-sealed', DOCUMENTED);
    await checkA11y(page, 'unlock-sealed');

    await unlock(page, owner);
    const restored = page.getByRole('status').filter({ hasText: 'restored' });
    await expect(restored).toContainText('2 staged changes restored');
    await expect(cell(page, 'LOG_LEVEL', 'production')).toHaveAttribute('data-state', 'changed');
    await expect(pendingBar(v)).toContainText('2 unsaved changes');
    await page.mouse.move(0, 0);
    await screenshots(page, 'unlock-restored', DOCUMENTED);
    await checkA11y(page, 'unlock-restored');
    assert.equal(await revealedValue(page, 'LOG_LEVEL', 'production'), STAGED.production);
    assert.equal(await revealedValue(page, 'STRIPE_SECRET_KEY', 'staging'), STAGED.staging);

    await restored.getByRole('button', { name: 'Review' }).click();
    const review = page.getByRole('dialog', { name: 'Review changes' });
    await review.getByRole('button', { name: 'Save 2 changes' }).click();
    await expect(review).toBeHidden({ timeout: 20_000 });
    const login = await v.coffer.logIn(owner.email, owner.password);
    assert.equal(
      (await v.coffer.read(login, projectId, 'production')).LOG_LEVEL,
      STAGED.production,
    );
    assert.equal(
      (await v.coffer.read(login, projectId, 'staging')).STRIPE_SECRET_KEY,
      STAGED.staging,
    );
    await restored.getByRole('button', { name: 'Dismiss' }).click();
    await expect(restored).toBeHidden();
    assert.equal(await asksBeforeUnload(v), false, 'saved: no prompt any more');
  }));

test('a change for an environment deleted while locked is named, the rest restored', (t) =>
  onPage(t, 'deleted-environment', async (v) => {
    const { page } = v;
    const qa = await createEnvironment(owner.client, projectId, { name: 'qa' });
    await page.reload();
    await unlock(page, owner);
    await expect(grid(page)).toHaveAttribute('aria-busy', 'false');
    const columns = ['development', 'qa', 'staging', 'production'];
    await expect(page.getByRole('columnheader', { name: /^qa/ })).toBeVisible();
    await cell(page, 'LOG_LEVEL', 'qa', columns).dblclick({ position: { x: 12, y: 12 } });
    const editor = page.getByLabel('Value of LOG_LEVEL in qa', { exact: true });
    await editor.fill(STAGED.qa);
    await editor.press('Enter');
    await cell(page, 'LOG_LEVEL', 'development', columns).dblclick({ position: { x: 12, y: 12 } });
    const dev = page.getByLabel('Value of LOG_LEVEL in development', { exact: true });
    await dev.fill('trace');
    await dev.press('Enter');
    await expect(pendingBar(v)).toContainText('2 unsaved changes in development and qa');

    await page.getByRole('button', { name: 'Lock', exact: true }).click();
    await expect(page.getByRole('heading', { name: 'Unlock Coffer' })).toBeVisible();
    await deleteEnvironment(owner.client, projectId, qa.id);
    await unlock(page, owner);
    const restored = page.getByRole('status').filter({ hasText: 'restored' });
    await expect(restored).toContainText('1 staged change restored');
    await expect(restored).toContainText('LOG_LEVEL in qa: the environment no longer exists');
    assert.ok(!((await restored.textContent()) ?? '').includes(STAGED.qa), 'no value named');
    await expect(pendingBar(v)).toContainText('1 unsaved change in development');
    await restored.getByRole('button', { name: 'Dismiss' }).click();
  }));

test('Discard all asks first, and Undo brings back exactly what was discarded', (t) =>
  onPage(t, 'discard-undo', async (v) => {
    const { page } = v;
    await editCell(page, 'LOG_LEVEL', 'staging', 'notice');
    await expect(pendingBar(v)).toContainText('2 unsaved changes in development and staging');
    await pendingBar(v).getByRole('button', { name: 'Discard all' }).click();
    const confirm = page.getByRole('dialog', { name: 'Discard all unsaved changes?' });
    await expect(confirm).toContainText('2 unsaved changes in development and staging');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await expect(pendingBar(v)).toContainText('2 unsaved changes');

    await pendingBar(v).getByRole('button', { name: 'Discard all' }).click();
    await confirm.getByRole('button', { name: 'Discard all' }).click();
    await expect(pendingBar(v)).toBeHidden();
    assert.equal(await asksBeforeUnload(v), false);
    const toast = page.getByRole('status').filter({ hasText: '2 changes discarded' });
    await toast.getByRole('button', { name: 'Undo' }).click();
    await expect(pendingBar(v)).toContainText('2 unsaved changes in development and staging');
    assert.equal(await revealedValue(page, 'LOG_LEVEL', 'staging'), 'notice');
    assert.equal(await revealedValue(page, 'LOG_LEVEL', 'development'), 'trace');

    // The pending bar's "show" focuses the first staged cell in grid order.
    await pendingBar(v).getByRole('button', { name: 'show' }).click();
    await expect(cell(page, 'LOG_LEVEL', 'development')).toBeFocused();
  }));

test('leaving the project or signing out with staged changes asks first', (t) =>
  onPage(t, 'leave-guard', async (v) => {
    const { page } = v;
    await expect(pendingBar(v)).toContainText('2 unsaved changes');
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Projects' })
      .click();
    const ask = page.getByRole('dialog', { name: 'Leave with unsaved changes?' });
    await expect(ask).toContainText('2 unsaved changes in development and staging');
    await screenshots(page, 'leave-guard', DOCUMENTED);
    await checkA11y(page, 'leave-guard');
    await ask.getByRole('button', { name: 'Review changes' }).click();
    await expect(page.getByRole('dialog', { name: 'Review changes' })).toBeVisible();
    assert.match(page.url(), new RegExp(`/projects/${projectId}$`));
    await page.keyboard.press('Escape');

    // Moving between the project's tabs keeps them, without asking.
    await page
      .getByRole('navigation', { name: 'Project' })
      .getByRole('link', { name: 'Members' })
      .click();
    await expect(ask).toBeHidden();
    await page.getByRole('button', { name: 'Sign out' }).click();
    const signOut = page.getByRole('dialog', { name: 'Sign out with unsaved changes?' });
    await expect(signOut).toContainText('2 unsaved changes');
    await signOut.getByRole('button', { name: 'Close' }).click();
    await expect(signOut).toBeHidden();

    // A tab whose code is still loading when the user leaves: its navigation
    // completes behind the question, which stays until the user answers it.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const auditChunk = /\/assets\/Audit-[^/]+\.js$/;
    await page.route(auditChunk, async (route) => {
      await held;
      await route.continue();
    });
    const project = page.getByRole('navigation', { name: 'Project' });
    // The browser reports the request on its own event stream, which may reach
    // the test after the question shows: wait for it rather than look once.
    const chunkRequested = page.waitForRequest(auditChunk).then(
      () => true,
      () => false,
    );
    await project.getByRole('link', { name: 'Audit' }).click();
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Projects' })
      .click();
    await expect(ask).toBeVisible();
    assert.ok(await chunkRequested, "the Audit tab's code was not held back");
    release();
    await page.waitForURL(new RegExp(`/projects/${projectId}/audit$`));
    await expect(project.getByRole('link', { name: 'Audit' })).toHaveAttribute(
      'aria-current',
      'page',
    );
    await expect(ask).toContainText('2 unsaved changes');
    await page.unroute(auditChunk);
    await ask.getByRole('button', { name: 'Discard and leave' }).click();
    await page.waitForURL(/\/projects$/);
    assert.equal(await asksBeforeUnload(v), false);
    await v.goto(`/projects/${projectId}`);
    await unlock(page, owner);
    await expect(grid(page)).toHaveAttribute('aria-busy', 'false');
    await expect(pendingBar(v)).toBeHidden();
  }));

test('Add secret: a value per environment, each saved to its own environment only', (t) =>
  onPage(t, 'add-secret', async (v) => {
    const { page } = v;
    const per = {
      development: 'https://api.dev.example/v1',
      staging: 'https://api.staging.example/v1',
      production: 'https://api.example/v1',
    };
    v.secret(...Object.values(per), 'whsec_staging_only_41c2');
    await page.getByRole('button', { name: 'Add secret' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a secret' });
    await dialog.getByLabel('Name', { exact: true }).fill('PAYMENTS_API_URL');
    const fields = dialog.getByRole('group', { name: 'Value per environment' });
    for (const [environment, value] of Object.entries(per))
      await fields.getByLabel(environment, { exact: true }).fill(value);
    await expect(dialog).toContainText('Goes to development, staging, production.');
    await screenshots(page, 'add-secret', DOCUMENTED);
    await checkA11y(page, 'add-secret');
    await dialog.getByRole('button', { name: 'Add to changes' }).click();
    await expect(dialog).toBeHidden();

    await pendingBar(v).getByRole('button', { name: 'Review' }).click();
    const review = page.getByRole('dialog', { name: 'Review changes' });
    const text = (await review.textContent()) ?? '';
    for (const value of Object.values(per)) assert.ok(!text.includes(value), 'masked in review');
    await review.getByRole('button', { name: /^Save \d+ changes$/ }).click();
    await expect(review).toBeHidden({ timeout: 20_000 });

    // One value, typed for staging only: development and production stay without it.
    await addSecret(page, 'WEBHOOK_SECRET', { staging: 'whsec_staging_only_41c2' });
    await expect(cell(page, 'WEBHOOK_SECRET', 'staging')).toHaveAttribute('data-state', 'added');
    await expect(cell(page, 'WEBHOOK_SECRET', 'production')).toContainText('missing');
    await pendingBar(v).getByRole('button', { name: 'Review' }).click();
    await review.getByRole('button', { name: /^Save \d+ changes?$/ }).click();
    await expect(review).toBeHidden({ timeout: 20_000 });

    const login = await v.coffer.logIn(owner.email, owner.password);
    for (const [environment, value] of Object.entries(per)) {
      const values = await v.coffer.read(login, projectId, environment);
      assert.equal(values.PAYMENTS_API_URL, value, environment);
      assert.equal(
        values.WEBHOOK_SECRET,
        environment === 'staging' ? 'whsec_staging_only_41c2' : undefined,
        `WEBHOOK_SECRET in ${environment}`,
      );
    }
  }));

test('accessibility: no serious or critical axe finding on these screens', (t) => {
  if (!visitor) return serviceMissing(t, CHROMIUM_MISSING);
  assertAccessible(t);
});
