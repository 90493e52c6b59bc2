import { mkdirSync, statfsSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { busyCores } from './cpu.js';
import { serverNodeFlags } from './node-flags.js';
import { freePort, startProcess, type ServerProcess } from './processes.js';

export interface Machine {
  cpuCount: number;
  cpuModel: string;
  node: string;
  memoryGB: number;
  /** Cores busy during the second before the run: other work on the machine skews figures. */
  busyCoresBefore: number;
  /** Filesystem of the data directory (fsync on tmpfs would not be durable). */
  dataFilesystem: string;
}

const FS_TYPES: Record<number, string> = {
  0xef53: 'ext4',
  0x58465342: 'xfs',
  0x9123683e: 'btrfs',
  0x01021994: 'tmpfs',
  0x794c7630: 'overlayfs',
  0x6969: 'nfs',
  0x2fc12fc1: 'zfs',
};

export async function describeMachine(dataDir: string): Promise<Machine> {
  const cpuList = cpus();
  const fsType = statfsSync(dataDir).type;
  return {
    cpuCount: cpuList.length,
    cpuModel: cpuList[0]?.model.trim() ?? 'unknown',
    node: process.version,
    memoryGB: Math.round(totalmem() / 1e9),
    busyCoresBefore: await busyCores(1000),
    dataFilesystem: FS_TYPES[fsType] ?? `0x${fsType.toString(16)}`,
  };
}

export interface Backend {
  name: 'sqlite' | 'postgres';
  /** The environment of the server process for this backend. */
  env: Record<string, string>;
  /** Drops what the backend created (the PostgreSQL database). */
  dispose(): Promise<void>;
}

/**
 * SQLite: a fresh data directory. PostgreSQL: a fresh database created on the
 * server DATABASE_URL points at (dropped afterwards), with REDIS_URL when set.
 */
export async function prepareBackend(
  name: Backend['name'],
  workDir: string,
  env: NodeJS.ProcessEnv,
): Promise<Backend> {
  const dataDir = join(workDir, `data-${name}`);
  mkdirSync(dataDir, { recursive: true });
  if (name === 'sqlite') return { name, env: { DATA_DIR: dataDir }, dispose: async () => {} };

  const admin = new URL(env.DATABASE_URL!);
  const database = `coffer_bench_${process.pid}_${Date.now()}`;
  const adminClient = new pg.Client({ connectionString: admin.toString() });
  await adminClient.connect();
  await adminClient.query(`CREATE DATABASE ${database}`);
  await adminClient.end();
  const url = new URL(admin);
  url.pathname = `/${database}`;
  return {
    name,
    env: {
      DATA_DIR: dataDir,
      DATABASE_URL: url.toString(),
      ...(env.REDIS_URL ? { REDIS_URL: env.REDIS_URL } : {}),
    },
    async dispose() {
      const client = new pg.Client({ connectionString: admin.toString() });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await client.end();
    },
  };
}

/** Budgets far above what the load generator reaches, so the limiter never caps a measurement. */
export const UNCAPPED_RATE_LIMITS = {
  RATE_LIMIT_SESSION: '1000000000',
  RATE_LIMIT_API_KEY: '1000000000',
  RATE_LIMIT_ANONYMOUS: '1000000000',
};

export interface Tls {
  certFile: string;
  keyFile: string;
}

/** The Coffer server as an operator runs it: the built `main.js`, HTTPS, its own process. */
export async function startCoffer(opts: {
  root: string;
  backend: Backend;
  tls: Tls | null;
  logLevel: string;
  extraEnv?: Record<string, string>;
  profileDir?: string;
}): Promise<ServerProcess> {
  const port = await freePort();
  const env: Record<string, string> = {
    HOST: '127.0.0.1',
    PORT: String(port),
    HTTP_PORT: 'off',
    LOG_LEVEL: opts.logLevel,
    ...UNCAPPED_RATE_LIMITS,
    ...opts.backend.env,
    ...(opts.tls
      ? {
          TLS_CERT_FILE: opts.tls.certFile,
          TLS_KEY_FILE: opts.tls.keyFile,
          PUBLIC_URL: `https://127.0.0.1:${port}`,
        }
      : { TLS: 'off', TRUST_PROXY: 'true' }),
    ...opts.extraEnv,
  };
  const server = await startProcess({
    name: `coffer server (${opts.backend.name})`,
    args: [
      ...serverNodeFlags(opts.root),
      ...(opts.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.profileDir}`] : []),
      join(opts.root, 'packages/server/dist/main.js'),
    ],
    env,
    ready: /Coffer listening on (https?:\/\/\S+)/,
    logFile: join(opts.backend.env.DATA_DIR!, `server-${port}.log`),
  });
  // Connect by address: "localhost" may resolve to ::1 first, where nothing listens.
  return { ...server, url: server.url.replace('//localhost:', '//127.0.0.1:') };
}
