// Runs every test file with node's test runner, each file in a process of its own.
// Extra arguments narrow the run: `npm test -- members` runs the files whose path
// contains "members"; `npm test -- '!packages/web/'` leaves out those whose path
// contains "packages/web/"; TEST_DIALECT_FREE=0 leaves out the server's and SDK's
// files that do not run per dialect (see namesDialect).
//
// Before the files run, once per run:
// - the test files are compiled, TypeScript and workspace packages bundled from
//   source (scripts/test-compile.mjs), so no file pays for a TypeScript loader in its
//   own process (TEST_TRANSPILE=tsx runs the sources through tsx instead);
// - a migrated database of each dialect is made once (the server's test harness,
//   packages/server/test/support/template-db.ts); each test database is a copy of it;
// - with browser test files among them, one Chromium is started for all of them
//   (TEST_SHARED_BROWSER=0: each file launches its own).
// Files run longest first (times of the last measured run, scripts/test-times.json),
// TEST_CONCURRENCY at once (default: one more than the cores, 3 on CI's two). TEST_TIMES=1 writes each file's time to
// test-times.json (TEST_TIMES=<path> elsewhere), with the CPU seconds of each file's
// processes, and prints the slowest.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;

if (process.env.COFFER_TEST_RUNNER === '1') await runFiles();
else await main();

function find(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...find(path));
    else if (name.endsWith('.test.ts')) out.push(relative(root, path));
  }
  return out;
}

/**
 * Whether a test file runs per database dialect: everything outside the server's
 * and SDK's tests, the files that use the dialect list or `onlyOn`
 * (packages/server/test/support/db.ts), and a SQLite driver's own tests (named so).
 * CI's pass on PostgreSQL sets TEST_DIALECT_FREE=0 to leave out the rest, which
 * its pass on SQLite runs: the same file twice would test nothing more.
 */
function namesDialect(file) {
  if (!/^packages\/(server|sdk)\//.test(file) || file.includes('sqlite')) return true;
  return /\bDIALECTS\b|\bonlyOn\(/.test(readFileSync(join(root, file), 'utf8'));
}

/** Longest first: the last measured times, else an estimate from the file's length. */
function longestFirst(files) {
  let known = {};
  try {
    const measured = JSON.parse(readFileSync(`${root}scripts/test-times.json`, 'utf8'));
    known = Object.fromEntries(measured.files.map((row) => [row.file, row.seconds]));
  } catch {
    // No times yet: every file is estimated.
  }
  const lines = (file) => readFileSync(join(root, file), 'utf8').split('\n').length;
  const rates = Object.keys(known)
    .filter((file) => files.includes(file))
    .map((file) => known[file] / lines(file))
    .sort((a, b) => a - b);
  const rate = rates.length > 0 ? rates[Math.floor(rates.length / 2)] : 0.05;
  const weight = (file) => known[file] ?? lines(file) * rate;
  const weights = new Map(files.map((file) => [file, weight(file)]));
  return [...files].sort((a, b) => weights.get(b) - weights.get(a) || a.localeCompare(b));
}

async function main() {
  const args = process.argv.slice(2);
  const filters = args.filter((a) => !a.startsWith('!'));
  const excluded = args.filter((a) => a.startsWith('!')).map((a) => a.slice(1));
  const files = find(join(root, 'packages'))
    .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
    .filter((f) => !excluded.some((x) => f.includes(x)))
    .filter((f) => process.env.TEST_DIALECT_FREE !== '0' || namesDialect(f));
  if (files.length === 0) {
    console.error('no test files matched');
    process.exit(1);
  }

  // The harness that makes the migrated databases, compiled with the test files.
  const templates = 'packages/server/test/support/template-db.ts';
  const usesDatabase =
    existsSync(join(root, templates)) && files.some((f) => !f.startsWith('packages/web/'));
  const tsx = process.env.TEST_TRANSPILE === 'tsx';
  const loader = ['--import', 'tsx', '--conditions=development'];
  let run = files.map((file) => join(root, file));
  let templateScript = [...loader, join(root, templates)];
  let execArgv = loader;
  let compiledDir = null;
  if (!tsx) {
    const { compileTests } = await import('./test-compile.mjs');
    const compiled = await compileTests(usesDatabase ? [...files, templates] : files);
    compiledDir = compiled.outDir;
    run = compiled.paths.slice(0, files.length);
    templateScript = ['--enable-source-maps', compiled.paths[files.length]];
    execArgv = ['--enable-source-maps'];
  }

  // One migrated database per dialect, copied for every test database.
  const env = { ...process.env, NODE_ENV: 'test' };
  // Node 22 and later keep V8's compiled code of each module on disk: the many
  // server processes the tests start compile the server's bundle once. (Node 20
  // ignores it.)
  env.NODE_COMPILE_CACHE ??= join(root, 'node_modules/.cache/coffer-compile');
  let template = null;
  if (usesDatabase) {
    const made = spawnSync(process.execPath, [...templateScript, 'create'], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
      encoding: 'utf8',
    });
    if (made.status !== 0) process.exit(1);
    template = JSON.parse(made.stdout);
    Object.assign(env, template.env);
  }

  // One Chromium for the run's browser test files (each connects to it and opens
  // contexts of its own) instead of one launched per file.
  const browser = await sharedBrowser(files, env);

  const order = new Map(longestFirst(files).map((file, index) => [file, index]));
  const ordered = files
    .map((file, index) => ({ file, path: run[index] }))
    .sort((a, b) => order.get(a.file) - order.get(b.file))
    .map((entry) => entry.path);

  // With TEST_TIMES, each file's process also reports its CPU (scripts/test-cpu.mjs).
  const cpuLog = process.env.TEST_TIMES
    ? join(tmpdir(), `coffer-test-cpu-${process.pid}.jsonl`)
    : null;
  const fileArgv = cpuLog
    ? [...execArgv, '--import', join(root, 'scripts/test-cpu.mjs')]
    : execArgv;
  if (cpuLog) env.COFFER_TEST_CPU_LOG = cpuLog;
  const child = spawn(process.execPath, [...fileArgv, join(root, 'scripts/test.mjs')], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...env,
      COFFER_TEST_RUNNER: '1',
      COFFER_TEST_FILES: JSON.stringify(ordered),
      COFFER_TEST_SOURCES: JSON.stringify(Object.fromEntries(run.map((p, i) => [p, files[i]]))),
    },
  });
  // Ctrl-C stops the files (the same process group); the databases are still dropped.
  process.on('SIGINT', () => undefined);
  const code = await new Promise((resolve) =>
    child.on('exit', (status, signal) => resolve(signal ? 1 : (status ?? 1))),
  );
  await browser?.close();
  if (template) {
    spawnSync(process.execPath, [...templateScript, 'drop'], { cwd: root, env, stdio: 'inherit' });
  }
  if (compiledDir) rmSync(compiledDir, { recursive: true, force: true });
  if (cpuLog) rmSync(cpuLog, { force: true });
  process.exit(code);
}

/**
 * Starts Chromium for the browser test files among `files` and points them at it
 * (`COFFER_TEST_BROWSER_WS` in `env`), unless there are none, Chromium is not
 * installed (the files report themselves skipped), or `TEST_SHARED_BROWSER=0`.
 */
async function sharedBrowser(files, env) {
  if (process.env.TEST_SHARED_BROWSER === '0' || env.COFFER_TEST_BROWSER_WS) return null;
  if (!files.some((f) => f.startsWith('packages/web/'))) return null;
  // The first of the listed executables that is installed (see chromium.json).
  const { executables, ...options } = JSON.parse(
    readFileSync(join(root, 'packages/web/test/support/chromium.json'), 'utf8'),
  );
  const executablePath = executables.find((path) => existsSync(path));
  if (!executablePath) return null;
  const { chromium } = await import('playwright-core');
  const server = await chromium.launchServer({ ...options, executablePath });
  env.COFFER_TEST_BROWSER_WS = server.wsEndpoint();
  return server;
}

/** In a process started with the files' own flags (they pass to each file's process). */
async function runFiles() {
  const { run } = await import('node:test');
  const { availableParallelism } = await import('node:os');
  const { spec, tap } = await import('node:test/reporters');
  const files = JSON.parse(process.env.COFFER_TEST_FILES);
  const sources = JSON.parse(process.env.COFFER_TEST_SOURCES);
  // The test files' processes inherit the environment: none of this is theirs.
  for (const name of ['COFFER_TEST_RUNNER', 'COFFER_TEST_FILES', 'COFFER_TEST_SOURCES'])
    delete process.env[name];
  // One more file than cores: a file waiting on a child process, a browser or a
  // timer leaves its core to another (3 on CI's two cores).
  const concurrency = Number(process.env.TEST_CONCURRENCY ?? availableParallelism() + 1);
  const stream = run({ files, concurrency });
  stream.on('test:fail', (data) => {
    if (!data.todo) process.exitCode = 1;
  });
  if (process.env.TEST_TIMES) {
    const { recordTimes } = await import('./test-times.mjs');
    const out = process.env.TEST_TIMES === '1' ? 'test-times.json' : process.env.TEST_TIMES;
    recordTimes(stream, sources, out);
  }
  // As node --test does: readable on a terminal, TAP for CI's log and its tools.
  stream.compose(process.stdout.isTTY ? spec : tap).pipe(process.stdout);
}
