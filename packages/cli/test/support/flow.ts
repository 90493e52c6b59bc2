// The first minutes of a new user, run by whichever `coffer` a test installed
// (the npm-installed command, the single executable): sign up, create a
// project, link a directory, store a secret, and run a command with it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, type CliResult } from './harness.js';

export const CLI_VERSION = (
  JSON.parse(readFileSync(join(ROOT, 'packages/cli/package.json'), 'utf8')) as { version: string }
).version;

export function ok(r: CliResult, what: string): CliResult {
  assert.equal(r.code, 0, `${what} failed (${r.code}):\n${r.stdout}\n${r.stderr}`);
  return r;
}

/**
 * Asserts that `r` failed the CLI's way, exit `exitCode` and one stderr line
 * `coffer: … (code)`, and returns that line.
 */
export function errorLine(r: CliResult, exitCode: number, code: string): string {
  assert.equal(
    r.code,
    exitCode,
    `expected exit ${exitCode}, got ${r.code}:\n${r.stdout}\n${r.stderr}`,
  );
  const lines = r.stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, `expected one line on stderr:\n${r.stderr}`);
  assert.match(lines[0]!, new RegExp(`^coffer: .+ \\(${code}\\)$`));
  return lines[0]!;
}

type Coffer = (args: string[], input?: string) => Promise<CliResult>;

/** Signs a new user up, creates `project` and links the working directory to its `env`. */
export async function signUpAndSetUp(
  coffer: Coffer,
  user: { email: string; name: string; password: string },
  project: string,
  env: string,
): Promise<void> {
  ok(
    await coffer(
      ['signup', '--email', user.email, '--name', user.name, '--password-stdin'],
      `${user.password}\n`,
    ),
    'signup',
  );
  ok(await coffer(['projects', 'create', project]), 'projects create');
  ok(await coffer(['setup', '--project', project, '--env', env]), 'setup');
}

export async function firstSteps(coffer: Coffer, email: string): Promise<void> {
  assert.equal(ok(await coffer(['--version']), '--version').stdout, `coffer ${CLI_VERSION}\n`);
  const user = { email, name: 'Installed', password: 'installed coffer password' };
  await signUpAndSetUp(coffer, user, 'Installed', 'development');
  const value = 'it works: pa$$word "quoted" ✓';
  ok(await coffer(['secrets', 'set', 'GREETING', value]), 'secrets set');
  ok(await coffer(['secrets', 'set', 'PEM', '--stdin'], 'line one\nline two\n'), 'set --stdin');
  const run = ok(await coffer(['run', '--', 'printenv', 'GREETING']), 'run -- printenv');
  assert.equal(run.stdout, `${value}\n`);
  const multi = ok(await coffer(['run', '--', 'printenv', 'PEM']), 'run -- printenv PEM');
  assert.equal(multi.stdout, 'line one\nline two\n');
  // The child's exit code comes back.
  assert.equal((await coffer(['run', '--', 'printenv', 'NOT_A_SECRET'])).code, 1);
}

/**
 * Invites `email` as a developer (as `admin`), signs them up from the
 * invitation e-mail, accepts with the introduction link and grants them the
 * vault key: a member who reads secrets.
 */
export async function addDeveloper(
  admin: Coffer,
  member: Coffer,
  link: (email: string) => Promise<string>,
  user: { email: string; name: string; password: string },
): Promise<void> {
  const invited = JSON.parse(
    ok(await admin(['members', 'invite', user.email, '--role', 'developer', '--json']), 'invite')
      .stdout,
  ) as { introduction_link: string };
  const emailLink = await link(user.email);
  ok(
    await member(
      [
        'signup',
        '--email',
        user.email,
        '--name',
        user.name,
        '--password-stdin',
        '--invitation',
        emailLink,
      ],
      `${user.password}\n`,
    ),
    'signup',
  );
  ok(
    await member(['invitations', 'accept', '--introduction', invited.introduction_link]),
    'accept',
  );
  ok(await admin(['vault', 'grant', user.email, '--yes']), 'grant');
}
