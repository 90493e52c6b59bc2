// `npm run bench`: Coffer measured against the ceiling of its own stack, in one
// run. See USAGE in lib/options.ts and the docs/performance.md.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_DATABASE_POOL_SIZE, loadConfig } from '../packages/server/src/config.js';
import { loadTls } from '../packages/server/src/http/tls.js';
import {
  describeMachine,
  prepareBackend,
  startCoffer,
  type Backend,
  type Tls,
} from './lib/environment.js';
import { LoadGenerator, type LoadPlan, type LoadResult } from './lib/load.js';
import { gcPerRequest, readGcTime } from './lib/gc-time.js';
import { MB, measureLoad, median, type MeasureExtras, type Timing } from './lib/measure.js';
import { parseOptions } from './lib/options.js';
import { havePgbench, postgresAlone } from './lib/postgres-alone.js';
import {
  findProfile,
  renderProfileComparison,
  renderProfiles,
  summariseProfile,
  type ProfiledRun,
  type Window,
} from './lib/profile.js';
import { freePort, startProcess, terminateAll, type ServerProcess } from './lib/processes.js';
import {
  judge,
  renderTables,
  targets,
  type LoadRow,
  type Row,
  type ValueRow,
} from './lib/report.js';
import { createFixture, type Fixture } from './scenarios/fixture.js';
import {
  HTTP_SCENARIOS,
  PLAIN_HTTP_SCENARIOS,
  READ_SCENARIO_IDS,
  SCALED_OUT_SCENARIOS,
  type HttpScenario,
} from './scenarios/http.js';
import {
  findHaproxy,
  ratesBetween,
  startBalancer,
  statementCounter,
  type Balancer,
} from './lib/scale-out.js';
import { CLIENT_SCENARIOS } from './scenarios/client.js';
import { DASHBOARD_IDS, dashboardMissing, measureDashboard } from './scenarios/dashboard.js';
import { FEED_IDS, measureFeed, STREAM_COUNT } from './scenarios/feed.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const options = parseOptions(process.argv.slice(2), process.env);
// With --json, stdout carries only the JSON report.
const say = (text: string) => (options.json ? process.stderr : process.stdout).write(`${text}\n`);
const selected = (id: string) =>
  options.filters.length === 0 || options.filters.some((f) => id.includes(f));

const resultsDir = join(root, 'bench/results');
mkdirSync(resultsDir, { recursive: true });
// On the repository's disk, like a server's data directory (fsync must be real).
const workDir = mkdtempSync(join(resultsDir, 'run-'));
const machine = await describeMachine(workDir);
const timing: Timing = {
  connections: options.connections,
  warmupSeconds: options.warmupSeconds,
  seconds: options.seconds,
};
const startedAt = new Date();
/** How long the server has had no request when its idle memory is read (`--quick`: 5 s). */
const IDLE_MS = options.quick ? 5_000 : 30_000;

say(
  `Coffer benchmark${options.quick ? ' (--quick: smoke check, figures not comparable)' : ''}\n` +
    `  ${machine.cpuCount} CPUs (${machine.cpuModel}), ${machine.memoryGB} GB, Node ${machine.node}, ` +
    `data on ${machine.dataFilesystem}, ${machine.busyCoresBefore.toFixed(2)} cores busy before the start\n` +
    `  autocannon in its own process, ${timing.connections} connections, ` +
    `${timing.warmupSeconds} s warm-up + ${timing.seconds} s per HTTP scenario; server LOG_LEVEL=${options.logLevel}`,
);
if (machine.busyCoresBefore > 0.2)
  say('  warning: the machine is busy before the start; figures will be low and noisy');
if (machine.dataFilesystem === 'tmpfs')
  say('  warning: the data directory is on tmpfs, so fsync costs nothing; write figures overstate');

// One self-signed certificate (the server's own generator) for every server of the run.
await loadTls(loadConfig({ DATA_DIR: workDir }));
const tls: Tls = { certFile: join(workDir, 'tls/cert.pem'), keyFile: join(workDir, 'tls/key.pem') };

const load = new LoadGenerator();
// Interrupted (Ctrl-C, kill): stop the servers and drop the PostgreSQL databases before leaving.
const backends = new Set<Backend>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\nbench interrupted (${signal}); stopping its servers (logs in ${workDir})`);
    terminateAll();
    load.close();
    void Promise.allSettled([...backends].map((b) => b.dispose())).then(() => process.exit(130));
  });
}
const rows: Row[] = [];
const profiles: string[] = [];
/** Set when a scenario had errors or timeouts: the servers' logs are kept, whatever the exit code. */
let keepLogs = options.keepLogs;
const push = (row: Row) => {
  rows.push(row);
  say(`  ${describe(row)}`);
};

function describe(row: Row): string {
  if (row.kind === 'load') {
    const r = row.result;
    return `${row.title} [${row.backend}]: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms${row.ratio !== null ? `, ${(row.ratio * 100).toFixed(1)}% of ceiling` : ''}`;
  }
  const value =
    row.unit === 'tx/s' ? Math.round(row.value) : row.value.toFixed(row.unit === 's' ? 2 : 1);
  return `${row.title} [${row.backend}]: ${value} ${row.unit} (${row.detail})`;
}

/** What the scenarios of one backend are compared with, measured right before them. */
interface Ceilings {
  /** A bare Fastify route returning a tiny JSON object. */
  tinyRps: number;
  /** The same route returning a JSON body the size of the secret listing. */
  listingSizedRps: number | null;
  /** The same route replaying a read of one secret: its headers and body. */
  readShapedRps: number | null;
  /** With --profile: that route's profiled run, to compare a read with. */
  readShapedProfile: ProfiledRun | null;
}

/**
 * The bare Fastify server the ceilings are measured on (bench/ceiling-server.ts),
 * in its own process, on the same certificate and load generator.
 */
async function startCeilingServer(
  plain: boolean,
  opts: { profileDir?: string; readShapeFile?: string } = {},
): Promise<ServerProcess> {
  return startProcess({
    name: 'ceiling server',
    args: [
      '--import',
      'tsx',
      ...(opts.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.profileDir}`] : []),
      join(root, 'bench/ceiling-server.ts'),
    ],
    env: {
      PORT: String(await freePort()),
      ...(plain ? {} : { CERT_FILE: tls.certFile, KEY_FILE: tls.keyFile }),
      ...(opts.readShapeFile ? { READ_SHAPE_FILE: opts.readShapeFile } : {}),
    },
    ready: /listening on (\S+)/,
    logFile: join(workDir, 'ceiling.log'),
  });
}

const fmtRps = (n: number) => Math.round(n).toLocaleString('en-US');
/** Rounds of an alternating measurement. */
const ALTERNATING_ROUNDS = 6;
/**
 * Rounds of the keyed writes' share: its bound is 90 %, and in a slow hour the
 * rounds of one run spread over 25–35 points; the median of twelve moves about
 * 1.4 times less than that of six, for 36 s more per backend.
 */
const KEYED_ROUNDS = 12;

/** One side of an alternating measurement: a server and the load it gets. */
interface Side {
  server: ServerProcess;
  plan: Omit<LoadPlan, keyof Timing>;
  expectStatus: number;
  label: string;
}

/** `scenario` on `server` as one side of an alternating measurement. */
const scenarioSide = (
  scenario: HttpScenario,
  server: ServerProcess,
  fixture: Fixture,
  label = scenario.title,
): Side => ({
  server,
  plan: scenario.plan(fixture, server.url),
  expectStatus: scenario.expectStatus,
  label,
});

/** The HTTP scenario of that id. */
const httpScenario = (id: string): HttpScenario => HTTP_SCENARIOS.find((s) => s.id === id)!;

/**
 * One share measured in alternating rounds: `base` and `measured`, six
 * times over (or `roundCount`), each a short run of its own, and the median
 * of the rounds' `measured / base` in %. The table's ratios divide by figures measured
 * minutes apart, and this machine's speed drifts within minutes (seen: the
 * plain HTTP read at 56.6 % and 38.4 % of the bare route in two runs an hour
 * apart); here both sides of each round see the same machine. Every other
 * round runs `measured` first: what one side leaves for the next (writes
 * grow the database, and SQLite's commit costs more as its file grows) then
 * weighs on each side in half the rounds, instead of always on `measured`.
 */
async function alternatingShare(
  row: Pick<ValueRow, 'id' | 'title' | 'backend' | 'target'>,
  base: Side,
  measured: Side,
  roundCount = ALTERNATING_ROUNDS,
): Promise<void> {
  const short: Timing = { ...timing, warmupSeconds: 1, seconds: roundSeconds() };
  let failures = 0;
  const run = async (side: Side) => {
    const { result } = await measureLoad(load, side.server, side.plan, short, side.label);
    const expected = result.statuses[side.expectStatus] ?? 0;
    failures += result.errors + result.timeouts + result.requests - expected;
    return result.rps;
  };
  const rounds = await alternateRounds(
    roundCount,
    () => run(base),
    () => run(measured),
  );
  const shares = sharesOf(rounds, short.seconds, 'req/s');
  push(
    judge(
      {
        ...row,
        kind: 'value',
        value: failures > 0 ? 0 : shares.median,
        unit: '%',
        detail: failures > 0 ? `${failures} answers not as expected: not measured` : shares.detail,
        pass: null,
        breakdown: { rounds },
      },
      null,
    ),
  );
}

/** How long each side runs in a round of an alternating measurement, s. */
const roundSeconds = () => Math.max(2, Math.round(timing.seconds / ALTERNATING_ROUNDS));

type Round = { base: number; measured: number };

/**
 * `roundCount` rounds of `base` and `measured` (each run gives its rate), the
 * measured side first in every other round (see `alternatingShare`).
 */
async function alternateRounds(
  roundCount: number,
  base: () => Promise<number>,
  measured: () => Promise<number>,
): Promise<Round[]> {
  const rounds: Round[] = [];
  for (let round = 0; round < roundCount; round++) {
    if (round % 2 === 0) rounds.push({ base: await base(), measured: await measured() });
    else {
      const first = await measured();
      rounds.push({ base: await base(), measured: first });
    }
  }
  return rounds;
}

/** The median of the rounds' `measured / base` in %, and a row's detail of them (rates in `unit`). */
function sharesOf(rounds: readonly Round[], seconds: number, unit: string) {
  const shares = rounds.map((r) => (100 * r.measured) / r.base).sort((a, b) => a - b);
  const detail =
    `median of ${rounds.length} rounds of ${seconds} s each, the measured side first in every other one (${shares.map((x) => x.toFixed(1)).join(', ')} %); ` +
    rounds.map((r) => `${fmtRps(r.measured)} vs ${fmtRps(r.base)}`).join(', ') +
    ` ${unit}`;
  return { median: median(shares), detail };
}

/** A scenario's share of the bare route (tiny JSON), in alternating rounds. */
async function againstBareRoute(
  scenario: HttpScenario,
  server: ServerProcess,
  fixture: Fixture,
  label: string,
  plain: boolean,
): Promise<void> {
  const bare = await startCeilingServer(plain);
  try {
    await alternatingShare(
      {
        id: `${scenario.id}-share`,
        title: `${scenario.title}, % of the bare route, alternating`,
        backend: label,
        target: targets.readShare,
      },
      {
        server: bare,
        plan: { url: `${bare.url}/ceiling`, method: 'GET', headers: {} },
        expectStatus: 200,
        label: 'bare route',
      },
      scenarioSide(scenario, server, fixture),
    );
  } finally {
    await bare.stop();
  }
}

/** The reads whose PostgreSQL + Redis figure is compared with SQLite's. */
const COMPARED_READS = ['list-secrets', 'read-secret'];

/**
 * The reads on PostgreSQL + Redis as a share of the same reads on SQLite, in
 * alternating rounds against a server of each, both running (the idle one
 * costs nothing): the backends' own runs are minutes apart.
 */
async function comparePostgresWithSqlite(): Promise<void> {
  say('\nPostgreSQL + Redis against SQLite, alternating:');
  const dir = join(workDir, 'compared');
  const prepared = [
    await prepareBackend('sqlite', dir, process.env),
    await prepareBackend('postgres', dir, process.env),
  ];
  for (const backend of prepared) backends.add(backend);
  const servers: ServerProcess[] = [];
  try {
    const sides: Array<{ server: ServerProcess; fixture: Fixture }> = [];
    for (const backend of prepared) {
      const server = await startCoffer({ root, backend, tls, logLevel: options.logLevel });
      servers.push(server);
      sides.push({
        server,
        fixture: await createFixture({ baseUrl: server.url, caFile: tls.certFile, say }),
      });
    }
    const [sqlite, postgres] = sides as [(typeof sides)[0], (typeof sides)[0]];
    for (const id of COMPARED_READS) {
      if (!selected(id)) continue;
      const scenario = httpScenario(id);
      const side = ({ server, fixture }: (typeof sides)[0], label: string) =>
        scenarioSide(scenario, server, fixture, `${scenario.title} (${label})`);
      await alternatingShare(
        {
          id: `${id}-postgres-share`,
          title: `${scenario.title}: PostgreSQL + Redis, % of SQLite, alternating`,
          backend: 'postgres',
          target: targets.postgresShare,
        },
        side(sqlite, 'sqlite'),
        side(postgres, 'postgres'),
      );
    }
  } finally {
    for (const server of servers) await server.stop();
    for (const backend of prepared) {
      await backend.dispose();
      backends.delete(backend);
    }
  }
}

async function measureCeilings(
  plain: boolean,
  comparedWith: string,
  fixture: Pick<Fixture, 'listingBytes' | 'readShape'> | null,
): Promise<Ceilings> {
  const listingBytes = fixture?.listingBytes ?? null;
  const readShapeFile = join(workDir, 'read-shape.json');
  if (fixture) writeFileSync(readShapeFile, JSON.stringify(fixture.readShape));
  // With --profile the bare stack is profiled too, to compare a read with it function by function.
  const slug = comparedWith.replace(/\W+/g, '-');
  const profileDir = options.profile ? join(workDir, `profile-ceiling-${slug}`) : null;
  const server = await startCeilingServer(plain, {
    ...(profileDir ? { profileDir } : {}),
    ...(fixture ? { readShapeFile } : {}),
  });
  /** Measures one route: its req/s, and its run for a profile's comparisons. */
  const measure = async (id: string, title: string, path: string) => {
    const { result, cpu, window } = await measureLoad(
      load,
      server,
      { url: `${server.url}${path}`, method: 'GET', headers: {} },
      timing,
      title,
    );
    push({
      kind: 'load',
      id,
      title: `${title}${plain ? ' (plain HTTP)' : ''}`,
      backend: `for ${comparedWith}`,
      result,
      cpu,
      maxRssMB: null,
      expectStatus: 200,
      ratio: id === 'ceiling' ? 1 : null,
      sizedRatio: id === 'ceiling' ? null : 1,
      target: null,
      pass: null,
    });
    return { rps: result.rps, run: { window, requests: result.requests } };
  };
  try {
    const tiny = await measure('ceiling', 'ceiling: bare Fastify, tiny JSON', '/ceiling');
    const listingSized =
      listingBytes === null
        ? null
        : await measure(
            'ceiling-sized',
            `ceiling: bare Fastify, ${(listingBytes / 1000).toFixed(0)} KB JSON`,
            `/ceiling/json/${listingBytes}`,
          );
    const readShaped =
      fixture === null
        ? null
        : await measure(
            'ceiling-read-shaped',
            "ceiling: bare Fastify, a read's answer replayed (headers and body)",
            '/ceiling/read-shaped',
          );
    // Stopped before its profile is read: the profile is written at exit.
    await server.stop();
    const profile = profileDir
      ? findProfile(profileDir, join(resultsDir, `ceiling-${slug}.cpuprofile`))
      : null;
    return {
      tinyRps: tiny.rps,
      listingSizedRps: listingSized?.rps ?? null,
      readShapedRps: readShaped?.rps ?? null,
      readShapedProfile: profile && readShaped ? { ...readShaped.run, file: profile } : null,
    };
  } finally {
    await server.stop();
  }
}

/** One HTTP scenario under load: its table row, the RSS seen and its profile window. */
async function measureScenario(
  scenario: HttpScenario,
  server: ServerProcess,
  fixture: Fixture,
  backend: string,
  ceilings: Ceilings,
  options: {
    /** Where the load goes when not to `server` itself (a load balancer). */
    url?: string;
    extras?: MeasureExtras;
    /** Every log the evidence of a stall would be in. */
    logFiles?: readonly string[];
  } = {},
): Promise<{ maxRssMiB: number; window: Window; result: LoadResult }> {
  const measured = await measureLoad(
    load,
    server,
    scenario.plan(fixture, options.url ?? server.url),
    timing,
    scenario.title,
    options.extras,
  );
  const { errors, timeouts } = measured.result;
  if (errors > 0 || timeouts > 0) {
    // The evidence of a stall: keep the logs and say where they are.
    keepLogs = true;
    say(
      `  ${scenario.title} [${backend}]: ${errors} errors, ${timeouts} timeouts; server log: ${(options.logFiles ?? [server.logFile]).join(', ')}`,
    );
  }
  const row: LoadRow = {
    kind: 'load',
    id: scenario.id,
    title: scenario.title,
    backend,
    result: measured.result,
    cpu: measured.cpu,
    maxRssMB: MB(measured.maxRssMiB),
    expectStatus: scenario.expectStatus,
    ratio: measured.result.rps / ceilings.tinyRps,
    sizedRatio:
      scenario.listingSized && ceilings.listingSizedRps
        ? measured.result.rps / ceilings.listingSizedRps
        : scenario.readSized && ceilings.readShapedRps
          ? measured.result.rps / ceilings.readShapedRps
          : null,
    target: scenario.target,
    pass: null,
  };
  push(judge(row, ceilings.tinyRps));
  return measured;
}

/** Keyed writes against plain ones of the same run: the issue's bound is within 10 %. */
function keyedWriteCost(backend: string): void {
  const rps = (id: string) => {
    const row = rows.find((r) => r.kind === 'load' && r.id === id && r.backend === backend);
    return row?.kind === 'load' ? row.result.rps : null;
  };
  const plain = rps('write-secret');
  const keyed = rps('write-secret-keyed');
  if (plain === null || keyed === null) return;
  const ratio = (keyed / plain) * 100;
  push({
    kind: 'value',
    id: 'write-secret-keyed-ratio',
    title: 'writes with Idempotency-Key, % of writes without',
    backend,
    value: ratio,
    unit: '%',
    detail: `${keyed.toFixed(0)} vs ${plain.toFixed(0)} req/s, same run (bound: 90 %)`,
    target: null,
    pass: ratio >= 90,
  });
}

/** Keyed writes as a share of plain ones, in alternating rounds on one server. */
async function keyedAgainstPlain(server: ServerProcess, fixture: Fixture, backend: string) {
  const side = (id: string) => scenarioSide(httpScenario(id), server, fixture);
  await alternatingShare(
    {
      id: 'write-secret-keyed-share',
      title: 'writes with Idempotency-Key, % of writes without, alternating',
      backend,
      target: targets.keyedShare,
    },
    side('write-secret'),
    side('write-secret-keyed'),
    KEYED_ROUNDS,
  );
}

/**
 * PostgreSQL alone running the transaction of a Coffer secret write (pgbench,
 * as many connections as the server's pool), right after Coffer's own writes:
 * the share of what the database allows on this machine that Coffer reaches.
 * Then the same transaction with an idempotency key's row against without, in
 * alternating rounds: the database's part of what a key costs a write.
 */
async function measurePostgresAlone(backend: Backend): Promise<void> {
  const title = "PostgreSQL alone: Coffer's write transaction";
  if (!havePgbench()) {
    say(`  ${title}: skipped (pgbench not installed; Debian package postgresql-client)`);
    return;
  }
  const clients = DEFAULT_DATABASE_POOL_SIZE;
  const run = await postgresAlone({ databaseUrl: backend.env.DATABASE_URL!, workDir, clients });
  if (timing.warmupSeconds > 0) await run('plain', timing.warmupSeconds);
  const tps = await run('plain', timing.seconds);
  const coffer = rows.find(
    (r) => r.kind === 'load' && r.id === 'write-secret' && r.backend === backend.name,
  );
  const share =
    coffer?.kind === 'load'
      ? `; Coffer's durable writes: ${((coffer.result.rps / tps) * 100).toFixed(0)}% of it`
      : '';
  push({
    kind: 'value',
    id: 'postgres-alone-write',
    title,
    backend: backend.name,
    value: tps,
    unit: 'tx/s',
    detail: `pgbench, ${clients} connections${share}`,
    target: null,
    pass: null,
  });
  const seconds = roundSeconds();
  const rounds = await alternateRounds(
    ALTERNATING_ROUNDS,
    () => run('plain', seconds),
    () => run('keyed', seconds),
  );
  const shares = sharesOf(rounds, seconds, 'tx/s');
  push({
    kind: 'value',
    id: 'postgres-alone-keyed-share',
    title: "PostgreSQL alone: with an idempotency key's row, % of without, alternating",
    backend: backend.name,
    value: shares.median,
    unit: '%',
    detail: `pgbench, ${clients} connections, the keyed transaction measured: ${shares.detail}`,
    target: null,
    pass: null,
    breakdown: { rounds },
  });
}

/** Open statement counters (closed with their backend). */
const counters = new Set<Awaited<ReturnType<typeof statementCounter>> | null>();
/** The ceilings measured last (the scaled-out run compares with PostgreSQL's). */
let lastCeilings: Ceilings | null = null;

/**
 * Takes `read` as a measured run starts and as it ends (`extras`), for a
 * figure of the window between (`readings`: null if the run never started).
 */
function aroundWindow<T>(read: () => Promise<T>) {
  let start: Promise<T> | null = null;
  let end: Promise<T> | null = null;
  return {
    extras: {
      onMeasuring: () => (start = read()),
      onMeasured: () => (end = read()),
    } satisfies MeasureExtras,
    readings: async (): Promise<[T, T] | null> => (start && end ? [await start, await end] : null),
  };
}

/** The req/s `scenario`'s last measured run reached (0 when it has none). */
function measuredRps(scenario: HttpScenario): number {
  const row = rows.findLast((r) => r.kind === 'load' && r.id === scenario.id);
  return row?.kind === 'load' ? row.result.rps : 0;
}

/**
 * Reads `counter` as a measured run starts and ends, and reports the
 * statements per second between: the servers' own count and PostgreSQL's
 * transactions (each scrape adds the outbox gauges' two selects per instance).
 */
function countStatements(counter: Awaited<ReturnType<typeof statementCounter>>) {
  const window = aroundWindow(() => counter.read());
  return {
    extras: window.extras,
    async report(scenario: HttpScenario, backend: string): Promise<void> {
      const readings = await window.readings();
      if (!readings) return;
      const rates = ratesBetween(...readings);
      const rps = measuredRps(scenario);
      push({
        kind: 'value',
        id: `${scenario.id}-statements`,
        title: `statements during: ${scenario.title}`,
        backend,
        value: rates.select + rates.other,
        unit: 'stmt/s',
        detail:
          `select ${rates.select.toFixed(1)}/s (${rps ? (rates.select / rps).toFixed(4) : '?'} per request), ` +
          `other ${rates.other.toFixed(1)}/s (token reads' audit batches, last-used stamps); ` +
          `the servers' count, incl. a scrape's 2 selects per instance` +
          (rates.transactions === null
            ? ''
            : `; PostgreSQL: ${rates.transactions.toFixed(1)} transactions/s`),
        target: null,
        pass: null,
      });
    },
  };
}

/**
 * The server's garbage-collection time per request while `scenario` is
 * measured (its metrics, `readGcTime`): for the writes, where a keyed write's
 * extra cost has been mostly the collector's (docs/performance.md).
 */
function gcDuring(metricsUrls: readonly string[]) {
  const window = aroundWindow(() => readGcTime(metricsUrls));
  return {
    extras: window.extras,
    async report(scenario: HttpScenario, backend: string): Promise<void> {
      const readings = await window.readings();
      if (!readings) return;
      const gc = gcPerRequest(...readings, measuredRps(scenario));
      push({
        kind: 'value',
        id: `${scenario.id}-gc`,
        title: `garbage collection during: ${scenario.title}`,
        backend,
        value: gc.total,
        unit: 'µs/req',
        detail:
          `scavenges ${gc.minor.toFixed(1)}, mark-compacts ${gc.major.toFixed(1)} and their incremental ` +
          `marking ${gc.incremental.toFixed(1)} µs per request (the server's nodejs_gc_duration_seconds)`,
        target: null,
        pass: null,
      });
    },
  };
}

async function runBackend(name: 'sqlite' | 'postgres'): Promise<void> {
  say(`\n${name === 'sqlite' ? 'SQLite (embedded default)' : 'PostgreSQL + Redis'}:`);
  const backend = await prepareBackend(name, workDir, process.env);
  backends.add(backend);
  const profileDir = options.profile ? join(workDir, `profile-${name}`) : undefined;
  const windows: Window[] = [];
  /** Measured runs by scenario id, for the function-by-function comparisons (--profile). */
  const profiledRuns = new Map<string, Omit<ProfiledRun, 'file'>>();
  let bareRead: ProfiledRun | null = null;
  let maxLoadRssMiB = 0;
  let server: ServerProcess | null = null;
  try {
    // Both backends with the metrics on (as operators run them), so neither pays
    // for the per-request metrics hook alone; the statements are read from them.
    const metricsPort = await freePort();
    server = await startCoffer({
      root,
      backend,
      tls,
      logLevel: options.logLevel,
      // The feed's scenario holds STREAM_COUNT streams on one API key.
      extraEnv: {
        EVENTS_MAX_STREAMS_PER_CREDENTIAL: String(STREAM_COUNT),
        EVENTS_MAX_STREAMS: String(STREAM_COUNT * 2),
        METRICS_PORT: String(metricsPort),
      },
      ...(profileDir ? { profileDir } : {}),
    });
    const metricsUrls = [`http://127.0.0.1:${metricsPort}/metrics`];
    const counter = await statementCounter(metricsUrls, backend.env.DATABASE_URL ?? null);
    counters.add(counter);
    await new Promise((r) => setTimeout(r, 1000));
    const freshRssMiB = server.rssMiB();
    const fixture = await createFixture({ baseUrl: server.url, caFile: tls.certFile, say });
    // Just after the setup's requests, then idle: V8 returns the garbage of a
    // burst of requests once the process has allocated nothing for a while (its
    // memory reducer, 8 to 20 s after the last collection here), so the idle
    // figure is read after IDLE_MS without requests.
    const setupDone = performance.now();
    await new Promise((r) => setTimeout(r, 2000));
    const afterSetupRssMiB = server.rssMiB();
    await new Promise((r) => setTimeout(r, Math.max(0, setupDone + IDLE_MS - performance.now())));
    const idleRssMiB = server.rssMiB();

    const httpScenarios = HTTP_SCENARIOS.filter((s) => selected(s.id));
    const ceilings = httpScenarios.length ? await measureCeilings(false, name, fixture) : null;
    if (ceilings) lastCeilings = ceilings;
    bareRead = ceilings?.readShapedProfile ?? null;
    for (const scenario of httpScenarios) {
      const counting =
        counter && READ_SCENARIO_IDS.has(scenario.id) ? countStatements(counter) : null;
      const collecting = scenario.id.startsWith('write-') ? gcDuring(metricsUrls) : null;
      // A read's statements or a write's collector time: never both.
      const extras = counting?.extras ?? collecting?.extras;
      const { maxRssMiB, window, result } = await measureScenario(
        scenario,
        server,
        fixture,
        name,
        ceilings!,
        extras ? { extras } : {},
      );
      if (counting) await counting.report(scenario, name);
      if (collecting) await collecting.report(scenario, name);
      windows.push(window);
      profiledRuns.set(scenario.id, { window, requests: result.requests });
      maxLoadRssMiB = Math.max(maxLoadRssMiB, maxRssMiB);
      if (scenario.id === 'read-secret' && !options.profile)
        await againstBareRoute(scenario, server, fixture, name, false);
    }
    keyedWriteCost(name);
    if (selected('write-secret-keyed') && !options.profile)
      await keyedAgainstPlain(server, fixture, name);
    if (name === 'postgres' && selected('write-secret')) await measurePostgresAlone(backend);
    if (FEED_IDS.some(selected)) {
      const list = httpScenario('list-secrets');
      await measureFeed({
        load,
        server,
        fixture,
        baseUrl: server.url,
        caFile: tls.certFile,
        timing,
        listPlan: list.plan(fixture, server.url),
        say,
        push: (row) => push(judge({ ...row, backend: name }, null)),
      });
    }

    for (const scenario of CLIENT_SCENARIOS) {
      if (!selected(scenario.id)) continue;
      const row = await scenario.run({
        fixture,
        baseUrl: server.url,
        caFile: tls.certFile,
        root,
        workDir,
        options,
        say,
        report: (text) => profiles.push(text),
      });
      if (!row) {
        say(`  ${scenario.title}: skipped (not built)`);
        continue;
      }
      push(judge({ ...row, id: scenario.id, backend: name }, null));
    }

    const rss = (id: string, title: string, mib: number, detail: string, target: Row['target']) =>
      push(
        judge(
          {
            kind: 'value',
            id,
            title,
            backend: name,
            value: MB(mib),
            unit: 'MB',
            detail,
            target,
            pass: null,
          },
          null,
        ),
      );
    rss('rss-fresh', 'server RSS, just started', freshRssMiB, 'VmRSS', null);
    rss('rss-setup', 'server RSS, after setup', afterSetupRssMiB, 'VmRSS 2 s after it', null);
    rss(
      'rss-idle',
      'server RSS, idle',
      idleRssMiB,
      `VmRSS after ${IDLE_MS / 1000} s without requests`,
      targets.rssIdle,
    );
    if (maxLoadRssMiB > 0)
      rss(
        'rss-load',
        'server RSS, under load',
        maxLoadRssMiB,
        'max VmRSS (250 ms samples)',
        targets.rssLoad,
      );
    rss('rss-peak', 'server RSS, peak of the run', server.peakRssMiB(), 'VmHWM, incl. setup', null);
  } finally {
    for (const counter of counters) await counter?.close();
    counters.clear();
    await server?.stop();
    await backend.dispose();
    backends.delete(backend);
  }
  if (profileDir) {
    const file = findProfile(profileDir, join(resultsDir, `server-${name}.cpuprofile`));
    if (file) {
      profiles.push(renderProfiles(name, summariseProfile(file, windows)));
      profiles.push(...profileComparisons(file, name, profiledRuns, bareRead));
    }
  }
}

/** A read against the bare route replaying its answer, a keyed write against a plain one. */
function profileComparisons(
  file: string,
  backend: string,
  runs: ReadonlyMap<string, Omit<ProfiledRun, 'file'>>,
  bareRead: ProfiledRun | null,
): string[] {
  const inFile = (id: string) => {
    const run = runs.get(id);
    return run ? { ...run, file } : null;
  };
  const out: string[] = [];
  for (const scenario of HTTP_SCENARIOS) {
    const run = inFile(scenario.id);
    if (!run) continue;
    const label = `${run.window.label} (${backend})`;
    if (scenario.readSized && bareRead) {
      out.push(renderProfileComparison(label, run, bareRead, "the bare route's"));
    }
    const plain = scenario.id === 'write-secret-keyed' ? inFile('write-secret') : null;
    if (plain) out.push(renderProfileComparison(label, run, plain, 'a plain write'));
  }
  return out;
}

/**
 * Three instances on one PostgreSQL and one Redis behind HAProxy (TCP, TLS
 * passed through): the reads' req/s and the statements PostgreSQL runs for
 * them. On a 2-core machine req/s cannot grow with instances (they share the
 * cores with each other, the database and the load generator); what shows
 * that reads scale out is how few statements each one costs.
 */
async function runScaledOut(): Promise<void> {
  const title = 'PostgreSQL + Redis, three instances behind HAProxy';
  say(`\n${title}:`);
  const haproxy = findHaproxy();
  if (!haproxy) {
    say('  skipped: haproxy not installed (Debian: apt-get update && apt-get install haproxy)');
    return;
  }
  if (!process.env.REDIS_URL) {
    say('  skipped: REDIS_URL is not set (instances share their caches through Redis)');
    return;
  }
  const dir = join(workDir, 'scaled');
  mkdirSync(dir, { recursive: true });
  const backend = await prepareBackend('postgres', dir, process.env);
  backends.add(backend);
  const instances: ServerProcess[] = [];
  let balancer: Balancer | null = null;
  let counter: Awaited<ReturnType<typeof statementCounter>> | null = null;
  try {
    const port = await freePort();
    const metricsPorts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const metricsPort = await freePort();
      metricsPorts.push(metricsPort);
      instances.push(
        await startCoffer({
          root,
          backend,
          tls,
          logLevel: options.logLevel,
          extraEnv: {
            PUBLIC_URL: `https://127.0.0.1:${port}`,
            METRICS_PORT: String(metricsPort),
          },
        }),
      );
    }
    balancer = await startBalancer(
      haproxy,
      port,
      instances.map((i) => Number(new URL(i.url).port)),
      dir,
    );
    const url = `https://127.0.0.1:${port}`;
    counter = await statementCounter(
      metricsPorts.map((p) => `http://127.0.0.1:${p}/metrics`),
      backend.env.DATABASE_URL!,
    );
    const fixture = await createFixture({ baseUrl: url, caFile: tls.certFile, say });
    const ceilings = lastCeilings ?? (await measureCeilings(false, 'postgres ×3', fixture));
    const logFiles = [...instances.map((i) => i.logFile), balancer.logFile];
    for (const scenario of SCALED_OUT_SCENARIOS) {
      if (!selected(scenario.id)) continue;
      const counting = countStatements(counter);
      await measureScenario(scenario, instances[0]!, fixture, 'postgres ×3', ceilings, {
        url,
        logFiles,
        extras: {
          ...counting.extras,
          alsoServerPids: [...instances.slice(1).map((i) => i.pid), balancer.pid],
        },
      });
      await counting.report(scenario, 'postgres ×3');
    }
  } finally {
    await counter?.close();
    await balancer?.stop();
    await Promise.all(instances.map((i) => i.stop()));
    await backend.dispose();
    backends.delete(backend);
  }
}

/** Behind a TLS-terminating proxy (TLS=off, TRUST_PROXY=true): what HTTPS costs, on SQLite. */
async function runPlainHttp(): Promise<void> {
  say('\nPlain HTTP (TLS=off behind a proxy), SQLite:');
  const backend = await prepareBackend('sqlite', join(workDir, 'plain'), process.env);
  backends.add(backend);
  let server: ServerProcess | null = null;
  try {
    server = await startCoffer({ root, backend, tls: null, logLevel: options.logLevel });
    const fixture = await createFixture({ baseUrl: server.url, caFile: null, say });
    const ceilings = await measureCeilings(true, 'sqlite, http', fixture);
    for (const scenario of PLAIN_HTTP_SCENARIOS) {
      if (!selected(scenario.id)) continue;
      await measureScenario(scenario, server, fixture, 'sqlite, http', ceilings);
      if (scenario.id === 'http-read-secret')
        await againstBareRoute(scenario, server, fixture, 'sqlite, http', true);
    }
  } finally {
    await server?.stop();
    await backend.dispose();
    backends.delete(backend);
  }
}

/**
 * The web dashboard in headless Chromium, on a SQLite server of its own (the
 * figures are the browser's; the backend only answers a few dozen requests).
 */
async function runDashboard(): Promise<void> {
  say('\nDashboard (headless Chromium, SQLite):');
  const missing = dashboardMissing(root);
  if (missing) {
    say(`  dashboard: skipped (${missing})`);
    return;
  }
  const backend = await prepareBackend('sqlite', join(workDir, 'dashboard'), process.env);
  backends.add(backend);
  let server: ServerProcess | null = null;
  try {
    server = await startCoffer({ root, backend, tls, logLevel: options.logLevel });
    await measureDashboard({
      baseUrl: server.url,
      caFile: tls.certFile,
      root,
      options,
      selected,
      say,
      report: (text) => profiles.push(text),
      push: (row) => push(judge({ ...row, backend: 'sqlite, chromium' }, null)),
    });
  } finally {
    await server?.stop();
    await backend.dispose();
    backends.delete(backend);
  }
}

/** Rows of a backend's run (the dashboard's come from a run of their own). */
const BACKEND_IDS = [
  ...HTTP_SCENARIOS.map((s) => s.id),
  ...FEED_IDS,
  ...CLIENT_SCENARIOS.map((s) => s.id),
  'rss-fresh',
  'rss-setup',
  'rss-idle',
  'rss-load',
  'rss-peak',
];

let exitCode = 0;
try {
  if (BACKEND_IDS.some(selected)) for (const backend of options.backends) await runBackend(backend);
  if (options.backends.includes('postgres') && SCALED_OUT_SCENARIOS.some((s) => selected(s.id)))
    await runScaledOut();
  if (options.backends.length === 2 && !options.profile && COMPARED_READS.some(selected))
    await comparePostgresWithSqlite();
  if (!options.quick && PLAIN_HTTP_SCENARIOS.some((s) => selected(s.id))) await runPlainHttp();
  if (DASHBOARD_IDS.some(selected)) await runDashboard();
} catch (err) {
  exitCode = 1;
  console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : err}`);
} finally {
  load.close();
}

const finishedAt = new Date();
say(`\n${renderTables(rows)}`);
if (profiles.length)
  say(
    `\n${profiles.join('\n\n')}` +
      (options.profile ? `\n\n(.cpuprofile files kept in ${resultsDir})` : ''),
  );
const disturbed = rows.filter((r) => r.kind === 'load' && r.cpu.others > 0.2);
if (disturbed.length)
  say(
    `\nwarning: other work used the machine during ${disturbed.length} measurement(s) ` +
      `(CPU "other" > 0.2 cores); their figures are low. Rerun on a quiet machine.`,
  );
const short = rows.filter((r) => r.pass === false);
say(
  `\n${rows.filter((r) => r.pass === true).length} targets met, ${short.length} short` +
    `${short.length ? ` (${short.map((r) => `${r.title} [${r.backend}]`).join('; ')})` : ''}; ` +
    `${((finishedAt.getTime() - startedAt.getTime()) / 1000).toFixed(0)} s.`,
);

const report = {
  startedAt: startedAt.toISOString(),
  finishedAt: finishedAt.toISOString(),
  quick: options.quick,
  machine,
  timing,
  serverLogLevel: options.logLevel,
  rows: rows.map((r) => ({ ...r, target: r.target?.text ?? null })),
};
writeFileSync(join(resultsDir, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
if (options.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
if (exitCode === 0 && !keepLogs) rmSync(workDir, { recursive: true, force: true });
else
  say(
    `server logs kept in ${workDir}${keepLogs ? ' (a scenario had errors or timeouts; see above)' : ''}`,
  );
process.exit(exitCode);
