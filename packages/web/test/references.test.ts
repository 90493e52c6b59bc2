// References and personal overrides in the secrets grid (real Chromium, real
// server): a reference typed in a cell previews its resolved value on reveal, a
// broken one is marked with its reason, and an override shows as "your value"
// to its owner only, with the team value beside it.
import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import type { Browser } from 'playwright-core';
import {
  acceptInvitation,
  fingerprint,
  grantMember,
  inviteMember,
  openVault,
  overrideKeyOf,
  setOverride,
  signUp,
} from '@coffer/sdk';
import {
  Visitor,
  hasChromium,
  launchBrowser,
  onSharedPage,
  screenshots,
  serviceMissing,
  startCoffer,
  type Coffer,
} from './support/browser.js';
import { expect } from './support/expect.js';
import { cell, editCell, grid, newAccount, signIn, type Account } from './support/flows.js';
import { invitationToken } from './support/admin.js';
import { seedAccount, seedProject, type Seeded } from './support/seed.js';

const VALUES = {
  development: { DB_HOST: 'localhost' },
  staging: { DB_USER: 'app_user' },
  production: {
    DB_HOST: 'db.internal',
    URL: 'postgres://${staging.DB_USER}@${DB_HOST}/shop',
    BROKEN: 'x-${NOPE}',
  },
};
const BOBS_HOST = 'bobs-laptop.internal';

let browser: Browser | undefined;
let coffer: Coffer | undefined;
let owner: Seeded;
let bob: Account;
let projectId: string;
let ownerView: Visitor | undefined;
let bobView: Visitor | undefined;

async function openGrid(visitor: Visitor, account: Account): Promise<void> {
  await visitor.goto(`/projects/${projectId}`);
  await visitor.page.waitForURL(/\/signin\?next=/);
  await signIn(visitor.page, account);
  await visitor.page.waitForURL(new RegExp(`/projects/${projectId}$`));
  await expect(grid(visitor.page)).toHaveAttribute('aria-busy', 'false');
}

before(async () => {
  if (!hasChromium()) return;
  [coffer, browser] = await Promise.all([startCoffer(), launchBrowser()]);
  owner = await seedAccount(coffer, 'refs');
  projectId = await seedProject(owner, 'Shop', VALUES);
  // Bob, a developer, keeps his own DB_HOST in production.
  bob = newAccount('bob');
  const invited = await inviteMember(owner.client, projectId, {
    email: bob.email,
    role: 'developer',
  });
  const token = await invitationToken(coffer, bob.email);
  const bobClient = await coffer.client();
  const created = await signUp(bobClient, { ...bob, invitationToken: token });
  await acceptInvitation(bobClient, invited.id, token);
  const vault = await openVault(owner.client, projectId, owner.keys);
  try {
    await grantMember(vault, created.user.id, {
      expectedFingerprint: fingerprint(
        created.keys.encryption.publicKey,
        created.keys.signing.publicKey,
      ),
    });
  } finally {
    vault.forget();
  }
  await setOverride(
    bobClient,
    projectId,
    'production',
    'DB_HOST',
    BOBS_HOST,
    overrideKeyOf(created.user.id, created.keys.encryption.secretKey),
  );
  ownerView = await Visitor.open(browser, coffer);
  ownerView.secret(owner.password, BOBS_HOST);
  await openGrid(ownerView, owner);
  bobView = await Visitor.open(browser, coffer);
  bobView.secret(bob.password, BOBS_HOST);
  await openGrid(bobView, bob);
});
after(async () => {
  await ownerView?.close();
  await bobView?.close();
  await browser?.close();
  await coffer?.stop();
});

const reveal = async (page: Visitor['page'], name: string, environment: string) => {
  const target = cell(page, name, environment);
  await target.hover();
  await target.getByRole('button', { name: `Reveal ${name} in ${environment}` }).click();
  return target;
};

test('a revealed reference shows its raw text marked and its resolved preview', async (t: TestContext) => {
  await onSharedPage(t, ownerView, 'references-preview', async ({ page }) => {
    const target = await reveal(page, 'URL', 'production');
    await expect(target.locator('.value .reference').first()).toHaveText('${staging.DB_USER}');
    await expect(target.locator('.preview')).toHaveText(
      /resolves to postgres:\/\/app_user@db\.internal\/shop/,
    );
  });
});

test('a reference typed in a cell previews what it resolves to, before saving', async (t: TestContext) => {
  await onSharedPage(t, ownerView, 'references-typed', async ({ page }) => {
    await editCell(page, 'DB_HOST', 'development', '${staging.DB_USER}-dev.local');
    const target = await reveal(page, 'DB_HOST', 'development');
    await expect(target.locator('.preview')).toHaveText(/resolves to app_user-dev\.local/);
    await screenshots(page, 'references-grid'); // light and dark, 1280 and 375 px
  });
});

test('typing ${ in a cell offers the names of the environments the user can read', async (t: TestContext) => {
  await onSharedPage(t, ownerView, 'references-completion', async ({ page }) => {
    await cell(page, 'URL', 'staging').dblclick({ position: { x: 12, y: 12 } });
    const editor = page.getByLabel('Value of URL in staging', { exact: true });
    await editor.pressSequentially('x-${');
    const offered = page.getByRole('list', { name: /References you can insert/ });
    await expect(offered.getByRole('button', { name: '${DB_USER}' })).toBeVisible();
    await expect(offered.getByRole('button', { name: '${production.' })).toBeVisible();
    await editor.pressSequentially('production.DB');
    await expect(offered.getByRole('button', { name: '${production.DB_HOST}' })).toBeVisible();
    await editor.press('Tab');
    await expect(editor).toHaveValue('x-${production.DB_HOST}');
    await editor.press('Escape');
    await expect(editor).toBeHidden();
  });
});

test('a broken reference is marked in its cell with the reason, even masked', async (t: TestContext) => {
  await onSharedPage(t, ownerView, 'references-broken', async ({ page }) => {
    const target = cell(page, 'BROKEN', 'production');
    await expect(target.locator('.reference-error')).toHaveText(
      /this environment has no secret NOPE/,
    );
  });
});

test('an override shows as "your value" to its owner only, with the team value beside it', async (t: TestContext) => {
  await onSharedPage(t, bobView, 'references-override', async ({ page }) => {
    const target = cell(page, 'DB_HOST', 'production');
    await expect(target.locator('.override-mark')).toHaveText('your value');
    await target.hover();
    await target.getByRole('button', { name: 'Reveal DB_HOST in production' }).click();
    await expect(target.locator('.override-value')).toHaveText(BOBS_HOST);
    await expect(target.locator('.team-value')).toHaveText(/team: db\.internal/);
    await screenshots(page, 'references-override');
  });
  await onSharedPage(t, ownerView, 'references-no-override', async ({ page }) => {
    const target = cell(page, 'DB_HOST', 'production');
    assert.equal(await target.locator('.override-mark').count(), 0, 'not for another member');
    assert.ok(!((await page.content()) ?? '').includes(BOBS_HOST));
  });
  if (!bobView) serviceMissing(t, 'Chromium (/usr/bin/chromium)');
});
