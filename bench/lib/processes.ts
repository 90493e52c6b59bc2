import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A server process under test; its stdout and stderr go to a log file. */
export interface ServerProcess {
  readonly pid: number;
  readonly url: string;
  readonly logFile: string;
  /** Resident set size now, in MiB (VmRSS of /proc/<pid>/status). */
  rssMiB(): number;
  /** Peak resident set size since start, in MiB (VmHWM). */
  peakRssMiB(): number;
  stop(): Promise<void>;
}

/** Every process started and not yet stopped, so an interrupted run leaves none behind. */
const running = new Set<ChildProcess>();

/** Sends SIGTERM to every process still running (the bench was interrupted). */
export function terminateAll(): void {
  for (const child of running) child.kill('SIGTERM');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

function procStatusMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]) / 1024;
}

/**
 * Spawns `node <args>` and resolves once a line of its output matches `ready`
 * (the first capture group is the URL it listens on).
 */
export async function startProcess(opts: {
  name: string;
  args: string[];
  env: Record<string, string>;
  ready: RegExp;
  logFile: string;
  timeoutMs?: number;
}): Promise<ServerProcess> {
  const child: ChildProcess = spawn(process.execPath, opts.args, {
    env: { PATH: process.env.PATH ?? '', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const log = createWriteStream(opts.logFile);
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });

  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => fail(new Error(`${opts.name} did not start within ${opts.timeoutMs ?? 30_000} ms`)),
      opts.timeoutMs ?? 30_000,
    );
    const onData = (chunk: Buffer) => {
      seen = (seen + chunk.toString('utf8')).slice(-8192);
      const match = opts.ready.exec(seen);
      if (match) {
        cleanup();
        resolve(match[1]!);
      }
    };
    const onExit = (code: number | null) =>
      fail(new Error(`${opts.name} exited with code ${code}; see ${opts.logFile}:\n${seen}`));
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
    };
    const fail = (err: Error) => {
      cleanup();
      child.kill('SIGKILL');
      reject(err);
    };
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });

  const pid = child.pid!;
  return {
    pid,
    url,
    logFile: opts.logFile,
    rssMiB: () => procStatusMiB(pid, 'VmRSS'),
    peakRssMiB: () => procStatusMiB(pid, 'VmHWM'),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
        child.once('exit', () => {
          clearTimeout(force);
          log.end();
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
