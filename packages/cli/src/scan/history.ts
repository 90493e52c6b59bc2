import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { CliError } from '../cli/errors.js';
import { looksBinary, type Hit, type SecretScanner } from './scanner.js';

/** A hit in a blob of the history, with the commit that first brought that blob in. */
export interface HistoryHit extends Hit {
  path: string;
  commit: string | null;
  authorDate: string | null;
}

export interface HistoryScan {
  hits: HistoryHit[];
  blobs: number;
  bytes: number;
  skippedBinary: number;
}

/**
 * Scans every blob reachable from any ref (branches, tags, remotes, stash),
 * deleted files included, each distinct blob once: `git rev-list --all
 * --objects` names them, `git cat-file --batch` streams their contents. Only
 * the blobs with a hit are then attributed: one pass of `git log --raw` from
 * the oldest commit finds the first commit whose diff adds each of them.
 * A leak kept through later edits of the file is in every later version of
 * it; those repeat the first one, so one finding is kept per secret, form
 * and path: the one of the earliest commit.
 */
export async function scanHistory(
  repo: string,
  scanner: SecretScanner,
  binary: boolean,
): Promise<HistoryScan> {
  const blobs = await reachableBlobs(repo);
  const found = new Map<string, Hit[]>(); // blob → hits
  let bytes = 0;
  let skippedBinary = 0;
  await readBlobs(repo, [...blobs.keys()], (sha, content) => {
    bytes += content.length;
    if (!binary && looksBinary(content)) {
      skippedBinary++;
      return;
    }
    const hits = scanner.scanBuffer(content);
    if (hits.length > 0) found.set(sha, hits);
  });
  const origins = found.size > 0 ? await firstCommits(repo, new Set(found.keys())) : new Map();
  const candidates: (HistoryHit & { order: number })[] = [];
  for (const [sha, hits] of found) {
    const origin = origins.get(sha);
    for (const hit of hits)
      candidates.push({
        ...hit,
        path: origin?.path ?? blobs.get(sha) ?? sha,
        commit: origin?.commit ?? null,
        authorDate: origin?.authorDate ?? null,
        order: origin?.order ?? Number.MAX_SAFE_INTEGER,
      });
  }
  // The earliest commit per (secret, form, path) keeps its findings; later copies go.
  const earliest = new Map<string, number>();
  for (const c of candidates) {
    const key = `${c.secret}\0${c.encoding}\0${c.path}`;
    earliest.set(key, Math.min(earliest.get(key) ?? Infinity, c.order));
  }
  const hits = candidates
    .filter((c) => earliest.get(`${c.secret}\0${c.encoding}\0${c.path}`) === c.order)
    .sort((a, b) => a.order - b.order || a.path.localeCompare(b.path) || a.line - b.line)
    .map(({ order: _order, ...hit }) => hit);
  return { hits, blobs: blobs.size, bytes, skippedBinary };
}

/** Every blob reachable from a ref, with one path it has (the most recent one git saw). */
async function reachableBlobs(repo: string): Promise<Map<string, string>> {
  const blobs = new Map<string, string>();
  const child = git(repo, [
    'rev-list',
    '--all',
    '--objects',
    '--filter=object:type=blob',
    '--filter-provided-objects',
  ]);
  const failed = collectFailure(child, 'git rev-list');
  for await (const line of createInterface({ input: child.stdout! })) {
    const space = line.indexOf(' ');
    if (space === 40 || space === 64) blobs.set(line.slice(0, space), line.slice(space + 1));
  }
  await failed;
  return blobs;
}

/** Streams each blob's content through `git cat-file --batch`. */
export async function readBlobs(
  repo: string,
  shas: string[],
  onBlob: (sha: string, content: Buffer) => void,
): Promise<void> {
  if (shas.length === 0) return;
  const child = git(repo, ['cat-file', '--batch'], 'pipe');
  const failed = collectFailure(child, 'git cat-file');
  child.stdin!.on('error', () => undefined); // a dead git is reported by `failed`
  child.stdin!.end(`${shas.join('\n')}\n`);

  let pending: Buffer = Buffer.alloc(0);
  let header: { sha: string; size: number } | null = null;
  let body: Buffer[] = [];
  let bodyLength = 0;
  for await (const chunk of child.stdout! as AsyncIterable<Buffer>) {
    let data = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    pending = Buffer.alloc(0);
    while (data.length > 0) {
      if (!header) {
        const nl = data.indexOf(10);
        if (nl < 0) {
          pending = data;
          break;
        }
        const [sha, type, size] = data.subarray(0, nl).toString('utf8').split(' ');
        data = data.subarray(nl + 1);
        if (type === 'missing' || size === undefined) continue;
        header = { sha: sha!, size: Number(size) };
        body = [];
        bodyLength = 0;
      }
      const need = header.size + 1 - bodyLength; // content and its trailing newline
      const take = Math.min(need, data.length);
      body.push(data.subarray(0, take));
      bodyLength += take;
      data = data.subarray(take);
      if (bodyLength === header.size + 1) {
        const content = Buffer.concat(body, bodyLength).subarray(0, header.size);
        onBlob(header.sha, content);
        content.fill(0);
        header = null;
        body = [];
        bodyLength = 0;
      }
    }
  }
  await failed;
}

/**
 * For each wanted blob, the first commit (oldest first, parents before
 * children) whose diff adds it: its id, author date, path, and its rank in
 * that order. Merges are compared with their first parent, so a blob a merge
 * resolution made is found too.
 */
async function firstCommits(
  repo: string,
  wanted: Set<string>,
): Promise<Map<string, { commit: string; authorDate: string; path: string; order: number }>> {
  const found = new Map<
    string,
    { commit: string; authorDate: string; path: string; order: number }
  >();
  const child = git(repo, [
    'log',
    '--all',
    '--topo-order',
    '--reverse',
    '--raw',
    '--no-abbrev',
    '--no-renames',
    '--diff-merges=first-parent',
    '--format=%x01%H %aI',
  ]);
  const failed = collectFailure(child, 'git log');
  let commit = '';
  let authorDate = '';
  let order = 0;
  for await (const line of createInterface({ input: child.stdout! })) {
    if (line.startsWith('\x01')) {
      [commit, authorDate] = line.slice(1).split(' ') as [string, string];
      order++;
      continue;
    }
    if (!line.startsWith(':')) continue;
    // :100644 100644 <old> <new> A\tpath
    const tab = line.indexOf('\t');
    const fields = line.slice(1, tab).split(' ');
    const blob = fields[3];
    if (blob && wanted.has(blob) && !found.has(blob)) {
      found.set(blob, { commit, authorDate, path: unquote(line.slice(tab + 1)), order });
      if (found.size === wanted.size) {
        child.kill();
        break;
      }
    }
  }
  await failed.catch((err: unknown) => {
    if (found.size < wanted.size) throw err;
  });
  return found;
}

/** git in `repo`, paths printed as they are (only tabs, newlines, quotes and backslashes quoted). */
const git = (repo: string, args: string[], stdin: 'pipe' | 'ignore' = 'ignore') =>
  spawn('git', ['-C', repo, '-c', 'core.quotePath=false', ...args], {
    stdio: [stdin, 'pipe', 'pipe'],
  });

/** A path as git prints it: C-quoted when it holds a tab, a newline, a quote or a backslash. */
function unquote(path: string): string {
  if (!path.startsWith('"')) return path;
  try {
    return JSON.parse(
      path.replace(
        /\\([0-7]{3})/g,
        (_, o: string) => `\\u00${parseInt(o, 8).toString(16).padStart(2, '0')}`,
      ),
    ) as string;
  } catch {
    return path;
  }
}

/** Resolves when the process exits 0; rejects with its stderr otherwise. */
function collectFailure(child: ReturnType<typeof spawn>, what: string): Promise<void> {
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.once('error', (err) =>
      reject(new CliError('git_failed', `${what} could not run: ${err.message}`)),
    );
    child.once('close', (code, signal) => {
      if (code === 0 || signal === 'SIGTERM') resolve();
      else reject(new CliError('git_failed', `${what} failed: ${stderr.trim() || `exit ${code}`}`));
    });
  });
}
