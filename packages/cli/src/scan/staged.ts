import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CliError } from '../cli/errors.js';
import { readBlobs } from './history.js';
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
): { hits: StagedHit[]; files: number; bytes: number; binaries: number } {
  let binaries = 0;
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
    else if (line.subarray(0, 13).toString('latin1') === 'Binary files ') binaries++;
  }
  flush();
  return { hits, files, bytes, binaries };
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

/**
 * `--staged --binary`: the staged files git's diff shows only as "Binary
 * files … differ", each scanned whole as the index holds it (a binary diff
 * has no added lines to pick). Null once more than `limit` bytes were read
 * (the keyed-hash cache's path gives way to the full one).
 */
export async function scanStagedBinaries(
  repo: string,
  scanner: SecretScanner,
  limit = Infinity,
): Promise<{ hits: StagedHit[]; files: number; bytes: number } | null> {
  let stdout: Buffer;
  try {
    ({ stdout } = await run(
      'git',
      [
        '-C',
        repo,
        'diff',
        '--cached',
        '--raw',
        '--numstat',
        '-z',
        '--no-renames',
        '--no-abbrev',
        '--no-ext-diff',
        '--diff-filter=ACMRTU',
      ],
      { maxBuffer: 1 << 30, encoding: 'buffer' },
    ));
  } catch (err) {
    throw new CliError('git_failed', `git diff --cached failed: ${(err as Error).message}`);
  }
  // Raw records (":old new oldId newId status", then the path) and numstat
  // records ("added<TAB>deleted<TAB>path"; "-" for both when binary).
  const fields = stdout.toString('utf8').split('\0');
  const blobOf = new Map<string, string>();
  const binary: string[] = [];
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (field.startsWith(':')) {
      const id = field.split(' ')[3];
      const path = fields[++i];
      if (id && path !== undefined) blobOf.set(path, id);
    } else if (field.startsWith('-\t-\t')) binary.push(field.slice(4));
  }
  const wanted = new Map<string, string>(); // blob → path
  for (const path of binary) {
    const id = blobOf.get(path);
    if (id && !/^0+$/.test(id)) wanted.set(id, path);
  }
  const hits: StagedHit[] = [];
  let bytes = 0;
  let over = false;
  await readBlobs(repo, [...wanted.keys()], (id, content) => {
    bytes += content.length;
    if (over || bytes > limit) {
      over = true;
      return;
    }
    for (const hit of scanner.scanBuffer(content)) hits.push({ ...hit, path: wanted.get(id)! });
  });
  return over ? null : { hits, files: wanted.size, bytes };
}
