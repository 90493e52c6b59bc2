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

type Coffer = (args: string[], input?: string) => Promise<CliResult>;

export async function firstSteps(coffer: Coffer, email: string): Promise<void> {
  assert.equal(ok(await coffer(['--version']), '--version').stdout, `coffer ${CLI_VERSION}\n`);
  ok(
    await coffer(
      ['signup', '--email', email, '--name', 'Installed', '--password-stdin'],
      'installed coffer password\n',
    ),
    'signup',
  );
  ok(await coffer(['projects', 'create', 'Installed']), 'projects create');
  ok(await coffer(['setup', '--project', 'Installed', '--env', 'development']), 'setup');
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
