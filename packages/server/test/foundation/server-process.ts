import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { Redis } from 'ioredis';
import { serverNodeFlags } from '../../../../bench/lib/node-flags.js';
import { POSTGRES_URL } from '../support/db.js';

const root = new URL('../../../../', import.meta.url).pathname;
export const SERVER_MAIN = join(root, 'packages/server/dist/main.js');

function newestSource(dir: string): number {
  let newest = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path);
    newest = Math.max(newest, stat.isDirectory() ? newestSource(path) : stat.mtimeMs);
  }
  return newest;
}

/** `npm test` builds first; a single test file run by hand rebuilds when a source is newer. */
export function ensureBuilt(): void {
  let built = 0;
  try {
    built = statSync(SERVER_MAIN).mtimeMs;
  } catch {
    // not built yet
  }
  const sources = Math.max(
    newestSource(join(root, 'packages/server/src')),
    newestSource(join(root, 'packages/sdk/src')),
  );
  if (sources > built)
    execFileSync(process.execPath, [join(root, 'scripts/build.mjs'), 'server'], { cwd: root });
}

/** Settings that must come from each test, never from the environment the tests run in. */
const CONFIG_NAMES = [
  'PORT',
  'HTTP_PORT',
  'HOST',
  'PUBLIC_URL',
  'DATA_DIR',
  'DATABASE_URL',
  'REDIS_URL',
  'REDIS_KEY_PREFIX',
  'SMTP_URL',
  'TLS',
  'TLS_CERT_FILE',
  'TLS_KEY_FILE',
  'TRUST_PROXY',
  'LOG_LEVEL',
  'DASHBOARD',
  'DASHBOARD_DIR',
  'CONNECTION_IDLE_TIMEOUT_MS',
  'MAX_CONNECTIONS',
];

export interface ServerProcess {
  child: ChildProcess;
  /** `https://localhost:<port>` (or `http://` with `TLS=off`), as the server printed it. */
  url: string;
  /** The plain-HTTP redirect listener, when there is one. */
  redirectUrl: string | null;
  output(): { stdout: string; stderr: string };
  /** Parsed pino lines from stdout. */
  logs(): { msg?: string; level: number; [k: string]: unknown }[];
  /** Resolves when a stdout line matches. */
  waitFor(pattern: RegExp): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `node packages/server/dist/main.js` as an operator would, with exactly
 * the given settings (plus any free ports) and node flags (`operatorNodeFlags()`
 * for `npm start`'s), and waits until it prints where it listens. Throws with
 * its output if it exits first.
 */
export async function startServerProcess(
  env: Record<string, string>,
  args: string[] = [],
  nodeFlags: string[] = [],
): Promise<ServerProcess> {
  const child = spawnServer(env, args, nodeFlags);
  let stdout = '';
  let stderr = '';
  const watchers: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const w of [...watchers]) {
      const line = stdout.split('\n').find((l) => w.pattern.test(l));
      if (line !== undefined) {
        watchers.splice(watchers.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const waitFor = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const line = stdout.split('\n').find((l) => pattern.test(l));
      if (line !== undefined) return resolve(line);
      watchers.push({ pattern, resolve });
      void exited.then(({ code, signal }) =>
        reject(
          new Error(
            `server exited (${code ?? signal}) before printing ${pattern}\nstdout:\n${stdout}\nstderr:\n${stderr}`,
          ),
        ),
      );
    });

  const listening = await waitFor(/^Coffer listening on /);
  const match = /^Coffer listening on (\S+)(?: \(HTTP (\S+) redirects\))?/.exec(listening)!;
  return {
    child,
    url: match[1]!,
    redirectUrl: match[2] ?? null,
    output: () => ({ stdout, stderr }),
    logs: () =>
      stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg?: string; level: number }),
    waitFor,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** A port of 127.0.0.1 free right now, for a PUBLIC_URL that must name it before the server starts. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * The built server as the CLI's and the dashboard's tests run it: HTTPS with
 * its generated certificate on a free port of 127.0.0.1 (`url`, also its
 * PUBLIC_URL), data in `dataDir`, nothing from this environment but PATH, rate
 * limits out of the way, logs at `warn`. Resolves once it listens; throws with
 * what it printed if it exits first. `output` keeps collecting.
 */
export async function startPublicServer(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; output(): string }> {
  const port = await freePort();
  const url = `https://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [SERVER_MAIN], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      HTTP_PORT: 'off',
      PUBLIC_URL: url,
      LOG_LEVEL: 'warn',
      // A test acts faster than a person: the budgets are not under test here.
      RATE_LIMIT_SESSION: '100000',
      RATE_LIMIT_API_KEY: '100000',
      RATE_LIMIT_CI_TOKEN: '100000',
      RATE_LIMIT_ANONYMOUS: '100000',
      RATE_LIMIT_AUTH: '100000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  await new Promise<void>((resolve, reject) => {
    // A server that never comes up is stopped: left running, it would keep the test file's
    // process alive after the failure. A start takes a second or two; on two cores shared by
    // a whole CI run (a self-signed certificate is made on each start) it took over 30 s.
    const timer = setTimeout(() => {
      child.off('exit', exited);
      child.kill('SIGKILL');
      reject(new Error(`server did not start:\n${output}`));
    }, 90_000);
    const check = () => {
      if (!output.includes('Coffer listening on')) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      child.off('exit', exited);
      resolve();
    };
    const exited = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    };
    child.stdout!.on('data', check);
    child.once('exit', exited);
  });
  return { child, url, output: () => output };
}

/** The flags `npm start` gives `node`, as an operator runs the server. */
export const operatorNodeFlags = (): string[] => serverNodeFlags(root);

/** Spawns the server without waiting (for tests of start-up failures), with `nodeFlags` before its script. */
export function spawnServer(
  env: Record<string, string>,
  args: string[] = [],
  nodeFlags: string[] = [],
): ChildProcess {
  ensureBuilt();
  const inherited = { ...process.env };
  for (const name of CONFIG_NAMES) delete inherited[name];
  for (const name of Object.keys(inherited))
    if (name.startsWith('RATE_LIMIT_')) delete inherited[name];
  return spawn(process.execPath, [...nodeFlags, SERVER_MAIN, ...args], {
    cwd: root,
    env: { ...inherited, PORT: '0', HTTP_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs the server to completion (it should fail to start) and returns what it printed. */
export async function runServerToExit(
  env: Record<string, string>,
  args: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnServer(env, args);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  json: unknown;
  /** SHA-256 fingerprint of the certificate the server presented (HTTPS only). */
  peerFingerprint: string | null;
}

/**
 * One request over a real connection. HTTPS verifies the server certificate
 * against `ca` (the generated certificate) like any client that trusts it.
 */
export function send(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: unknown;
    ca?: string | Buffer;
  } = {},
): Promise<HttpResponse> {
  const target = new URL(url);
  const payload =
    options.body === undefined
      ? undefined
      : typeof options.body === 'string'
        ? options.body
        : JSON.stringify(options.body);
  const headers: Record<string, string> = { ...options.headers };
  if (payload !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  const requester = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = requester(
      target,
      {
        method: options.method ?? 'GET',
        headers,
        ...(target.protocol === 'https:' ? { ca: options.ca, agent: false } : { agent: false }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          let json: unknown = undefined;
          try {
            json = body ? JSON.parse(body) : undefined;
          } catch {
            // not JSON
          }
          const socket = res.socket as TLSSocket;
          const peer =
            typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate() : null;
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            json,
            peerFingerprint: peer?.fingerprint256 ?? null,
          });
        });
      },
    );
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** Whether a TCP service answers at `host:port` (for optional Redis/PostgreSQL tests). */
export async function reachable(url: string): Promise<boolean> {
  const { connect } = await import('node:net');
  const target = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(target.port), target.hostname);
    socket.setTimeout(1000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

/**
 * A connected Redis client for a test (the caller quits it), or what is missing
 * when nothing answers at `url`, for the test's skip.
 */
export async function testRedis(
  url: string,
): Promise<{ redis: Redis; missing: null } | { redis: null; missing: string }> {
  if (!(await reachable(url)))
    return { redis: null, missing: `Redis at ${url} (COFFER_TEST_REDIS_URL)` };
  const redis = new Redis(url, { enableOfflineQueue: false, lazyConnect: true });
  await redis.connect();
  return { redis, missing: null };
}

/**
 * The real PostgreSQL server's URL (`COFFER_TEST_DATABASE_URL`) for a test that
 * needs it; without one, null after `serviceMissing`, and the caller returns.
 */
export function realPostgres(t: TestContext): string | null {
  if (!POSTGRES_URL) serviceMissing(t, 'A real PostgreSQL server (COFFER_TEST_DATABASE_URL)');
  return POSTGRES_URL;
}

/**
 * A test that needs an external service it cannot find: skipped locally, so
 * the runner counts it as not run (the caller returns right after), a failure
 * where the services are required (`COFFER_REQUIRE_SERVICES=1`, CI).
 */
export function serviceMissing(t: TestContext, what: string): void {
  const message = `${what} is not available`;
  if (process.env.COFFER_REQUIRE_SERVICES === '1') {
    throw new Error(`${message}, and COFFER_REQUIRE_SERVICES=1 requires it`);
  }
  t.skip(`${message}; set it up to run this test`);
}
