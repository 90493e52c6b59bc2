// An admin's pages in one signed-in browser whose clock the test controls:
// environments (create, rename, delete by typing the slug), a project renamed
// and deleted (typing its name), and the auto-lock set to one minute.
import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import type { Browser } from 'playwright-core';
import { getProject, isCofferApiError, listEnvironments } from '@coffer/sdk';
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
import { expect, expectTitle } from './support/expect.js';
import { cell, grid, revealedValue, signIn, unlock } from './support/flows.js';
import { seedAccount, seedProject, type Seeded } from './support/seed.js';

const VALUE = 'postgres://inventory:prd-e41b@db.prod.internal:5432/inventory';

let browser: Browser | undefined;
let coffer: Coffer | undefined;
let visitor: Visitor | undefined;
let owner: Seeded;
let projectId: string;
let scratchId: string;

before(async () => {
  if (!hasChromium()) return;
  [coffer, browser] = await startCofferAndBrowser();
  owner = await seedAccount(coffer, 'owner');
  projectId = await seedProject(owner, 'Inventory', { production: { DATABASE_URL: VALUE } });
  scratchId = await seedProject(owner, 'Scratch', {});
  // The page's clock is the test's: installed before the app loads.
  visitor = await Visitor.open(browser, coffer, {
    beforeLoad: (context) => context.clock.install(),
  });
  visitor.secret(owner.password, VALUE);
  await visitor.goto(`/projects/${projectId}`);
  await visitor.page.waitForURL(/\/signin\?next=/);
  await signIn(visitor.page, owner);
  await expect(grid(visitor.page)).toHaveAttribute('aria-busy', 'false');
});
after(async () => {
  await visitor?.close();
  await browser?.close();
  await coffer?.stop();
});

const onPage = (t: TestContext, name: string, body: (v: Visitor) => Promise<void>) =>
  onSharedPage(t, visitor, name, body);

const slugs = async (id: string) =>
  (await listEnvironments(owner.client, id, { per_page: 100 })).data.map((e) => e.slug).sort();

test('environments: create, rename, delete after typing the slug', (t) =>
  onPage(t, 'environments', async ({ page }) => {
    await page
      .getByRole('navigation', { name: 'Project' })
      .getByRole('link', { name: 'Environments' })
      .click();
    await expect(page.getByRole('heading', { name: 'Environments' })).toBeVisible();
    await expect(page.getByRole('row').filter({ hasText: 'production' })).toContainText('1');
    await mainPage(page, 'environments');

    await page.getByRole('button', { name: 'New environment' }).click();
    let dialog = page.getByRole('dialog', { name: 'New environment' });
    await dialog.getByLabel('Name', { exact: true }).fill('QA Europe');
    await dialog.getByLabel('Slug (optional)', { exact: true }).fill('qa-eu');
    await dialog.getByRole('button', { name: 'Create environment' }).click();
    await expect(dialog).toBeHidden();
    await expect(page.getByRole('row').filter({ hasText: 'QA Europe' })).toContainText('qa-eu');
    assert.deepEqual(await slugs(projectId), ['development', 'production', 'qa-eu', 'staging']);

    await page.getByRole('button', { name: 'Rename QA Europe' }).click();
    dialog = page.getByRole('dialog', { name: 'Rename QA Europe' });
    await dialog.getByLabel('Name', { exact: true }).fill('QA EU');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect(dialog).toBeHidden();
    await expect(page.getByRole('row').filter({ hasText: 'QA EU' })).toContainText('qa-eu');

    await page.getByRole('button', { name: 'Delete QA EU' }).click();
    dialog = page.getByRole('dialog', { name: 'Delete QA EU?' });
    const typed = dialog.getByLabel('Type qa-eu to confirm', { exact: true });
    await typed.fill('QA EU');
    await dialog.getByRole('button', { name: 'Delete environment' }).click();
    await expect(dialog).toBeVisible();
    assert.deepEqual(await slugs(projectId), ['development', 'production', 'qa-eu', 'staging']);
    await typed.fill('qa-eu');
    await dialog.getByRole('button', { name: 'Delete environment' }).click();
    await expect(dialog).toBeHidden({ timeout: 20_000 });
    await expect(page.getByRole('row').filter({ hasText: 'QA EU' })).toHaveCount(0);
    assert.deepEqual(await slugs(projectId), ['development', 'production', 'staging']);
  }));

test('project: rename, then delete after typing its name', (t) =>
  onPage(t, 'project-settings', async ({ page }) => {
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Projects' })
      .click();
    await page.getByRole('link', { name: 'Scratch', exact: true }).click();
    await page
      .getByRole('navigation', { name: 'Project' })
      .getByRole('link', { name: 'Settings' })
      .click();
    const name = page.getByLabel('Project name', { exact: true });
    await expect(name).toHaveValue('Scratch');
    await mainPage(page, 'project-settings');
    await name.fill('Scratch (old)');
    await page.getByRole('button', { name: 'Save project' }).click();
    await expect(page.getByRole('status').filter({ hasText: 'Saved' })).toBeVisible();
    await expect(page.getByRole('heading', { name: 'Scratch (old)', level: 1 })).toBeVisible();
    assert.equal((await getProject(owner.client, scratchId)).name, 'Scratch (old)');

    await page.getByRole('button', { name: 'Delete project' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete Scratch (old)?' });
    await dialog.getByLabel('Type Scratch (old) to confirm', { exact: true }).fill('Scratch (old)');
    await dialog.getByRole('button', { name: 'Delete project' }).click();
    await page.waitForURL(/\/projects$/);
    await expect(page.getByRole('link', { name: 'Inventory', exact: true })).toBeVisible();
    await expect(page.getByRole('link', { name: 'Scratch (old)' })).toHaveCount(0);
    await assert.rejects(
      getProject(owner.client, scratchId),
      (error) => isCofferApiError(error) && error.status === 404,
    );
  }));

/** The colour the page is painted with, as the browser computed it. */
const background = (page: import('playwright-core').Page) =>
  page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
const LIGHT = 'rgb(255, 255, 255)';
const DARK = 'rgb(15, 18, 22)';

test('a title per screen, one content column on every tab, a tab strip that scrolls at 375 px', (t) =>
  onPage(t, 'titles', async ({ page }) => {
    const main = page.getByRole('navigation', { name: 'Main' });
    await main.getByRole('link', { name: 'Projects' }).click();
    await expect(page.getByRole('link', { name: 'Inventory', exact: true })).toBeVisible();
    await expectTitle(page, 'Projects · Coffer');
    await main.getByRole('link', { name: 'Account' }).click();
    await expect(page.getByRole('heading', { name: 'Account', level: 1 })).toBeVisible();
    await expectTitle(page, 'Account · Coffer');
    await main.getByRole('link', { name: 'Invitations' }).click();
    await expect(page.getByRole('heading', { name: 'Invitations', level: 1 })).toBeVisible();
    await expectTitle(page, 'Invitations · Coffer');
    await main.getByRole('link', { name: 'Projects' }).click();
    await page.getByRole('link', { name: 'Inventory', exact: true }).click();

    const tabs = page.getByRole('navigation', { name: 'Project' });
    const labels = await tabs.getByRole('link').allTextContents();
    assert.deepEqual(labels, [
      'Secrets',
      'Environments',
      'Members',
      'Access',
      'Tokens',
      'Webhooks',
      'Audit',
      'Settings',
    ]);
    const lefts = new Set<number>();
    for (const tab of labels) {
      await tabs.getByRole('link', { name: tab }).click();
      await page.waitForFunction(
        (title) => document.title === title,
        `${tab} · Inventory · Coffer`,
      );
      // No visible heading repeats the tab's name (screen readers keep theirs).
      const visible = await page
        .getByRole('main')
        .locator('h1, h2')
        .evaluateAll((hs) =>
          hs.filter((h) => !h.classList.contains('visually-hidden')).map((h) => h.textContent),
        );
      assert.ok(!visible.includes(tab), `${tab}: visible headings ${visible.join(', ')}`);
      // The tab's content starts where the tab strip does, whatever the tab.
      const box = await page.locator('.project > :last-child').boundingBox();
      lefts.add(Math.round(box!.x));
      lefts.add(Math.round((await tabs.boundingBox())!.x));
    }
    assert.equal(lefts.size, 1, `one left edge: ${[...lefts].join(', ')}`);

    await page.setViewportSize({ width: 375, height: 740 });
    try {
      const strip = await tabs.evaluate((nav) => ({
        scrolls: nav.scrollWidth > nav.clientWidth,
        overflowX: getComputedStyle(nav).overflowX,
        rows: new Set(Array.from(nav.querySelectorAll('a'), (a) => a.offsetTop)).size,
      }));
      assert.deepEqual(strip, { scrolls: true, overflowX: 'auto', rows: 1 });
      // No page wider than the phone.
      assert.equal(
        await page.evaluate(() => document.documentElement.scrollWidth),
        375,
        'no sideways scroll of the page',
      );
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
    await tabs.getByRole('link', { name: 'Secrets' }).click();
  }));

test('theme: light, dark or the system, chosen in the header and kept across reloads', (t) =>
  onPage(t, 'theme', async ({ page }) => {
    const theme = page.getByRole('banner').getByRole('combobox', { name: 'Theme' });
    await expect(theme).toHaveValue('system');
    assert.equal(await background(page), LIGHT, 'the system is light');
    await page.emulateMedia({ colorScheme: 'dark' });
    assert.equal(await background(page), DARK, 'System follows the system to dark');

    await theme.selectOption({ label: 'Light theme' });
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
    assert.equal(await background(page), LIGHT, 'Light wins over a dark system');
    await theme.selectOption({ label: 'Dark theme' });
    await page.emulateMedia({ colorScheme: 'light' });
    assert.equal(await background(page), DARK, 'Dark wins over a light system');
    assert.equal(await page.evaluate(() => localStorage.getItem('coffer.theme')), 'dark');

    // Kept across a reload, from the unlock screen on.
    await page.reload();
    await expect(page.getByRole('heading', { name: 'Unlock Coffer' })).toBeVisible();
    await expectTitle(page, 'Unlock · Coffer');
    assert.equal(await background(page), DARK);
    await unlock(page, owner);
    await expect(theme).toHaveValue('dark');

    await theme.selectOption({ label: 'System theme' });
    assert.equal(
      await page.evaluate(() => document.documentElement.hasAttribute('data-theme')),
      false,
    );
    assert.equal(await page.evaluate(() => localStorage.getItem('coffer.theme')), null);
    assert.equal(await background(page), LIGHT);
  }));

test('auto-lock after 1 minute without activity: the unlock screen, and no value left in the page', (t) =>
  onPage(t, 'autolock', async ({ page }) => {
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Account' })
      .click();
    const choice = page.getByLabel('Lock the dashboard after this long without activity');
    await expect(choice).toBeVisible();
    await mainPage(page, 'settings');
    await choice.selectOption('1');
    assert.equal(await page.evaluate(() => localStorage.getItem('coffer.autolock-minutes')), '1');

    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Projects' })
      .click();
    await page.getByRole('link', { name: 'Inventory', exact: true }).click();
    await expect(grid(page)).toHaveAttribute('aria-busy', 'false');
    assert.equal(await revealedValue(page, 'DATABASE_URL', 'production'), VALUE);
    assert.ok((await page.content()).includes(VALUE));

    await page.clock.fastForward(30_000);
    await expect(cell(page, 'DATABASE_URL', 'production')).toContainText(VALUE);
    await page.clock.fastForward(31_000);
    await expect(page.getByRole('heading', { name: 'Unlock Coffer' })).toBeVisible();
    assert.ok(!(await page.content()).includes(VALUE), 'the value left the page');
    await mainPage(page, 'unlock-after-autolock');

    await unlock(page, owner);
    await expect(cell(page, 'DATABASE_URL', 'production')).toContainText('••••');
    assert.ok(!(await page.content()).includes(VALUE), 'masked again after unlocking');
  }));

test('accessibility: no serious or critical axe finding on the admin pages', (t) => {
  if (!visitor) return serviceMissing(t, CHROMIUM_MISSING);
  assertAccessible(t);
});
