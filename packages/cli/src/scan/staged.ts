import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CliError } from '../cli/errors.js';
import type { Hit, SecretScanner } from './scanner.js';

const run = promisify(execFile);

export interface StagedHit extends Hit {
  path: string;
}

/** The staged changes as a diff with no context (started before the values are loaded). */
export async function stagedDiff(repo: string): Promise<Buffer> {
  let stdout: Buffer;
  try {
    ({ stdout } = await run(
      'git',
      [
        '-C',
        repo,
        '-c',
        'core.quotePath=false',
        'diff',
        '--cached',
        '--no-color',
        '--no-ext-diff',
        '--no-renames',
        '--unified=0',
        '--diff-filter=ACMRTU',
      ],
      { maxBuffer: 1 << 30, encoding: 'buffer' },
    ));
  } catch (err) {
    throw new CliError('git_failed', `git diff --cached failed: ${(err as Error).message}`);
  }
  return stdout;
}

/**
 * The pre-commit hook's fast path: only the lines the staged changes add
 * (`git diff --cached -U0`), not the tree. Each file's added lines are scanned
 * together, so a value split over consecutive added lines is found too; the
 * line numbers are those of the staged file. The caller zeroes the diff.
 */
export function scanStaged(
  stdout: Buffer,
  scanner: SecretScanner,
): { hits: StagedHit[]; files: number; bytes: number } {
  const hits: StagedHit[] = [];
  let files = 0;
  let bytes = 0;
  let path: string | null = null;
  let lines: Buffer[] = [];
  let numbers: number[] = [];
  let next = 0;
  const flush = () => {
    if (path !== null && lines.length > 0) {
      files++;
      const joined = Buffer.concat(lines.flatMap((l) => [l, NEWLINE]));
      bytes += joined.length;
      for (const hit of scanner.scanBuffer(joined))
        hits.push({ ...hit, path, line: numbers[hit.line - 1] ?? hit.line });
      joined.fill(0);
    }
    lines = [];
    numbers = [];
  };
  for (let at = 0; at < stdout.length;) {
    let end = stdout.indexOf(10, at);
    if (end < 0) end = stdout.length;
    const line = stdout.subarray(at, end);
    at = end + 1;
    if (line[0] === 0x2b /* + */) {
      if (line[1] === 0x2b && line[2] === 0x2b && line[3] === 0x20) {
        flush();
        const name = line.subarray(4).toString('utf8');
        path = name === '/dev/null' ? null : stripPrefix(unquote(name));
      } else {
        lines.push(line.subarray(1));
        numbers.push(next++);
      }
    } else if (line[0] === 0x40 /* @ */) {
      // @@ -a,b +c,d @@
      const m = /^@@ -\d+(?:,\d+)? \+(\d+)/.exec(line.subarray(0, 64).toString('latin1'));
      if (m) next = Number(m[1]);
    } else if (line.subarray(0, 5).toString('latin1') === 'diff ') flush();
  }
  flush();
  return { hits, files, bytes };
}

const NEWLINE = Buffer.from('\n');

const stripPrefix = (name: string) => (name.startsWith('b/') ? name.slice(2) : name);

function unquote(name: string): string {
  if (!name.startsWith('"')) return name;
  try {
    return JSON.parse(name) as string;
  } catch {
    return name;
  }
}
