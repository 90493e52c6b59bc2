// The secrets grid learns of other people's saves live (the change feed, in a
// real Chromium against a real server): a teammate's save is announced, the
// cells it changed refresh, and a cell staged here that they saved meanwhile
// is marked as a conflict.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { openVault, setSecret } from '@coffer/sdk';
import {
  Visitor,
  hasChromium,
  mainPage,
  onSharedPage,
  startCofferAndBrowser,
  type Coffer,
} from './support/browser.js';
import { sdkMember } from './support/admin.js';
import { expect } from './support/expect.js';
import { cell, editCell, grid, revealedValue, signIn } from './support/flows.js';
import { seedAccount, seedProject, type Seeded } from './support/seed.js';

const VALUES = {
  development: { LOG_LEVEL: 'debug' },
  staging: { LOG_LEVEL: 'info' },
  production: { LOG_LEVEL: 'warn', DATABASE_URL: 'postgres://app:prd-c3f8@db/checkout' },
};
const NEW_URL = 'postgres://app:prd-9e41@db-2/checkout';

let browser: Browser | undefined;
let coffer: Coffer | undefined;
let visitor: Visitor | undefined;
let owner: Seeded;
let projectId: string;

before(async () => {
  if (!hasChromium()) return;
  [coffer, browser] = await startCofferAndBrowser();
  owner = await seedAccount(coffer, 'owner');
  projectId = await seedProject(owner, 'Checkout', VALUES);
  visitor = await Visitor.open(browser, coffer);
  visitor.secret(owner.password, ...Object.values(VALUES).flatMap(Object.values), NEW_URL, 'trace');
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

test("a teammate's save is announced, refreshes the grid, and marks the cell staged here as a conflict", (t) =>
  onSharedPage(t, visitor, 'live', async ({ page }) => {
    const login = await coffer!.logIn(owner.email, owner.password);
    const ada = await sdkMember(coffer!, login, projectId, 'ada', 'developer');

    // Staged here, not saved.
    await editCell(page, 'LOG_LEVEL', 'production', 'error');
    await expect(cell(page, 'LOG_LEVEL', 'production')).toContainText('unsaved');

    // Ada saves LOG_LEVEL and DATABASE_URL in production, with her own session.
    const vault = await openVault(ada.login.client, projectId, ada.login.keys);
    try {
      const scope = { client: ada.login.client, projectId, keys: vault };
      await setSecret(scope, 'production', 'LOG_LEVEL', 'trace');
      await setSecret(scope, 'production', 'DATABASE_URL', NEW_URL);
    } finally {
      vault.forget();
    }

    const toasts = page.getByRole('status').filter({ hasText: 'just now' });
    await expect(toasts.first()).toContainText(
      `${ada.account.name} changed LOG_LEVEL in production just now`,
    );
    // The staged cell keeps its value and says someone saved it meanwhile.
    const staged = cell(page, 'LOG_LEVEL', 'production');
    await expect(staged).toHaveAttribute('data-conflict', 'true');
    await expect(staged).toContainText('changed meanwhile');
    // The cell not staged shows the new value.
    assert.equal(await revealedValue(page, 'DATABASE_URL', 'production'), NEW_URL);
    await page.mouse.move(0, 0);
    await mainPage(page, 'secrets-live');
  }));
