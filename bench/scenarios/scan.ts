// `coffer scan` measured: MB/s over a generated tree (500 MB by default,
// --scan-mb=N) with 10, 1,000 and 10,000 of the team's secrets in the same run
// (the cost must not grow with the number of secrets), over a generated
// 10,000-commit history, and the pre-commit hook on a 1,000-line staged diff.
// Each figure is the real `coffer` process against the bench's server, with an
// API key of a project holding that many secrets.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createApiKey, createProjectWithVault, openVault } from '@coffer/sdk';
import { median, timeRuns } from '../lib/measure.js';
import { targets, type ValueRow } from '../lib/report.js';
import type { ClientContext, ClientScenario } from './client.js';
import { environmentsOf, READ_ENV, writeSecrets } from './fixture.js';

const run = promisify(execFile);
const SECRET_COUNTS = [10, 1_000, 10_000] as const;
const HISTORY_COMMITS = 10_000;
const HOOK_LINES = 1_000;

interface ScanReport {
  findings: unknown[];
  summary: {
    bytes: number;
    seconds: number;
    cpu_seconds: number;
    scanned: number;
    secrets: number;
  };
}

/** A secret-like value: 16 to 64 characters of base64url, deterministic per index. */
const valueOf = (set: number) => (i: number) =>
  randomBytes(48)
    .toString('base64url')
    .slice(0, [16, 24, 32, 40, 48, 64][i % 6]!) + `${set}`;

interface Setup {
  /** COFFER_TOKEN per secret count. */
  credentials: Map<number, string>;
  /** Values of the 1,000-secret project planted in the tree, the history and the diff. */
  planted: string[];
  tree: string;
  treeBytes: number;
  /** Files of the tree holding a planted value: the 1,000-secret scan must find at least these. */
  leaks: number;
  env: (credential: string) => NodeJS.ProcessEnv;
  cli: string;
  cwd: string;
  rates: Map<number, number>;
}

let setupOnce: Promise<Setup | null> | null = null;
let setupFor: ClientContext['fixture'] | null = null;

/** One project per secret count, one tree; built once per backend, on first use. */
function setup(ctx: ClientContext): Promise<Setup | null> {
  if (setupOnce && setupFor === ctx.fixture) return setupOnce;
  setupFor = ctx.fixture;
  setupOnce = (async () => {
    const cli = join(ctx.root, 'packages/cli/dist/coffer.js');
    if (!existsSync(cli)) return null;
    const started = performance.now();
    const { client, admin } = ctx.fixture;
    const credentials = new Map<number, string>();
    let planted: string[] = [];
    for (const count of SECRET_COUNTS) {
      const project = await createProjectWithVault(client, admin.keys, {
        name: `bench scan ${count}`,
      });
      const vault = await openVault(client, project.id, admin.keys);
      const env = (await environmentsOf(client, project.id)).get(READ_ENV)!;
      const values: string[] = [];
      const make = valueOf(count);
      await writeSecrets(
        vault,
        env,
        count,
        (i) => `SCAN_SECRET_${i}`,
        (i) => (values[i] = make(i)),
      );
      if (count === 1_000) planted = values.slice(0, 20);
      const { credential } = await createApiKey(vault, {
        name: 'scan',
        role: 'developer',
        scopes: { [READ_ENV]: 'read' },
      });
      credentials.set(count, credential);
    }
    const cwd = mkdtempSync(join(ctx.workDir, 'scan-'));
    const tree = join(cwd, 'tree');
    const { bytes: treeBytes, leaks } = generateTree(
      tree,
      ctx.options.scanMegabytes * 1e6,
      planted,
    );
    ctx.say(
      `  setup: scan projects of ${SECRET_COUNTS.join(', ')} secrets, a ${(treeBytes / 1e6).toFixed(0)} MB tree (${((performance.now() - started) / 1000).toFixed(1)} s)`,
    );
    return {
      credentials,
      planted,
      tree,
      treeBytes,
      leaks,
      cli,
      cwd,
      rates: new Map(),
      env: (credential) => ({
        PATH: process.env.PATH ?? '',
        HOME: cwd,
        COFFER_SERVER: ctx.baseUrl,
        COFFER_TOKEN: credential,
        COFFER_CA_FILE: ctx.caFile,
      }),
    };
  })();
  return setupOnce;
}

async function scanJson(s: Setup, count: number, args: string[], cwd = s.cwd) {
  const started = performance.now();
  let stdout = '';
  try {
    ({ stdout } = await run(process.execPath, [s.cli, 'scan', '--json', ...args], {
      cwd,
      env: s.env(s.credentials.get(count)!),
      maxBuffer: 1 << 28,
    }));
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    if (e.code !== 1) throw new Error(`coffer scan failed: ${e.stderr ?? err}`);
    stdout = e.stdout ?? '';
  }
  return { report: JSON.parse(stdout) as ScanReport, wall: (performance.now() - started) / 1000 };
}

const row = (
  title: string,
  value: number,
  unit: ValueRow['unit'],
  detail: string,
  target: ValueRow['target'] = null,
): Omit<ValueRow, 'id' | 'backend'> => ({
  kind: 'value',
  title,
  value,
  unit,
  detail,
  target,
  pass: null,
});

function filesScenario(count: number, id: string): ClientScenario {
  const label = count.toLocaleString('en-US');
  return {
    id,
    title: `coffer scan files, ${label} secrets`,
    async run(ctx) {
      const s = await setup(ctx);
      if (!s) return null;
      // The first run over the tree fills the page cache; the figures are the next runs'.
      if (s.rates.size === 0) await scanJson(s, SECRET_COUNTS[0], [s.tree]);
      const runs = ctx.options.quick ? 1 : 3;
      // Per second of the scanner's CPU time: on a shared machine the wall clock measures
      // the scheduler as much as the scan (the wall-clock figure is in the detail).
      const rates: number[] = [];
      const wallRates: number[] = [];
      let last: Awaited<ReturnType<typeof scanJson>> | null = null;
      for (let i = 0; i < runs; i++) {
        last = await scanJson(s, count, [s.tree]);
        const { bytes, seconds, cpu_seconds } = last.report.summary;
        rates.push(bytes / 1e6 / cpu_seconds);
        wallRates.push(bytes / 1e6 / seconds);
      }
      const rate = median(rates);
      s.rates.set(count, rate);
      const { summary, findings } = last!.report;
      if (count === 1_000 && findings.length < s.leaks)
        throw new Error(`scan found ${findings.length} of ${s.leaks} planted values`);
      return row(
        this.title,
        rate,
        'MB/s',
        `MB per CPU second reading and matching, median of ${runs}; wall clock ${median(wallRates).toFixed(0)} MB/s; ${(summary.bytes / 1e6).toFixed(0)} MB in ${summary.scanned} files, ${summary.secrets} secrets scanned, ${findings.length} findings (the process: ${last!.wall.toFixed(1)} s with fetch and decrypt)`,
        count === 1_000 ? targets.scanFiles : null,
      );
    },
  };
}

const flat: ClientScenario = {
  id: 'scan-flat',
  title: 'coffer scan: 10,000 secrets vs 10 (MB/s ratio)',
  async run(ctx) {
    const s = await setup(ctx);
    if (!s) return null;
    const few = s.rates.get(10);
    const many = s.rates.get(10_000);
    // The tree has served its purpose: 500 MB less on the disk for the rest of the run.
    rmSync(s.tree, { recursive: true, force: true });
    if (few === undefined || many === undefined) return null;
    return row(
      this.title,
      many / few,
      '×',
      `${many.toFixed(0)} MB per CPU second with 10,000 secrets, ${few.toFixed(0)} with 10, same tree, same run`,
      targets.scanFlat,
    );
  },
};

const history: ClientScenario = {
  id: 'scan-history',
  title: `coffer scan --git, ${HISTORY_COMMITS.toLocaleString('en-US')} commits`,
  async run(ctx) {
    const s = await setup(ctx);
    if (!s) return null;
    const repo = join(s.cwd, 'history');
    const started = performance.now();
    generateHistory(repo, HISTORY_COMMITS, s.planted.slice(0, 5));
    ctx.say(
      `  setup: ${HISTORY_COMMITS} commits (${((performance.now() - started) / 1000).toFixed(1)} s)`,
    );
    const { report, wall } = await scanJson(s, 1_000, ['--git', repo]);
    const { summary } = report;
    if (report.findings.length < 5)
      throw new Error(`history scan found ${report.findings.length} of 5`);
    return row(
      this.title,
      summary.bytes / 1e6 / summary.seconds,
      'MB/s',
      `wall clock (git's processes work alongside); ${summary.scanned} blobs, ${(summary.bytes / 1e6).toFixed(0)} MB, ${summary.seconds.toFixed(1)} s with attribution, coffer's CPU ${summary.cpu_seconds.toFixed(1)} s (process ${wall.toFixed(1)} s); 1,000 secrets`,
    );
  },
};

const hook: ClientScenario = {
  id: 'scan-hook',
  title: `pre-commit hook, ${HOOK_LINES.toLocaleString('en-US')}-line staged diff`,
  async run(ctx) {
    const s = await setup(ctx);
    if (!s) return null;
    const repo = join(s.cwd, 'hooked');
    stagedDiff(repo, HOOK_LINES, s.planted[0]!);
    const args = [s.cli, 'scan', '--staged'];
    const env = s.env(s.credentials.get(1_000)!);
    const once = async (extra: string[] = []) => {
      try {
        await run(process.execPath, [...args, ...extra], { cwd: repo, env });
        throw new Error('the hook let a staged value through');
      } catch (err) {
        if ((err as { code?: number }).code !== 1) throw err;
      }
    };
    // The warm-up runs write the keyed-hash cache; the measured ones check it
    // with the server (one round trip) and match the diff against it.
    const durations = await timeRuns(ctx.options.cliRuns, 2, once);
    // The same hook without the cache: 1,000 values fetched and decrypted each time.
    const uncached = median(await timeRuns(ctx.options.cliRuns, 1, () => once(['--no-cache'])));
    // The fixed part: the same diff with a project of 10 secrets (nothing found there).
    const fewEnv = s.env(s.credentials.get(10)!);
    const few = median(
      await timeRuns(ctx.options.cliRuns, 2, () =>
        run(process.execPath, args, { cwd: repo, env: fewEnv }),
      ),
    );
    const floor = median(
      await timeRuns(ctx.options.cliRuns, 2, () => run(process.execPath, ['-e', ''], { env })),
    );
    // What the same credential pays to fetch and decrypt the same 1,000 secrets for `coffer run`.
    const cofferRun = median(
      await timeRuns(ctx.options.cliRuns, 2, () =>
        run(process.execPath, [s.cli, 'run', '--env', READ_ENV, '--', 'true'], { cwd: repo, env }),
      ),
    );
    const hooked = median(durations);
    return row(
      this.title,
      hooked,
      'ms',
      `median of ${durations.length} fresh processes, 1,000 secrets, through the keyed-hash cache (checked with the server each time); same run: without the cache (--no-cache) ${uncached.toFixed(0)} ms (${(hooked / uncached).toFixed(2)}×), with 10 secrets ${few.toFixed(0)} ms, \`coffer run -- true\` with the 1,000 ${cofferRun.toFixed(0)} ms, \`node -e ''\` ${floor.toFixed(0)} ms`,
      targets.scanHook,
    );
  },
};

export const SCAN_SCENARIOS: ClientScenario[] = [
  filesScenario(10, 'scan-files-10'),
  filesScenario(1_000, 'scan-files'),
  filesScenario(10_000, 'scan-files-10k'),
  flat,
  history,
  hook,
];

// ---- Generated content --------------------------------------------------------

const WORDS =
  'const let return function async await import export from class extends interface type if else for while switch case break new this value config request response error handler user session token id name status data items result options client server database query params headers body json true false null undefined'.split(
    ' ',
  );

function rng(seed: number) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** Blocks of text like a repository holds: code, lockfiles (base64 hashes), logs, minified code. */
function blocks(): Buffer[] {
  const r = rng(7);
  const word = () => WORDS[Math.floor(r() * WORDS.length)]!;
  const out: Buffer[] = [];
  for (let b = 0; b < 32; b++) {
    const lines: string[] = [];
    const kind = b % 4;
    while (lines.join('\n').length < 64 * 1024) {
      if (kind === 0)
        lines.push(
          `${'  '.repeat(Math.floor(r() * 4))}${word()} ${word()}_${word()} = ${word()}(${word()}, '${word()}-${Math.floor(r() * 1e6)}'); // ${word()} ${word()}`,
        );
      else if (kind === 1)
        lines.push(
          `    "integrity": "sha512-${randomBytes(64).toString('base64')}",\n    "resolved": "https://registry.example/${word()}/-/${word()}-${Math.floor(r() * 10)}.${Math.floor(r() * 20)}.0.tgz",`,
        );
      else if (kind === 2)
        lines.push(
          `2026-03-04T05:${String(Math.floor(r() * 60)).padStart(2, '0')}:07.${Math.floor(r() * 999)}Z INFO ${word()} request_id=${randomBytes(8).toString('hex')} path=/api/${word()}/${Math.floor(r() * 1e5)} status=200 ms=${Math.floor(r() * 900)}`,
        );
      else
        lines.push(
          Array.from(
            { length: 40 },
            () => `${word()}.${word()}=function(a,b){return a.${word()}(b)};`,
          ).join(''),
        );
    }
    out.push(Buffer.from(`${lines.join('\n')}\n`));
  }
  return out;
}

/** Files of 4 to 256 KB in nested directories until `bytes`; a planted value in every 97th file. */
function generateTree(
  dir: string,
  bytes: number,
  planted: string[],
): { bytes: number; leaks: number } {
  const r = rng(11);
  const parts = blocks();
  let written = 0;
  let leaks = 0;
  let n = 0;
  while (written < bytes) {
    const sub = join(dir, `pkg${n % 40}`, `src${n % 7}`);
    mkdirSync(sub, { recursive: true });
    const size = Math.floor(4096 + r() * r() * 256 * 1024);
    const chunks: Buffer[] = [];
    let length = 0;
    while (length < size) {
      const block = parts[Math.floor(r() * parts.length)]!;
      const take = block.subarray(0, Math.min(block.length, size - length));
      chunks.push(take);
      length += take.length;
    }
    const leak = n % 97 === 0 ? planted[(n / 97) % planted.length] : undefined;
    if (leak !== undefined)
      chunks.push(
        Buffer.from(
          n % 2 ? `\nAPI_KEY=${leak}\n` : `\ndata: ${Buffer.from(leak).toString('base64')}\n`,
        ),
      );
    const content = Buffer.concat(chunks);
    writeFileSync(join(sub, `file${n}.txt`), content);
    written += content.length;
    if (leak !== undefined) leaks++;
    n++;
  }
  return { bytes: written, leaks };
}

/** A history of `commits` commits through `git fast-import`; each planted value added then removed. */
function generateHistory(repo: string, commits: number, planted: string[]): void {
  mkdirSync(repo, { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'main', repo]);
  const r = rng(13);
  const word = () => WORDS[Math.floor(r() * WORDS.length)]!;
  const files = Array.from({ length: 200 }, () =>
    Array.from({ length: 100 }, () => `${word()} ${word()} = ${word()}(${word()}); // ${word()}`),
  );
  const stream: Buffer[] = [];
  for (let c = 1; c <= commits; c++) {
    const f = Math.floor(r() * files.length);
    const lines = files[f]!;
    lines[Math.floor(r() * lines.length)] =
      `${word()} ${word()} = '${randomBytes(6).toString('hex')}';`;
    const leakAt = Math.floor(commits / (planted.length + 1));
    const leak = c % leakAt === 0 ? planted[c / leakAt - 1] : undefined;
    const content = Buffer.from(`${lines.join('\n')}\n${leak ? `TOKEN=${leak}\n` : ''}`);
    const message = `change ${c}`;
    const when = 1_700_000_000 + c * 60;
    stream.push(
      Buffer.from(
        `commit refs/heads/main\nauthor Dev <dev@example.test> ${when} +0000\ncommitter Dev <dev@example.test> ${when} +0000\ndata ${message.length}\n${message}\nM 100644 inline src/file${f}.ts\ndata ${content.length}\n`,
      ),
      content,
      Buffer.from('\n'),
    );
  }
  execFileSync('git', ['-C', repo, 'fast-import', '--quiet'], {
    input: Buffer.concat(stream),
    maxBuffer: 1 << 30,
  });
}

/** A repository with `lines` added lines staged over two files, one holding a planted value. */
function stagedDiff(repo: string, lines: number, planted: string): void {
  const gitEnv = {
    ...process.env,
    GIT_AUTHOR_NAME: 'Dev',
    GIT_AUTHOR_EMAIL: 'dev@example.test',
    GIT_COMMITTER_NAME: 'Dev',
    GIT_COMMITTER_EMAIL: 'dev@example.test',
  };
  const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { env: gitEnv });
  mkdirSync(repo, { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'main', repo]);
  const base = Array.from({ length: 400 }, (_, i) => `line ${i} of the existing module`);
  writeFileSync(join(repo, 'existing.ts'), `${base.join('\n')}\n`);
  git('add', '.');
  git('commit', '-qm', 'base');
  const added = Array.from(
    { length: lines / 2 },
    (_, i) => `  const value${i} = compute(${i}, 'x${i}');`,
  );
  writeFileSync(join(repo, 'existing.ts'), `${base.join('\n')}\n${added.join('\n')}\n`);
  const fresh = Array.from({ length: lines / 2 }, (_, i) => `export const item${i} = ${i};`);
  fresh[lines / 4] = `export const apiKey = '${planted}';`;
  writeFileSync(join(repo, 'new.ts'), `${fresh.join('\n')}\n`);
  git('add', '.');
}
