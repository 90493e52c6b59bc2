// API keys and CI tokens made in the dashboard and used by the REAL built CLI,
// as a pipeline would: the credential is shown once (and copied to the
// clipboard), reads only the environments of its scopes, and stops working the
// moment it is revoked in the browser. A developer's CI token lives 15 minutes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { listCiTokens } from '@coffer/sdk';
import {
  Visitor,
  hasChromium,
  serviceMissing,
  startCofferAndBrowser,
  type Coffer,
  CHROMIUM_MISSING,
} from './support/browser.js';
import { eventually, expect } from './support/expect.js';
import {
  addSecret,
  createProject,
  editCell,
  newAccount,
  reviewAndSave,
  signIn,
  signUp,
} from './support/flows.js';
import {
  adminPage,
  assertAdminAccessible,
  bodyRows,
  ensureCliBuilt,
  openTab,
  watched,
  runCli,
  sdkMember,
} from './support/admin.js';

let browser: Browser | undefined;
let coffer: Coffer | undefined;
const visitors: Visitor[] = [];

before(async () => {
  if (!hasChromium()) return;
  ensureCliBuilt();
  [coffer, browser] = await startCofferAndBrowser();
});
after(async () => {
  for (const visitor of visitors) await visitor.close().catch(() => undefined);
  await browser?.close();
  await coffer?.stop();
});

const VALUES = {
  staging: 'whsec_staging_7c1e0b94d2',
  production: 'whsec_production_e58a13f0c6',
};
const admin = newAccount('tokens');
let projectId = '';

/** `coffer run` in a CI job holding only the credential: prints one variable. */
const printenv = (credential: string, environment: string) =>
  runCli(
    [
      'run',
      '--server',
      coffer!.url,
      '--ca',
      coffer!.caFile,
      '--env',
      environment,
      '--',
      'printenv',
      'WEBHOOK_SECRET',
    ],
    { COFFER_TOKEN: credential },
  );

/** Runs the dialog's `VAR=… coffer run … -- <command>` line with the built CLI. */
function runLine(line: string, command: string[]) {
  const words = line.split(' ');
  const env: Record<string, string> = { COFFER_CA_FILE: coffer!.caFile };
  while (/^[A-Z_]+=/.test(words[0]!)) {
    const [name, ...value] = words.shift()!.split('=');
    env[name!] = value.join('=');
  }
  assert.equal(words.shift(), 'coffer');
  assert.equal(words.pop(), '<command>');
  return runCli([...words, ...command], env);
}

test('an API key with staging:read: shown once and copied, read by the CLI, refused production, revoked', async (t) => {
  if (!browser || !coffer) return serviceMissing(t, CHROMIUM_MISSING);
  const visitor = await Visitor.open(browser, coffer, {
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  visitors.push(visitor);
  visitor.secret(admin.password, ...Object.values(VALUES));
  const { page } = visitor;
  await watched(visitor, 'api-key', async () => {
    await signUp(visitor, admin);
    projectId = await createProject(page, 'Webhooks');
    await addSecret(page, 'WEBHOOK_SECRET', VALUES.staging, ['staging', 'production']);
    await editCell(page, 'WEBHOOK_SECRET', 'production', VALUES.production);
    await reviewAndSave(page, 2);

    await openTab(page, 'Tokens');
    await expect(page.getByRole('heading', { name: 'API keys' })).toBeVisible();
    await page.getByRole('button', { name: 'New API key' }).click();
    const form = page.getByRole('dialog', { name: 'New API key' });
    await form.getByLabel('Name', { exact: true }).fill('deploy-staging');
    await form.getByLabel('Role', { exact: true }).selectOption('developer');
    await form.getByLabel('Scope in staging').selectOption('read');
    await form.getByRole('button', { name: 'Create' }).click();

    // Shown once, with a copy button that fills the clipboard.
    const shown = page.getByRole('dialog', { name: 'Your new API key' });
    await expect(shown).toContainText('only once');
    const credential = ((await shown.getByLabel('Credential').textContent()) ?? '').trim();
    assert.match(credential, /^\S+\.\S+$/, 'an id, a dot, the key part');
    visitor.secret(credential.split('.')[1]!);
    await shown.getByRole('button', { name: 'Copy', exact: true }).click();
    await expect(shown.getByRole('button', { name: 'Copied', exact: true })).toBeVisible();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), credential);
    // A ready-to-copy command: this server, the credential, its environment.
    const line = (
      (await shown.getByLabel('Run a command with its secrets').textContent()) ?? ''
    ).trim();
    assert.equal(
      line,
      `COFFER_SERVER=${coffer!.url} COFFER_TOKEN=${credential} coffer run --env staging -- <command>`,
    );
    await shown.getByRole('button', { name: 'Copy the command' }).click();
    await expect(shown.getByRole('button', { name: 'Copied the command' })).toBeVisible();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), line);
    // Pasted into a pipeline as it is (the test's server has its own CA, and <command> filled in).
    const fromLine = await runLine(line, ['printenv', 'WEBHOOK_SECRET']);
    assert.equal(fromLine.code, 0, fromLine.stderr);
    assert.equal(fromLine.stdout.trim(), VALUES.staging);
    await adminPage(page, 'token-credential');
    await shown.getByRole('button', { name: 'Done' }).click();
    await expect(shown).toBeHidden();
    assert.ok(!(await page.content()).includes(credential), 'not shown again');

    const row = bodyRows(page).filter({ hasText: 'deploy-staging' });
    await expect(row).toContainText('staging:read');
    await expect(row).toContainText('developer');
    await expect(row).toContainText(`by ${admin.name} (${admin.email})`);
    await expect(row).toContainText('in 3 months');
    await expect(row).toContainText('active');

    // The CLI with nothing but the credential: staging yes, production no.
    const staging = await printenv(credential, 'staging');
    assert.equal(staging.code, 0, staging.stderr);
    assert.equal(staging.stdout.trim(), VALUES.staging);
    const production = await printenv(credential, 'production');
    assert.notEqual(production.code, 0, 'production is outside the scopes');
    assert.ok(!production.stdout.includes(VALUES.production));
    assert.match(production.stderr, /not read values \(no_value\)/);

    // Revoked in the browser (asking first): the same command is now unauthenticated.
    await row.getByRole('button', { name: 'Revoke deploy-staging' }).click();
    const confirm = page.getByRole('dialog', { name: 'Revoke deploy-staging?' });
    await expect(confirm).toContainText('refused from now on');
    await confirm.getByRole('button', { name: 'Revoke' }).click();
    await expect(confirm).toBeHidden();
    await expect(row).toContainText('revoked just now');
    assert.equal(await row.getByRole('button', { name: 'Revoke deploy-staging' }).count(), 0);
    await adminPage(page, 'tokens');
    const refused = await printenv(credential, 'staging');
    assert.equal(refused.code, 1, refused.stderr);
    assert.equal(refused.stdout, '');
    assert.match(refused.stderr, /unauthenticated/);

    // The audit log names the key, not its id: what it read, and who revoked it.
    await openTab(page, 'Audit');
    const sentences = page
      .getByRole('list', { name: 'Audit events' })
      .locator('summary .audit-sentence');
    await eventually(
      'the key named in the audit log',
      async () => (await sentences.allTextContents()).map((s) => s.replace(/\s+/g, ' ').trim()),
      (list) =>
        list.includes(`${admin.name} revoked API key deploy-staging`) &&
        list.some((s) => /^API key deploy-staging read .*staging/.test(s)),
    );
  });
});

test('a developer creates a CI token valid for 15 minutes; it lists its expiry and reads staging', async (t) => {
  if (!browser || !coffer || !projectId) return serviceMissing(t, CHROMIUM_MISSING);
  const login = await coffer.logIn(admin.email, admin.password);
  const developer = await sdkMember(coffer, login, projectId, 'pipeline', 'developer');
  const visitor = await Visitor.open(browser, coffer);
  visitors.push(visitor);
  visitor.secret(developer.account.password, ...Object.values(VALUES));
  const { page } = visitor;
  await watched(visitor, 'ci-token', async () => {
    await visitor.goto(`/projects/${projectId}/tokens`);
    await signIn(page, developer.account);
    await page.waitForURL(new RegExp(`/projects/${projectId}/tokens$`));
    await expect(page.getByRole('heading', { name: 'CI tokens' })).toBeVisible();
    assert.equal(await page.getByRole('heading', { name: 'API keys' }).count(), 0);
    // One empty state, not a count of nothing under it.
    await expect(page.getByRole('main')).toContainText('No CI tokens yet.');
    assert.doesNotMatch((await page.getByRole('main').textContent()) ?? '', /0 CI tokens|None yet/);
    await adminPage(page, 'tokens-empty');
    assert.equal(await page.getByRole('button', { name: 'New API key' }).count(), 0);

    await page.getByRole('button', { name: 'New CI token' }).click();
    const form = page.getByRole('dialog', { name: 'New CI token' });
    await form.getByLabel('Name', { exact: true }).fill('ci-staging');
    const create = form.getByRole('button', { name: 'Create' });
    await expect(create).toBeDisabled();
    await expect(form).toContainText('Choose at least one environment.');
    await form.getByLabel('Scope in staging').selectOption('read');
    await form.getByLabel('Valid for').selectOption({ label: '15 minutes' });
    await expect(create).toBeEnabled();
    await create.click();
    const shown = page.getByRole('dialog', { name: 'Your new CI token' });
    const credential = ((await shown.getByLabel('Credential').textContent()) ?? '').trim();
    assert.match(credential, /^\S+\.\S+$/);
    visitor.secret(credential.split('.')[1]!);
    await shown.getByRole('button', { name: 'Done' }).click();

    const row = bodyRows(page).filter({ hasText: 'ci-staging' });
    await expect(row).toContainText('staging:read');
    await expect(row).toContainText('in 15 minutes');
    await expect(row).toContainText(`by ${developer.account.name}`);
    await expect(row).toContainText('active');
    const [token] = (await listCiTokens(login.client, projectId)).data.filter(
      (x) => x.name === 'ci-staging',
    );
    assert.ok(token, 'the admin sees the token through the API');
    const lifetime = Date.parse(token.expires_at) - Date.parse(token.created_at);
    assert.ok(Math.abs(lifetime - 15 * 60_000) < 5_000, `lives 15 minutes: ${lifetime} ms`);
    await adminPage(page, 'ci-tokens');

    const run = await printenv(credential, 'staging');
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), VALUES.staging);
  });
});

test('accessibility: no serious or critical axe finding on the token pages', (t) => {
  if (!browser) return serviceMissing(t, CHROMIUM_MISSING);
  assertAdminAccessible(t);
});
