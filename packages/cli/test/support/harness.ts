// Drives the REAL built `coffer` binary against a REAL server process: the
// server's own `dist/main.js` on a fresh data directory, HTTPS with its
// generated self-signed certificate, trusted through COFFER_CA_FILE.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startPublicServer } from '../../../server/test/foundation/server-process.js';

export const ROOT = new URL('../../../../', import.meta.url).pathname;
export const CLI = join(ROOT, 'packages/cli/dist/coffer.js');

let built = false;
const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Builds every package once per test run (the binary under test is the
 * bundle). Test files run as sibling processes of one `node --test` runner: the
 * first builds under a lock, the others wait and reuse that build, so no file
 * runs the binary while another rewrites it.
 */
export function buildOnce(): void {
  if (built) return;
  const lock = join(tmpdir(), 'coffer-cli-build.lock');
  const done = join(tmpdir(), `coffer-cli-build-${process.ppid}.done`);
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      try {
        if (Date.now() - statSync(lock).mtimeMs > 300_000)
          rmSync(lock, { recursive: true, force: true });
      } catch {
        // released meanwhile
      }
      sleepSync(100);
    }
  }
  try {
    forgetFinishedRuns();
    if (!existsSync(done)) {
      execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { stdio: 'inherit' });
      writeFileSync(done, new Date().toISOString());
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
  built = true;
}

/** Removes the build stamps of test runs whose runner process has exited. */
function forgetFinishedRuns(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = /^coffer-cli-build-(\d+)\.done$/.exec(name)?.[1];
    if (!pid || Number(pid) === process.ppid) continue;
    try {
      process.kill(Number(pid), 0);
    } catch {
      rmSync(join(tmpdir(), name), { force: true });
    }
  }
}

const tempDirs: string[] = [];
// Homes, work directories and data directories go when the test file's process ends.
process.once('exit', () => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `coffer-cli-${prefix}-`));
  tempDirs.push(dir);
  return dir;
}

export interface TestServer {
  url: string;
  dataDir: string;
  caFile: string;
  process: ChildProcess;
  /** Every e-mail written to `$DATA_DIR/outbox`, as raw text. */
  outbox(): string[];
  /** Stops the process (SIGTERM); the data directory stays until `cleanup`. */
  stop(): Promise<void>;
  cleanup(): Promise<void>;
}

/** Starts `node packages/server/dist/main.js` on a free port with a fresh data directory. */
export async function startServer(env: Record<string, string> = {}): Promise<TestServer> {
  const dataDir = tempDir('data');
  const { child, url } = await startPublicServer(dataDir, env);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  };
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
    stop,
    async cleanup() {
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts the server again on `server`'s data, port and URL (a user's login is
 * bound to the URL), after `server.stop()`; the caller stops the process.
 */
export async function startAgain(
  server: TestServer,
  env: Record<string, string> = {},
): Promise<ChildProcess> {
  const { child } = await startPublicServer(server.dataDir, {
    ...env,
    PORT: new URL(server.url).port,
    PUBLIC_URL: server.url,
  });
  return child;
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
  return runProgram(process.execPath, [CLI, ...args], options, onSpawn);
}

/**
 * Spawns `program` (a path, or a name looked up on the PATH of `options.env`,
 * e.g. an installed `coffer`) with exactly the environment given.
 */
export function runProgram(
  program: string,
  args: string[],
  options: CliOptions = {},
  onSpawn?: (child: ChildProcess) => void,
): Promise<CliResult> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.env ?? {})) if (v !== undefined) env[k] = v;
  const child = spawn(program, args, {
    env,
    cwd: options.cwd ?? ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  // Decoded across chunks: a character split between two reads stays whole.
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => (stdout += d));
  child.stderr!.on('data', (d: string) => (stderr += d));
  child.stdin!.end(options.input ?? '');
  onSpawn?.(child);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** A CI job: no HOME, no session, only the credential, the server and its CA. */
export function pipelineEnv(server: TestServer, token: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: '',
    COFFER_TOKEN: token,
    COFFER_SERVER: server.url,
    COFFER_CA_FILE: server.caFile,
  };
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

/**
 * The sign-up link of the newest invitation e-mail to `email` (quoted-printable
 * decoded). The outbox worker delivers asynchronously, so this waits for it.
 */
export async function invitationLink(
  server: TestServer,
  email: string,
  timeoutMs = 20_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const decoded = server
      .outbox()
      .map((raw) =>
        raw
          .replace(/=\r?\n/g, '')
          .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
      )
      .filter((text) => new RegExp(`^To: .*${email.replace(/[.+]/g, '\\$&')}`, 'mi').test(text));
    const link = /https:\/\/\S+\/invite\?token=[A-Za-z0-9_%-]+/.exec(decoded.at(-1) ?? '')?.[0];
    if (link) return link;
    if (Date.now() > deadline) throw new Error(`no invitation link for ${email} in the outbox`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits until `text` appears on the process's stdout. */
export function waitForOutput(
  child: ChildProcess,
  text: string,
  timeoutMs = 20_000,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => reject(new Error(`no "${text}" on stdout; saw: ${seen}`)),
      timeoutMs,
    );
    const onData = (d: Buffer) => {
      seen += d.toString();
      if (seen.includes(text)) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
  });
}

/** A fresh database on the PostgreSQL server at `adminUrl`, for one server process. */
export async function createPostgresDatabase(
  adminUrl: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `coffer_cli_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/** `'…'` quoting for the command line `script` hands to the shell. */
const shellQuote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

/**
 * Runs the CLI on a pseudo-terminal (util-linux `script`), as a person at a
 * terminal would: each answer is typed only once its prompt has appeared, so
 * echo (or its absence) is exactly what a user would see. Returns the whole
 * terminal transcript (stdout and stderr together) and the exit code.
 */
export async function runInTerminal(
  args: string[],
  options: { env: Record<string, string>; cwd: string },
  dialogue: [prompt: string | RegExp, answer: string][],
): Promise<{ code: number | null; transcript: string }> {
  const command = [process.execPath, CLI, ...args].map(shellQuote).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    env: { ...options.env, TERM: 'dumb' },
    cwd: options.cwd,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let transcript = '';
  let step = 0;
  let answeredUpTo = 0;
  const answerIfPrompted = () => {
    const pending = dialogue[step];
    if (!pending) return;
    const seen = transcript.slice(answeredUpTo);
    const at = typeof pending[0] === 'string' ? seen.indexOf(pending[0]) : seen.search(pending[0]);
    if (at < 0) return;
    answeredUpTo = transcript.length;
    step++;
    child.stdin!.write(`${pending[1]}\r`);
    answerIfPrompted();
  };
  child.stdout!.on('data', (d: Buffer) => {
    transcript += d.toString();
    answerIfPrompted();
  });
  child.stderr!.on('data', (d: Buffer) => (transcript += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode) => resolve(exitCode));
  }).finally(() => clearTimeout(timer));
  if (step < dialogue.length) {
    throw new Error(`the prompt ${String(dialogue[step]![0])} never appeared:\n${transcript}`);
  }
  return { code, transcript };
}
