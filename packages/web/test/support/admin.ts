// What the administration tests need beyond the shared harness (browser.ts,
// flows.ts, expect.ts): documented screenshots of the admin screens, members
// made quickly through the SDK (invited, signed up with the e-mail's token,
// accepted, granted), and the REAL built `coffer` CLI run as a pipeline would.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import type { TestContext } from 'node:test';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  acceptInvitation,
  fingerprint,
  grantMember,
  inviteMember,
  signUp,
  type CofferClient,
  type LoggedIn,
  type Role,
} from '@coffer/sdk';
import { ROOT, a11yChecked, a11yFindings, checkA11y, screenshots, type Coffer } from './browser.js';
import { expect, type Page } from './expect.js';
import { newAccount, type Account } from './flows.js';

/** The page at 1280×800 and 375×740, light and dark (see `screenshots`). */
export const adminScreenshots = (page: Page, name: string): Promise<void> =>
  screenshots(page, name);

/** axe-core (collected for the file's accessibility test) and both screenshots. */
export async function adminPage(page: Page, name: string): Promise<void> {
  await checkA11y(page, name);
  await adminScreenshots(page, name);
}

type Login = LoggedIn & { client: CofferClient };

/** The token of the newest invitation e-mail to `email`, read from `$DATA_DIR/outbox`. */
export async function invitationToken(coffer: Coffer, email: string): Promise<string> {
  const link = await coffer.invitationLink(email);
  const token = new URL(link).searchParams.get('token');
  assert.ok(token, `the invitation link carries a token: ${link}`);
  return token;
}

/**
 * A member made through the SDK, as a second person would with the CLI:
 * invited by `admin`, signed up with the e-mail's token, accepted, and (for
 * admins and developers) granted the project key against their fingerprint.
 */
export async function sdkMember(
  coffer: Coffer,
  admin: Login,
  projectId: string,
  prefix: string,
  role: Role,
): Promise<{ account: Account; login: Login; memberId: string; fingerprint: string }> {
  const account = newAccount(prefix);
  const invited = await inviteMember(admin.client, projectId, { email: account.email, role });
  const token = await invitationToken(coffer, account.email);
  const client = await coffer.client();
  const created = await signUp(client, { ...account, invitationToken: token });
  await acceptInvitation(client, invited.id, token);
  const print = fingerprint(created.keys.encryption.publicKey, created.keys.signing.publicKey);
  if (role !== 'viewer') {
    const vault = await coffer.vault(admin, projectId);
    try {
      await grantMember(vault, created.user.id, { expectedFingerprint: print });
    } finally {
      vault.forget();
    }
  }
  return {
    account,
    login: { user: created.user, keys: created.keys, session: created.session, client },
    memberId: invited.id,
    fingerprint: print,
  };
}

export const CLI = join(ROOT, 'packages/cli/dist/coffer.js');

function newest(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let out = stat.mtimeMs;
  for (const name of readdirSync(path)) out = Math.max(out, newest(join(path, name)));
  return out;
}

/** Builds the CLI bundle when its sources (or the SDK's) are newer than it (the build renames atomically). */
export function ensureCliBuilt(): void {
  let built = 0;
  try {
    built = statSync(CLI).mtimeMs;
  } catch {
    // not built yet
  }
  const sources = Math.max(
    newest(join(ROOT, 'packages/cli/src')),
    newest(join(ROOT, 'packages/sdk/src')),
  );
  if (sources <= built) return;
  try {
    execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs'), 'cli'], {
      cwd: ROOT,
      stdio: 'pipe',
    });
  } catch (error) {
    if (!built) throw error;
    console.warn(`# CLI build failed, testing the previous build: ${String(error).slice(0, 400)}`);
  }
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `node packages/cli/dist/coffer.js …` with only PATH, an empty HOME and `env`: a CI job. */
export function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Opens one of the project's tabs from its navigation (an in-app move: the keys stay unlocked). */
export async function openTab(page: Page, tab: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: tab }).click();
  await page.waitForURL(
    tab === 'Secrets' ? /\/projects\/[^/]+$/ : new RegExp(`/${tab.toLowerCase()}$`),
  );
}

/** The rows of the main table (its header row left out). */
export const bodyRows = (page: Page) =>
  page
    .getByRole('main')
    .getByRole('table')
    .getByRole('row')
    .filter({ hasNot: page.getByRole('columnheader') });

/** The e-mail addresses of the members table, in the order shown. */
export async function memberEmails(page: Page): Promise<string[]> {
  await expect(page.getByRole('main').getByRole('table')).toHaveAttribute('aria-busy', 'false');
  const texts = await bodyRows(page).allInnerTexts();
  return texts.map((text) => /^\S+@\S+$/m.exec(text)?.[0] ?? text);
}

/**
 * One of the members list's filters (Role, Status, Sort by, Order). The invite
 * form has a "Role" too; the filters are the ones offering "Any".
 */
export const filterSelect = (page: Page, label: string) => {
  const select = page.getByRole('main').getByRole('combobox', { name: label, exact: true });
  return label === 'Role' || label === 'Status'
    ? select.filter({ has: page.getByRole('option', { name: 'Any', exact: true }) })
    : select;
};

/** An accessibility defect of the app, reported and not fixed yet: which page, rule and element. */
export interface KnownA11yBug {
  page: RegExp;
  id: string;
  target: RegExp;
  reason: string;
}

/**
 * The file's accessibility verdict: 0 serious or critical axe findings on the
 * pages checked. Findings that are all known bugs (page, rule and element)
 * mark the test TODO with their reasons; anything else fails it.
 */
export function assertAdminAccessible(t: TestContext, known: KnownA11yBug[] = []): void {
  assert.ok(a11yChecked.length > 0, 'no page was checked');
  if (a11yFindings.length === 0) return;
  const report = a11yFindings
    .map(
      (f) =>
        `${f.page}: ${f.id} (${f.impact}) ${f.help}\n      ${f.targets.slice(0, 6).join('\n      ')}`,
    )
    .join('\n    ');
  const bugOf = (f: (typeof a11yFindings)[number]) =>
    known.find(
      (k) => k.page.test(f.page) && k.id === f.id && f.targets.every((x) => k.target.test(x)),
    );
  const reasons = a11yFindings.map(bugOf);
  if (reasons.every(Boolean)) t.todo([...new Set(reasons.map((r) => r!.reason))].join('; '));
  throw new Error(`accessibility violations (serious/critical):\n    ${report}`);
}
