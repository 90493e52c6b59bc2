import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';

/** HAProxy from Debian's archive (`apt-get install haproxy`), or null when it is not installed. */
export function findHaproxy(): string | null {
  for (const path of ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy', 'haproxy']) {
    if (spawnSync(path, ['-v']).status === 0) return path;
  }
  return null;
}

export interface Balancer {
  pid: number;
  port: number;
  logFile: string;
  stop(): Promise<void>;
}

/**
 * HAProxy in TCP mode spreading connections round-robin over `ports`: TLS
 * passes through to the instances (each has the same certificate), so a
 * client sees one HTTPS server, and HAProxy adds little work of its own.
 */
export async function startBalancer(
  haproxy: string,
  port: number,
  ports: readonly number[],
  workDir: string,
): Promise<Balancer> {
  const config = join(workDir, 'haproxy.cfg');
  writeFileSync(
    config,
    [
      'global',
      '  maxconn 4096',
      'defaults',
      '  mode tcp',
      '  timeout connect 5s',
      '  timeout client 60s',
      '  timeout server 60s',
      'frontend coffer',
      `  bind 127.0.0.1:${port}`,
      '  default_backend instances',
      'backend instances',
      '  balance roundrobin',
      ...ports.map((p, i) => `  server coffer${i + 1} 127.0.0.1:${p}`),
      '',
    ].join('\n'),
  );
  const logFile = join(workDir, 'haproxy.log');
  const log = createWriteStream(logFile);
  const child: ChildProcess = spawn(haproxy, ['-db', '-f', config], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  for (let i = 0; ; i++) {
    if (child.exitCode !== null)
      throw new Error(`haproxy exited (${child.exitCode}); see ${logFile}`);
    if (await accepts(port)) break;
    if (i > 100) throw new Error(`haproxy did not listen on ${port}; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    pid: child.pid!,
    port,
    logFile,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => {
          log.end();
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Statements and transactions so far: the instances' own count and PostgreSQL's. */
export interface StatementCount {
  /** Sum of `coffer_db_statements_total` over the instances, by kind. */
  select: number;
  other: number;
  /** `xact_commit + xact_rollback` of the database in `pg_stat_database` (PostgreSQL only). */
  transactions: number | null;
  atMs: number;
}

/**
 * Sums, over the instances' metrics (`METRICS_PORT` listeners), the samples
 * `pattern` matches: its first group names the sample, its second is the value.
 */
export async function sumMetrics<K extends string>(
  metricsUrls: readonly string[],
  pattern: RegExp,
  names: readonly K[],
): Promise<Record<K, number>> {
  const sums = Object.fromEntries(names.map((name) => [name, 0])) as Record<K, number>;
  for (const url of metricsUrls) {
    const text = await (await fetch(url)).text();
    for (const match of text.matchAll(pattern)) sums[match[1] as K] += Number(match[2]);
  }
  return sums;
}

/**
 * Reads the instances' statement counters (`METRICS_PORT` listeners) and
 * PostgreSQL's transaction count of the bench's database, which PostgreSQL
 * keeps whoever the client is (its backends report at most once a second).
 */
export async function statementCounter(
  metricsUrls: readonly string[],
  databaseUrl: string | null,
): Promise<{ read(): Promise<StatementCount>; close(): Promise<void> }> {
  const client = databaseUrl ? new pg.Client({ connectionString: databaseUrl }) : null;
  await client?.connect();
  const read = async (): Promise<StatementCount> => {
    const counts = await sumMetrics(
      metricsUrls,
      /^coffer_db_statements_total\{kind="(select|other)"\} (\d+)/gm,
      ['select', 'other'],
    );
    const atMs = performance.now();
    if (!client) return { ...counts, transactions: null, atMs };
    const { rows } = await client.query<{ n: string }>(
      'select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()',
    );
    return { ...counts, transactions: Number(rows[0]?.n ?? 0), atMs };
  };
  return { read, close: async () => client?.end() };
}

/** Per second between two counts. */
export function ratesBetween(
  from: StatementCount,
  to: StatementCount,
): { select: number; other: number; transactions: number | null } {
  const seconds = (to.atMs - from.atMs) / 1000;
  return {
    select: (to.select - from.select) / seconds,
    other: (to.other - from.other) / seconds,
    transactions:
      to.transactions === null || from.transactions === null
        ? null
        : (to.transactions - from.transactions) / seconds,
  };
}
