/** Command-line options of `npm run bench -- [--quick] [--json] [--profile] [filter…]`. */
export interface BenchOptions {
  quick: boolean;
  /** Print the JSON report on stdout (the table goes to stderr). */
  json: boolean;
  /** Run each Coffer server with `--cpu-prof` and print its top self-time functions. */
  profile: boolean;
  /** Scenario id substrings; empty runs everything. */
  filters: string[];
  /** Backends to run; `postgres` needs DATABASE_URL. */
  backends: Array<'sqlite' | 'postgres'>;
  /** Load measurement lengths. */
  warmupSeconds: number;
  seconds: number;
  connections: number;
  /** Runs of `coffer run -- true` (median reported). */
  cliRuns: number;
  logLevel: string;
  /** Size of the generated tree of the scan scenarios. */
  scanMegabytes: number;
  /** Keep the run's directory (server logs, data) even when every scenario went well. */
  keepLogs: boolean;
}

export const USAGE = `npm run bench -- [options] [scenario-filter…]

  --quick            short measurements (smoke check, figures not comparable)
  --json             JSON report on stdout (the table goes to stderr)
  --profile          CPU-profile each server under load; print top self-time functions
  --backend=sqlite   only one backend (sqlite | postgres); postgres needs DATABASE_URL
  --seconds=N        measured seconds per HTTP scenario (default 10, quick 3)
  --log-level=L      server LOG_LEVEL (default info, the server's own default)
  --scan-mb=N        size of the scan scenarios' generated tree (default 500, quick 50)
  --keep-logs        keep the run's directory (server logs) even when all went well;
                     it is always kept when a scenario had errors or timeouts

Scenario filters are substrings of scenario ids: list-secrets, list-secrets-304,
read-secret, write-secret, write-secret-keyed (the same writes with a new
Idempotency-Key each; its ratio to write-secret is reported), members-list, rate-limited-429, unauthenticated-401,
http-list-secrets, http-read-secret (plain HTTP), scaled-list-secrets,
scaled-list-secrets-304, scaled-read-secret (three instances behind HAProxy, with
PostgreSQL and REDIS_URL; HAProxy from apt-get install haproxy), sdk-decrypt, sdk-list, sdk-resolve-10k,
coffer-run, coffer-run-references, rekey-1k, rekey-10k, rss; feed (the change feed's rows: feed-fanout,
feed-idle-memory, feed-listing: 1,000 event streams on the instance); scan (coffer
scan: scan-files-10, scan-files, scan-files-10k, scan-flat, scan-history, scan-hook);
dashboard (all of the dashboard's rows:
dashboard-first-load, dashboard-unlock, dashboard-argon2id, dashboard-unlock-rest,
dashboard-grid-500x5, dashboard-grid-500x5-render, dashboard-reveal, dashboard-edit;
headless Chromium at /usr/bin/chromium, skipped when it is missing).
PostgreSQL + Redis run too when DATABASE_URL (and REDIS_URL) are set; the bench
creates and drops its own database on that server.`;

/**
 * `--name[=value]` flags (a bare flag is `'true'`) and the other arguments
 * (scenario filters) of a bench command; an unknown flag throws with `usage`,
 * `--help` prints it and exits.
 */
export function parseFlags(
  argv: string[],
  known: readonly string[],
  usage: string,
): { flags: Map<string, string>; filters: string[] } {
  const flags = new Map<string, string>();
  const filters: string[] = [];
  for (const arg of argv) {
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      flags.set(eq > 0 ? arg.slice(2, eq) : arg.slice(2), eq > 0 ? arg.slice(eq + 1) : 'true');
    } else filters.push(arg);
  }
  for (const name of flags.keys())
    if (name !== 'help' && !known.includes(name))
      throw new Error(`unknown option --${name}\n\n${usage}`);
  if (flags.has('help')) {
    console.error(usage);
    process.exit(0);
  }
  return { flags, filters };
}

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions {
  const { flags, filters } = parseFlags(
    argv,
    ['quick', 'json', 'profile', 'backend', 'seconds', 'log-level', 'scan-mb', 'keep-logs'],
    USAGE,
  );
  const quick = flags.has('quick');
  const backendFlag = flags.get('backend');
  if (backendFlag && backendFlag !== 'sqlite' && backendFlag !== 'postgres')
    throw new Error(`--backend must be sqlite or postgres`);
  if (backendFlag === 'postgres' && !env.DATABASE_URL)
    throw new Error('--backend=postgres needs DATABASE_URL');
  const backends: BenchOptions['backends'] = backendFlag
    ? [backendFlag as 'sqlite' | 'postgres']
    : env.DATABASE_URL
      ? ['sqlite', 'postgres']
      : ['sqlite'];
  const seconds = Number(flags.get('seconds') ?? (quick ? 3 : 10));
  if (!Number.isFinite(seconds) || seconds < 1) throw new Error('--seconds must be ≥ 1');
  const scanMegabytes = Number(flags.get('scan-mb') ?? (quick ? 50 : 500));
  if (!Number.isInteger(scanMegabytes) || scanMegabytes < 1)
    throw new Error('--scan-mb must be a whole number ≥ 1');
  return {
    quick,
    json: flags.has('json'),
    profile: flags.has('profile'),
    filters,
    backends,
    warmupSeconds: quick ? 1 : 3,
    seconds,
    connections: 50,
    cliRuns: quick ? 5 : 20,
    logLevel: flags.get('log-level') ?? 'info',
    scanMegabytes,
    keepLogs: flags.has('keep-logs'),
  };
}
