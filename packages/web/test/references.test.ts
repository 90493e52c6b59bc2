// References and personal overrides in the secrets grid (real Chromium, real
// server): a reference typed in a cell previews its resolved value on reveal, a
// broken one is marked with its reason, and an override shows as "your value"
// to its owner only, with the team value beside it. The owner sets, changes and
// removes an override from the grid (sealed in the browser: the server gets
// ciphertext), and an admin sees which names a member overrides, never a value.
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
  readOverrides,
  type CofferClient,
  type OverrideKey,
  setOverride,
  signUp,
} from '@coffer/sdk';
import {
  Visitor,
  hasChromium,
  onSharedPage,
  screenshots,
  serviceMissing,
  startCofferAndBrowser,
  type Coffer,
  CHROMIUM_MISSING,
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
const MINE = 'bob-local-user';
const MINE_AGAIN = 'bob-other-user';

let browser: Browser | undefined;
let coffer: Coffer | undefined;
let owner: Seeded;
let bob: Account;
let projectId: string;
let ownerView: Visitor | undefined;
let bobView: Visitor | undefined;
let bobClient: CofferClient;
let bobKey: OverrideKey;

async function openGrid(visitor: Visitor, account: Account): Promise<void> {
  await visitor.goto(`/projects/${projectId}`);
  await visitor.page.waitForURL(/\/signin\?next=/);
  await signIn(visitor.page, account);
  await visitor.page.waitForURL(new RegExp(`/projects/${projectId}$`));
  await expect(grid(visitor.page)).toHaveAttribute('aria-busy', 'false');
}

before(async () => {
  if (!hasChromium()) return;
  [coffer, browser] = await startCofferAndBrowser();
  owner = await seedAccount(coffer, 'refs');
  projectId = await seedProject(owner, 'Shop', VALUES);
  // Bob, a developer, keeps his own DB_HOST in production.
  bob = newAccount('bob');
  const invited = await inviteMember(owner.client, projectId, {
    email: bob.email,
    role: 'developer',
  });
  const token = await invitationToken(coffer, bob.email);
  bobClient = await coffer.client();
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
  bobKey = overrideKeyOf(created.user.id, created.keys.encryption.secretKey);
  await setOverride(bobClient, projectId, 'production', 'DB_HOST', BOBS_HOST, bobKey);
  ownerView = await Visitor.open(browser, coffer);
  ownerView.secret(owner.password, BOBS_HOST);
  await openGrid(ownerView, owner);
  bobView = await Visitor.open(browser, coffer);
  bobView.secret(bob.password, BOBS_HOST, MINE, MINE_AGAIN);
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
  if (!bobView) serviceMissing(t, CHROMIUM_MISSING);
});

test('an override is set, changed and removed from the grid, sealed in the browser: the server gets ciphertext only', async (t: TestContext) => {
  await onSharedPage(t, bobView, 'references-override-edit', async ({ page }) => {
    const sent: { method: string; body: string }[] = [];
    page.on('request', (request) => {
      if (/\/overrides\//.test(request.url()))
        sent.push({ method: request.method(), body: request.postData() ?? '' });
    });
    const target = cell(page, 'DB_USER', 'staging');
    assert.equal(await target.locator('.override-mark').count(), 0);
    await target.hover();
    await target.getByRole('button', { name: 'Override DB_USER in staging for me' }).click();
    const dialog = page.getByRole('dialog', { name: 'Override DB_USER for me' });
    await dialog.getByLabel('Your value').fill(MINE);
    await screenshots(page, 'references-override-dialog');
    await dialog.getByRole('button', { name: 'Save my override' }).click();
    await expect(dialog).toBeHidden();
    await expect(target.locator('.override-mark')).toHaveText('your value');

    // What left the browser: an envelope under Bob's own key, not the value.
    const put = sent.find((r) => r.method === 'PUT');
    assert.ok(put, 'the override was sent');
    assert.ok(!put.body.includes(MINE), 'never the plaintext');
    assert.match((JSON.parse(put.body) as { value: string }).value, /^v1\.ov\./);
    // And the server holds what Bob's key opens.
    let mine = await readOverrides(bobClient, projectId, bobKey);
    assert.equal([...mine.values()].find((v) => v.DB_USER !== undefined)?.DB_USER, MINE);

    await target.hover();
    await target.getByRole('button', { name: 'Reveal DB_USER in staging' }).click();
    await expect(target.locator('.override-value')).toHaveText(MINE);
    await expect(target.locator('.team-value')).toHaveText(/team: app_user/);

    await target.getByRole('button', { name: 'Change my override of DB_USER in staging' }).click();
    const change = page.getByRole('dialog', { name: 'Change my override of DB_USER' });
    await expect(change.getByLabel('Your value')).toHaveValue(MINE);
    await change.getByLabel('Your value').fill(MINE_AGAIN);
    await change.getByRole('button', { name: 'Save my override' }).click();
    await expect(change).toBeHidden();
    await expect(target.locator('.override-value')).toHaveText(MINE_AGAIN);
    await target.hover(); // its actions: change or remove the override
    await screenshots(page, 'references-override-set');

    await target.hover();
    await target.getByRole('button', { name: 'Remove my override of DB_USER in staging' }).click();
    const remove = page.getByRole('dialog', { name: 'Remove your override of DB_USER?' });
    await remove.getByRole('button', { name: 'Remove my override' }).click();
    await expect(remove).toBeHidden();
    await expect(target.locator('.override-mark')).toHaveCount(0);
    await expect(target.locator('.value')).toHaveText('app_user');
    assert.deepEqual(
      sent.map((r) => r.method),
      ['PUT', 'PUT', 'DELETE'],
    );
    assert.ok(sent.every((r) => !r.body.includes(MINE) && !r.body.includes(MINE_AGAIN)));
    mine = await readOverrides(bobClient, projectId, bobKey);
    assert.ok(![...mine.values()].some((v) => v.DB_USER !== undefined), 'removed on the server');
  });
});

test('an admin sees which names a member overrides on the Members page, never a value; a developer only their own', async (t: TestContext) => {
  await onSharedPage(t, ownerView, 'references-member-overrides', async ({ page }) => {
    await page.getByRole('link', { name: 'Members', exact: true }).click();
    const row = page.getByRole('row').filter({ hasText: bob.email });
    await row.getByText('Personal overrides').click();
    const names = row.getByRole('list', { name: /Names .* overrides/ });
    await expect(names).toHaveText(/DB_HOST in production/);
    assert.equal(await names.getByRole('listitem').count(), 1);
    assert.ok(!(await page.content()).includes(BOBS_HOST), 'no value on the page');
    await screenshots(page, 'members-overrides');
    await page.getByRole('link', { name: 'Secrets', exact: true }).click();
  });
  await onSharedPage(t, bobView, 'references-own-overrides', async ({ page }) => {
    await page.getByRole('link', { name: 'Members', exact: true }).click();
    await expect(page.getByRole('row').filter({ hasText: bob.email })).toBeVisible();
    await expect(page.getByText('Personal overrides')).toHaveCount(1);
    await page.getByRole('link', { name: 'Secrets', exact: true }).click();
  });
});
