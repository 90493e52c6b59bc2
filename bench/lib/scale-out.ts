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
  /** Sum of `coffer_db_statements_total` over the instances (every kind). */
  statements: number;
  /** `xact_commit + xact_rollback` of the database in `pg_stat_database`. */
  transactions: number;
  atMs: number;
}

/**
 * Reads the instances' statement counters (`METRICS_PORT` listeners) and
 * PostgreSQL's transaction count of the bench's database, which PostgreSQL
 * keeps whoever the client is (its backends report at most once a second).
 */
export async function statementCounter(
  metricsUrls: readonly string[],
  databaseUrl: string,
): Promise<{ read(): Promise<StatementCount>; close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const read = async (): Promise<StatementCount> => {
    let statements = 0;
    for (const url of metricsUrls) {
      const text = await (await fetch(url)).text();
      for (const match of text.matchAll(/^coffer_db_statements_total\{[^}]*\} (\d+)/gm))
        statements += Number(match[1]);
    }
    const { rows } = await client.query<{ n: string }>(
      'select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()',
    );
    return { statements, transactions: Number(rows[0]?.n ?? 0), atMs: performance.now() };
  };
  return { read, close: () => client.end() };
}

/** Per second between two counts. */
export function ratesBetween(
  from: StatementCount,
  to: StatementCount,
): { statements: number; transactions: number } {
  const seconds = (to.atMs - from.atMs) / 1000;
  return {
    statements: (to.statements - from.statements) / seconds,
    transactions: (to.transactions - from.transactions) / seconds,
  };
}
