// Drives the REAL built `coffer` binary against a REAL server process: the
// server's own `dist/main.js` on a fresh data directory, HTTPS with its
// generated self-signed certificate, trusted through COFFER_CA_FILE.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ROOT = new URL('../../../../', import.meta.url).pathname;
export const CLI = join(ROOT, 'packages/cli/dist/coffer.js');
const SERVER = join(ROOT, 'packages/server/dist/main.js');

let built = false;
/** Builds every package once per test process (the binary under test is the bundle). */
export function buildOnce(): void {
  if (built) return;
  execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { stdio: 'inherit' });
  built = true;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `coffer-cli-${prefix}-`));
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface TestServer {
  url: string;
  dataDir: string;
  caFile: string;
  process: ChildProcess;
  /** Every e-mail written to `$DATA_DIR/outbox`, as raw text. */
  outbox(): string[];
  stop(): Promise<void>;
}

/** Starts `node packages/server/dist/main.js` on a free port with a fresh data directory. */
export async function startServer(env: Record<string, string> = {}): Promise<TestServer> {
  const dataDir = tempDir('data');
  const port = await freePort();
  const url = `https://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [SERVER], {
    env: {
      PATH: process.env.PATH,
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      HTTP_PORT: 'off',
      PUBLIC_URL: url,
      LOG_LEVEL: 'warn',
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
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000);
    const check = () => {
      if (output.includes('Coffer listening on')) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  return {
    url,
    dataDir,
    caFile: join(dataDir, 'tls', 'cert.pem'),
    process: child,
    outbox() {
      const dir = join(dataDir, 'outbox');
      let names: string[] = [];
      try {
        names = readdirSync(dir).sort();
      } catch {
        return [];
      }
      return names.map((n) => readFileSync(join(dir, n), 'utf8'));
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  input?: string;
  cwd?: string;
}

/** Spawns the CLI; `onSpawn` gets the live process (to send it signals). */
export function runCli(
  args: string[],
  options: CliOptions = {},
  onSpawn?: (child: ChildProcess) => void,
): Promise<CliResult> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.env ?? {})) if (v !== undefined) env[k] = v;
  const child = spawn(process.execPath, [CLI, ...args], {
    env,
    cwd: options.cwd ?? ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin!.end(options.input ?? '');
  onSpawn?.(child);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** A user's shell: own HOME (so its own session file), the server and its CA from the environment. */
export function userEnv(server: TestServer, home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    COFFER_SERVER: server.url,
    COFFER_CA_FILE: server.caFile,
  };
}
