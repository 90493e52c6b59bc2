// Server work per request counted in CPU instructions, for this checkout and
// optionally a baseline checkout side by side: `npm run bench:instructions`.
// Run `npm run bench:instructions -- --help` for the options; docs/performance.md
// says when to reach for it instead of `npm run bench`.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Pool } from 'undici';
import {
  prepareBackend,
  startCoffer,
  UNCAPPED_RATE_LIMITS,
  type Backend,
} from './lib/environment.js';
import { idempotencyKeys } from './lib/keys.js';
import { parseFlags } from './lib/options.js';
import { serverNodeFlags } from './lib/node-flags.js';
import { freePort } from './lib/processes.js';
import type { Fixture } from './scenarios/fixture.js';
import { HTTP_SCENARIOS, type HttpScenario } from './scenarios/http.js';

const USAGE = `npm run bench:instructions -- [options] [scenario-filter…]

Counts the CPU instructions the server spends per request (valgrind's
callgrind: the same figure whatever else the machine is doing, unlike time),
on the embedded SQLite over plain HTTP (or PostgreSQL: --backend=postgres with
DATABASE_URL, and REDIS_URL when set). With --baseline, another checkout of
Coffer (its dependencies installed) is measured at the same time under the
same load, and the ratio is printed.

  --baseline=DIR     another checkout to compare with (e.g. a git worktree)
  --against=ID       the baseline runs scenario ID (exactly) while the current
                     runs each selected scenario, at the same time; without
                     --baseline, both servers are this checkout. Keyed writes
                     against plain ones, both under the machine's load at once:
                     --cpu --in-flight=50 --against=write-secret write-secret-keyed
                     (first its null case, --against=write-secret write-secret:
                     how far apart two equal servers measure on this machine)
  --requests=N       measured requests per repetition (default 3000; writes a third)
  --warmup=N         requests before measuring (default 8000; writes half)
  --reps=N           repetitions per scenario (default 6)
  --in-flight=N      requests in flight at once on each server (default 4; the
                     bench's 50 shows what many connections cost, e.g. in GC)
  --log-level=L      server LOG_LEVEL (default info, as npm run bench)
  --cpu              count CPU time instead (no valgrind): nanoseconds of every
                     thread of the server per request, the two servers loaded
                     at the same time; for a machine too busy for valgrind
  --backend=B        sqlite (default) or postgres (a database of its own per
                     checkout on DATABASE_URL's server, dropped afterwards)
  --keep             keep the work directory: each counted repetition's
                     callgrind dump, named <checkout>-callgrind/<scenario>.<rep>.callgrind,
                     for callgrind_annotate (where the instructions went,
                     SQLite's and V8's C++ functions by name)

Scenario filters are substrings of npm run bench's HTTP scenario ids
(default: list-secrets list-secrets-304 read-secret write-secret write-secret-keyed).
Needs valgrind (Debian package valgrind).`;

const DEFAULT_SCENARIOS = [
  'list-secrets',
  'list-secrets-304',
  'read-secret',
  'write-secret',
  'write-secret-keyed',
];
/** Requests in flight at once: enough to keep the server busy, few enough for a slow server. */
const DEFAULT_IN_FLIGHT = 4;

function parse(argv: string[]) {
  const { flags, filters } = parseFlags(
    argv,
    [
      'baseline',
      'against',
      'requests',
      'warmup',
      'reps',
      'in-flight',
      'log-level',
      'backend',
      'cpu',
      'keep',
    ],
    USAGE,
  );
  const count = (name: string, fallback: number) => {
    const value = Number(flags.get(name) ?? fallback);
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`--${name} must be a positive integer`);
    return value;
  };
  const baseline = flags.get('baseline');
  const againstId = flags.get('against');
  const against = againstId ? HTTP_SCENARIOS.find((s) => s.id === againstId) : undefined;
  if (againstId && !against) throw new Error(`--against: no scenario is named ${againstId}`);
  const backend = flags.get('backend') ?? 'sqlite';
  if (backend !== 'sqlite' && backend !== 'postgres')
    throw new Error('--backend must be sqlite or postgres');
  if (backend === 'postgres' && !process.env.DATABASE_URL)
    throw new Error('--backend=postgres needs DATABASE_URL');
  return {
    backend: backend as Backend['name'],
    cpu: flags.has('cpu'),
    keep: flags.has('keep'),
    baseline: baseline ? resolve(baseline) : null,
    against: against ?? null,
    requests: count('requests', 3000),
    warmup: count('warmup', 8000),
    reps: count('reps', 6),
    inFlight: count('in-flight', DEFAULT_IN_FLIGHT),
    logLevel: flags.get('log-level') ?? 'info',
    scenarios: HTTP_SCENARIOS.filter((s) =>
      (filters.length ? filters : DEFAULT_SCENARIOS).some((f) =>
        filters.length ? s.id.includes(f) : s.id === f,
      ),
    ),
  };
}

const options = parse(process.argv.slice(2));
if (!options.cpu && spawnSync('valgrind', ['--version']).status !== 0)
  throw new Error('valgrind is not installed (Debian: apt-get install valgrind)');
if (options.scenarios.length === 0) throw new Error(`no scenario matches\n\n${USAGE}`);

const here = fileURLToPath(new URL('..', import.meta.url));
mkdirSync(join(here, 'bench/results'), { recursive: true });
const workDir = mkdtempSync(join(here, 'bench/results/instructions-'));

/** One checkout: its fixture database, set up by its own SDK through its own server. */
interface Checkout {
  name: string;
  root: string;
  template: string;
  /** PostgreSQL: the database the fixture is in, which the counted server uses. */
  backend: Backend | null;
  fixture: Fixture;
}

async function prepare(name: string, root: string): Promise<Checkout> {
  if (!existsSync(join(root, 'node_modules')))
    throw new Error(`${root} has no node_modules: run npm ci there first`);
  if (root !== here)
    execFileSync(process.execPath, ['scripts/build.mjs', 'server', 'sdk'], {
      cwd: root,
      stdio: 'inherit',
    });
  const template = join(workDir, `${name}-template`);
  mkdirSync(template);
  const backend =
    options.backend === 'postgres'
      ? await prepareBackend('postgres', join(workDir, name), process.env)
      : null;
  const server = await startCoffer({
    root,
    backend: backend ?? ({ name: 'sqlite', env: { DATA_DIR: template } } as never),
    tls: null,
    logLevel: 'warn',
  });
  // The checkout's own fixture code: a baseline from before an API change sets
  // itself up with the SDK of its day.
  const fixtureModule = pathToFileURL(join(root, 'bench/scenarios/fixture.ts')).href;
  const script = `const { createFixture } = await import(${JSON.stringify(fixtureModule)});
const f = await createFixture({ baseUrl: ${JSON.stringify(server.url)}, caFile: null, say: () => {} });
const plain = Object.fromEntries(Object.entries(f).filter(([, v]) => typeof v !== 'object' || Array.isArray(v)));
process.stdout.write(JSON.stringify(plain));
process.exit(0);`;
  const fixture = JSON.parse(
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    }),
  ) as Fixture;
  await server.stop();
  return { name, root, template, backend, fixture };
}

/** A server of one checkout running under callgrind, counters controlled with callgrind_control. */
class CountedServer {
  /** Counted repetitions so far, by scenario id: their dumps' numbers. */
  private readonly dumps = new Map<string, number>();

  private constructor(
    readonly checkout: Checkout,
    private readonly child: ChildProcess,
    private readonly outDir: string,
    private readonly env: Record<string, string>,
    readonly pool: Pool,
  ) {}

  static async start(checkout: Checkout): Promise<CountedServer> {
    const dataDir = join(workDir, `${checkout.name}-data`);
    cpSync(checkout.template, dataDir, { recursive: true });
    const outDir = join(workDir, `${checkout.name}-callgrind`);
    mkdirSync(outDir);
    const port = await freePort();
    // valgrind names its control pipes after USER and HOST; callgrind_control must see the same.
    const env = {
      PATH: process.env.PATH ?? '',
      USER: 'coffer-bench',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      ...checkout.backend?.env,
      PORT: String(port),
      HTTP_PORT: 'off',
      TLS: 'off',
      TRUST_PROXY: 'true',
      LOG_LEVEL: options.logLevel,
      // Metrics on, as operators and `npm run bench` run the server (a listener of its own).
      METRICS_PORT: '0',
      ...UNCAPPED_RATE_LIMITS,
    };
    const node = [
      process.execPath,
      ...serverNodeFlags(checkout.root),
      // No concurrent GC or compiler threads: the same work, in a repeatable order.
      '--single-threaded',
      join(checkout.root, 'packages/server/dist/main.js'),
    ];
    const child = options.cpu
      ? spawn(node[0]!, node.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(
          'valgrind',
          ['--tool=callgrind', `--callgrind-out-file=${join(outDir, 'callgrind.out')}`, ...node],
          { env, stdio: ['ignore', 'pipe', 'pipe'] },
        );
    const log = createWriteStream(join(workDir, `${checkout.name}-server.log`));
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    await new Promise<void>((ready, fail) => {
      let seen = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        seen = (seen + chunk.toString('utf8')).slice(-4096);
        if (/Coffer listening on/.test(seen)) ready();
      });
      child.once('exit', (code) =>
        fail(new Error(`${checkout.name} server exited (${code}); log in ${workDir}`)),
      );
    });
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: options.inFlight });
    return new CountedServer(checkout, child, outDir, env, pool);
  }

  /** Nanoseconds on a CPU of all the server's threads so far (Linux's schedstat). */
  private cpuNs(): number {
    const tasks = `/proc/${this.child.pid}/task`;
    let ns = 0;
    for (const task of readdirSync(tasks)) {
      try {
        ns += Number(readFileSync(`${tasks}/${task}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // a thread that ended meanwhile
      }
    }
    return ns;
  }

  private control(flag: '-z' | '-d'): void {
    execFileSync('callgrind_control', [flag, String(this.child.pid)], {
      env: this.env,
      stdio: 'ignore',
    });
  }

  /** Sends `n` requests of `scenario`; with `counted`, returns the instructions per request. */
  async run(scenario: HttpScenario, n: number, counted: boolean): Promise<number> {
    const plan = scenario.plan(this.checkout.fixture, 'http://127.0.0.1');
    const url = new URL(plan.url);
    const variants = plan.variants ?? [{ path: url.pathname + url.search }];
    if (counted && !options.cpu) this.control('-z');
    const cpuBefore = this.cpuNs();
    let next = 0;
    const newKey = idempotencyKeys();
    const worker = async () => {
      while (next < n) {
        const variant = variants[next++ % variants.length]!;
        const res = await this.pool.request({
          method: plan.method as 'GET',
          path: variant.path,
          // A new key per request, as the SDK sends with every write.
          headers: plan.idempotencyKeys
            ? { ...plan.headers, 'idempotency-key': newKey() }
            : plan.headers,
          ...(variant.body !== undefined ? { body: variant.body } : {}),
        });
        const body = await res.body.text();
        if (res.statusCode !== scenario.expectStatus)
          throw new Error(`${scenario.id} on ${this.checkout.name}: ${res.statusCode} ${body}`);
      }
    };
    await Promise.all(Array.from({ length: options.inFlight }, worker));
    if (!counted) return 0;
    if (options.cpu) return (this.cpuNs() - cpuBefore) / n;
    const before = new Set(readdirSync(this.outDir));
    this.control('-d');
    for (;;) {
      const dump = readdirSync(this.outDir).find((f) => !before.has(f));
      if (dump) {
        await new Promise((r) => setTimeout(r, 200)); // written by now
        const text = readFileSync(join(this.outDir, dump), 'utf8');
        const total = /^(?:summary|totals): (\d+)/m.exec(text);
        if (total) {
          // Named for its scenario, for callgrind_annotate once kept (--keep).
          const rep = (this.dumps.get(scenario.id) ?? 0) + 1;
          this.dumps.set(scenario.id, rep);
          renameSync(join(this.outDir, dump), join(this.outDir, `${scenario.id}.${rep}.callgrind`));
          return Number(total[1]) / n;
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    await this.pool.close();
    this.child.kill('SIGKILL');
  }
}

const say = (text: string) => process.stderr.write(`${text}\n`);
say(`preparing fixtures (work directory ${workDir})`);
const checkouts = [await prepare('current', here)];
/** The second server's checkout: `--baseline`, or this one again for `--against` alone. */
const baselineRoot = options.baseline ?? (options.against ? here : null);
if (baselineRoot) checkouts.push(await prepare('baseline', baselineRoot));
say(`starting the servers${options.cpu ? '' : ' under callgrind (about a minute)'}`);
const servers = await Promise.all(checkouts.map((c) => CountedServer.start(c)));
// One write with an Idempotency-Key first, as a deployment whose clients use
// the SDK (it keys every write) has had: what that leaves switched on for
// later requests is part of their cost.
const keyedWrite = HTTP_SCENARIOS.find((s) => s.id === 'write-secret-keyed')!;
await Promise.all(servers.map((s) => s.run(keyedWrite, 1, false)));

const rows: string[] = [];
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const writes = (scenario: HttpScenario) =>
  scenario.plan(servers[0]!.checkout.fixture, 'http://x').method !== 'GET';
// Writes last: they change the database the read scenarios' caches depend on.
for (const scenario of [...options.scenarios].sort(
  (a, b) => Number(writes(a)) - Number(writes(b)),
)) {
  const isWrite = writes(scenario);
  const requests = isWrite ? Math.max(100, Math.round(options.requests / 3)) : options.requests;
  const warmup = isWrite ? Math.max(100, Math.round(options.warmup / 2)) : options.warmup;
  say(`${scenario.id}: warming up (${warmup} requests), then ${options.reps} × ${requests}`);
  // With `--against`, the second server runs that scenario at the same time.
  const runOn = (i: number) => (i === 1 && options.against) || scenario;
  await Promise.all(servers.map((s, i) => s.run(runOn(i), warmup, false)));
  const counts: number[][] = servers.map(() => []);
  for (let rep = 0; rep < options.reps; rep++) {
    const results = await Promise.all(servers.map((s, i) => s.run(runOn(i), requests, true)));
    results.forEach((r, i) => counts[i]!.push(r));
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const [current, baseline] = counts;
  let row = `${scenario.id.padEnd(20)} ${fmt(mean(current!)).padStart(11)}`;
  if (baseline) {
    const ratios = current!.map((c, i) => c / baseline[i]!).sort((a, b) => a - b);
    row += ` ${fmt(mean(baseline)).padStart(11)}  ${(mean(current!) / mean(baseline)).toFixed(3).padStart(6)}   ${ratios[0]!.toFixed(3)}–${ratios[ratios.length - 1]!.toFixed(3)}`;
  }
  rows.push(row);
  say(
    `  current ${current!.map(fmt).join(' ')}${baseline ? `\n  baseline ${baseline.map(fmt).join(' ')}` : ''}`,
  );
}
await Promise.all(servers.map((s) => s.stop()));
await Promise.all(checkouts.map((c) => c.backend?.dispose()));

console.log(
  `\n${options.cpu ? 'Server CPU nanoseconds per request (all threads' : 'Server instructions per request (callgrind'}; ${options.backend === 'postgres' ? 'PostgreSQL' : 'SQLite'}, plain HTTP, ${options.inFlight} in flight, mean of ${options.reps} repetitions)`,
);
console.log(
  `${'scenario'.padEnd(20)} ${'current'.padStart(11)}${baselineRoot ? ` ${'baseline'.padStart(11)}  ${'ratio'.padStart(6)}   per repetition` : ''}`,
);
for (const row of rows) console.log(row);
if (baselineRoot)
  console.log(
    `baseline: ${baselineRoot}${options.against ? `, running ${options.against.id} at the same time` : ''}`,
  );
if (options.keep) say(`callgrind dumps kept in ${workDir}`);
else rmSync(workDir, { recursive: true, force: true });
process.exit(0);
