import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { promisify } from 'node:util';
import { CliError } from '../cli/errors.js';

const run = promisify(execFile);

const MARKER = '# coffer scan pre-commit hook';

/** `'…'` for a POSIX shell. */
const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * The command that runs this very `coffer`: the single executable, or node
 * with the bundle. Absolute, so the hook works from a GUI client's PATH too.
 */
function selfCommand(): string {
  const script = process.argv[1];
  if (script && /\.(c|m)?js$/.test(script) && script !== process.execPath)
    return `${quote(process.execPath)} ${quote(script)}`;
  return quote(process.execPath);
}

/**
 * Writes `pre-commit` in the repository's hooks directory (`core.hooksPath`
 * honoured). An existing hook that is not ours is left alone unless `force`.
 * Returns the hook's path.
 */
export async function installHook(
  cwd: string,
  options: { force: boolean; extraArgs: string[] },
): Promise<string> {
  let hooksDir: string;
  try {
    const { stdout } = await run('git', ['-C', cwd, 'rev-parse', '--git-path', 'hooks']);
    hooksDir = stdout.trim();
  } catch {
    throw new CliError('not_a_git_repository', `${cwd} is not inside a git repository`);
  }
  if (!isAbsolute(hooksDir)) hooksDir = join(cwd, hooksDir);
  mkdirSync(hooksDir, { recursive: true });
  const hook = join(hooksDir, 'pre-commit');
  if (existsSync(hook) && !readFileSync(hook, 'utf8').includes(MARKER) && !options.force) {
    throw new CliError(
      'hook_exists',
      `${hook} exists and was not written by coffer: add \`coffer scan --staged\` to it, or pass --force to replace it`,
    );
  }
  const args = ['scan', '--staged', ...options.extraArgs].map(quote).join(' ');
  const script = [
    '#!/bin/sh',
    MARKER,
    '# Scans the lines this commit adds for the team’s secret values (matching is',
    '# local; no value leaves this machine). Skip once with `git commit --no-verify`.',
    `exec ${selfCommand()} ${args}`,
    '',
  ].join('\n');
  writeFileSync(hook, script, { mode: 0o755 });
  chmodSync(hook, 0o755);
  return hook;
}
