import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { constants } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { watchSecrets, type FeedEvent, type SecretsSnapshot } from '@coffer/sdk';
import { str, type Options, type Values } from './cli/command.js';
import { parseDuration } from './cli/durations.js';
import { CliError, UsageError } from './cli/errors.js';
import { note } from './cli/output.js';
import { Context } from './context.js';
import { FORWARDED, spawnFailure } from './run/child.js';
import { environmentAccess, readOptions, secretScope } from './secrets-source.js';

/**
 * `--watch`: keeping a process (`coffer run --watch`) or a file (`coffer
 * secrets export --watch`) current with the environment's secrets, on the SDK's
 * `watchSecrets` (the server's change feed: it carries no values; each change
 * is fetched and decrypted here). A batch of changes within `debounceMs` is one
 * restart or rewrite. While the server is unreachable the child keeps running
 * (the file stays) on the last good values and the feed reconnects, resuming
 * where it left off.
 */

export interface WatchOptions {
  /** Run this shell command after each change is applied, with the secrets in its environment. */
  onChange?: string | undefined;
  /** Changes this close together are applied once. */
  debounceMs: number;
}

export interface RunWatchOptions extends WatchOptions {
  /** Signal the child instead of restarting it (e.g. SIGHUP). */
  signal?: NodeJS.Signals | undefined;
  /** After SIGTERM, how long the child may take to exit before SIGKILL. */
  graceMs: number;
}

/** What a change was, for the note on stderr: `LOG_LEVEL changed in production (by Ada)`. */
function describe(event: FeedEvent | null, env: string): string {
  if (!event) return `the secrets of ${env} changed`;
  if (event.type === 'vault.rekeyed') return `the vault was re-keyed (epoch ${event.epoch})`;
  if (event.type !== 'secrets.changed') return `the secrets of ${env} changed`;
  const names = event.names.length > 3 ? `${event.names.length} secrets` : event.names.join(', ');
  const who = event.actor?.name ? ` (by ${event.actor.name})` : '';
  return `${names} changed in ${event.environment.slug}${who}`;
}

/**
 * Follows the environment's secrets: `apply` is called with the first snapshot
 * at once and with later ones after `debounceMs` of quiet, one at a time.
 * Resolves when `stop` aborts or the feed ends for good (credential revoked).
 */
async function follow(
  ctx: Context,
  options: WatchOptions,
  stop: AbortSignal,
  apply: (snapshot: SecretsSnapshot, first: boolean) => Promise<void>,
): Promise<void> {
  const access = await environmentAccess(ctx);
  let offline = false;
  let pending: SecretsSnapshot | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let applying: Promise<void> = Promise.resolve();
  let first = true;
  const flush = () => {
    timer = null;
    const snapshot = pending;
    pending = null;
    if (snapshot) applying = applying.then(() => apply(snapshot, false));
  };
  try {
    for await (const snapshot of watchSecrets(secretScope(access), access.env, {
      read: readOptions(ctx, access, ctx.values),
      signal: stop,
      onConnected: () => {
        if (offline) note('coffer: reconnected to the server; watching for changes again');
        offline = false;
      },
      onUnresolvable: (err) => {
        note(`coffer: ${err.message}; keeping the last values until they resolve again`);
      },
      onDisconnected: (err, delayMs) => {
        if (!offline && !stop.aborted) {
          note(
            `coffer: lost the server (${(err as Error)?.message ?? String(err)}); keeping the last values, reconnecting (next try in ${Math.ceil(delayMs / 1000)} s)`,
          );
        }
        offline = true;
      },
    })) {
      if (first) {
        first = false;
        await apply(snapshot, true);
        continue;
      }
      note(`coffer: ${describe(snapshot.event, access.env)}`);
      pending = snapshot;
      if (timer) clearTimeout(timer);
      timer = setTimeout(flush, options.debounceMs);
    }
    if (!stop.aborted) {
      note(
        'coffer: the server ended the watch (the credential was revoked or expired); no more updates',
      );
    }
  } finally {
    if (timer) {
      clearTimeout(timer);
      flush();
    }
    await applying;
    access.vault.then((v) => v.forget()).catch(() => undefined);
  }
}

/** Runs the `--on-change` hook through the shell; its failure is reported, never fatal. */
function runHook(command: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve) => {
    const hook = spawn('/bin/sh', ['-c', command], { stdio: 'inherit', env });
    hook.once('error', (err) => {
      note(`coffer: --on-change could not start: ${err.message}`);
      resolve();
    });
    hook.once('exit', (code, signal) => {
      if (code !== 0) note(`coffer: --on-change exited with ${signal ?? code}`);
      resolve();
    });
  });
}

const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null) =>
  signal ? 128 + (constants.signals[signal] ?? 0) : (code ?? 1);

/**
 * `coffer run --watch -- CMD`: CMD runs with the environment's secrets; after a
 * change it is restarted with the new ones (SIGTERM, `graceMs`, then SIGKILL)
 * or, with `signal`, sent that signal. Exits with CMD's code when CMD exits on
 * its own. Signals sent to `coffer` are passed on to CMD, as without --watch.
 */
export function runWatching(
  ctx: Context,
  command: string,
  args: string[],
  options: RunWatchOptions,
): Promise<number> {
  const stop = new AbortController();
  let child: ChildProcess | null = null;
  let restarting = false;
  let finish: (code: number) => void = () => undefined;
  let fail: (err: unknown) => void = () => undefined;
  const done = new Promise<number>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  let env: NodeJS.ProcessEnv = process.env;

  const forward = FORWARDED.map((signal) => {
    const handler = () => {
      if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  const cleanup = () => {
    for (const [signal, handler] of forward) process.off(signal, handler);
    stop.abort();
  };

  const start = () => {
    const started = spawn(command, args, { stdio: 'inherit', env });
    child = started;
    started.once('error', (err: NodeJS.ErrnoException) => {
      cleanup();
      fail(spawnFailure(err, command));
    });
    started.once('exit', (code, signal) => {
      if (restarting && child === started) return;
      cleanup();
      finish(exitCodeOf(code, signal));
    });
  };

  /** Ends the running child: SIGTERM, then SIGKILL after the grace period. */
  const terminate = (running: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (running.exitCode !== null || running.signalCode !== null) return resolve();
      const kill = setTimeout(() => {
        note(`coffer: ${command} did not exit within ${options.graceMs / 1000} s; sending SIGKILL`);
        running.kill('SIGKILL');
      }, options.graceMs);
      running.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      running.kill('SIGTERM');
    });

  void follow(ctx, options, stop.signal, async (snapshot, first) => {
    env = { ...process.env, ...snapshot.secrets };
    if (first) {
      start();
      return;
    }
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    if (options.signal) {
      note(`coffer: sending ${options.signal} to ${command}`);
      running.kill(options.signal);
    } else {
      note(`coffer: restarting ${command} with the new values`);
      restarting = true;
      await terminate(running);
      restarting = false;
      if (stop.signal.aborted) return;
      start();
    }
    if (options.onChange) await runHook(options.onChange, env);
  }).catch((err: unknown) => {
    // Before the child started, the failure is the command's (e.g. 401); after,
    // the child keeps running without updates.
    if (child === null) {
      cleanup();
      fail(err);
    } else if (!stop.signal.aborted) {
      note(`coffer: stopped watching: ${(err as Error).message}; ${command} keeps its values`);
    }
  });
  return done;
}

/**
 * Writes `text` to `file` atomically: a temporary file in the same directory
 * (mode 0600), flushed to disk, then renamed over `file`. A reader sees the old
 * file or the new one, never a part.
 */
export function writeFileAtomically(file: string, text: string): void {
  const temp = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw new CliError(
      'file_unwritable',
      `cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

/**
 * `coffer secrets export --watch --output FILE`: writes the file now and again
 * after every change (atomically), running `--on-change` after each rewrite.
 * Runs until interrupted (SIGINT/SIGTERM end it with 0) or the credential ends.
 */
export async function exportWatching(
  ctx: Context,
  output: string,
  render: (secrets: Record<string, string>) => string,
  options: WatchOptions,
): Promise<number> {
  const stop = new AbortController();
  const end = () => stop.abort();
  process.once('SIGINT', end);
  process.once('SIGTERM', end);
  try {
    await follow(ctx, options, stop.signal, async (snapshot, first) => {
      writeFileAtomically(output, render(snapshot.secrets));
      note(`coffer: ${first ? 'wrote' : 'rewrote'} ${output}`);
      if (!first && options.onChange) {
        await runHook(options.onChange, process.env);
      }
    });
    return 0;
  } finally {
    process.off('SIGINT', end);
    process.off('SIGTERM', end);
  }
}

/** The options `coffer run` takes for `--watch` (spelled once, here). */
export const RUN_WATCH_OPTIONS: Options = {
  watch: {
    type: 'boolean',
    short: 'w',
    description: 'restart CMD with the new values whenever the secrets change',
  },
  signal: {
    type: 'string',
    value: 'SIG',
    description: '--watch: send SIG (e.g. HUP) to CMD instead of restarting it',
  },
  grace: {
    type: 'string',
    value: 'DURATION',
    description:
      '--watch: how long CMD may take to exit after SIGTERM before SIGKILL (default 10s)',
  },
  'on-change': {
    type: 'string',
    value: 'COMMAND',
    description: '--watch: run this shell command after each change is applied',
  },
};

/** The `--watch` options of `export` (`--output FILE` is needed with `--watch`). */
export const EXPORT_WATCH_OPTIONS: Options = {
  watch: {
    type: 'boolean',
    short: 'w',
    description: 'keep --output FILE current: rewrite it (atomically) whenever the secrets change',
  },
  output: {
    type: 'string',
    short: 'o',
    value: 'FILE',
    description: 'write to FILE (mode 0600, atomically) instead of standard output',
  },
  'on-change': {
    type: 'string',
    value: 'COMMAND',
    description: '--watch: run this shell command after each rewrite',
  },
};

/** A batch of changes within this long is applied once. */
const DEBOUNCE_MS = 1_000;

/** `coffer run`'s hook: `--watch` and its options checked, then `runWatching`. */
export function runWatchCommand(
  values: Values,
  command: string,
  args: string[],
): Promise<number> | null {
  const watching = values.watch === true;
  const signal = str(values, 'signal');
  const grace = str(values, 'grace');
  const onChange = str(values, 'on-change');
  if (!watching) {
    if (signal !== undefined || grace !== undefined || onChange !== undefined)
      throw new UsageError('--signal, --grace and --on-change apply to --watch only', 'run');
    return null;
  }
  if (str(values, 'fallback') !== undefined)
    throw new UsageError('--watch keeps the last values itself; leave out --fallback', 'run');
  let name: NodeJS.Signals | undefined;
  if (signal !== undefined) {
    const upper = signal.toUpperCase();
    const candidate = (upper.startsWith('SIG') ? upper : `SIG${upper}`) as NodeJS.Signals;
    if (!(candidate in constants.signals) || candidate === 'SIGKILL' || candidate === 'SIGSTOP')
      throw new UsageError(
        `--signal ${signal} is not a signal CMD can handle (e.g. HUP, USR1)`,
        'run',
      );
    name = candidate;
  }
  return runWatching(new Context(values), command, args, {
    signal: name,
    graceMs: grace === undefined ? 10_000 : parseDuration(grace, '--grace', 'run') * 1000,
    onChange,
    debounceMs: DEBOUNCE_MS,
  });
}

/** `coffer secrets export`'s hook: with `--output` (and `--watch`), write the file; else null. */
export function exportToFileCommand(
  values: Values,
  render: (secrets: Record<string, string>) => string,
  once: () => Promise<string>,
): Promise<number> | null {
  const output = str(values, 'output');
  const onChange = str(values, 'on-change');
  if (values.watch === true && output === undefined)
    throw new UsageError('--watch needs --output FILE to keep current', 'secrets export');
  if (onChange !== undefined && values.watch !== true)
    throw new UsageError('--on-change applies to --watch only', 'secrets export');
  if (output === undefined) return null;
  if (values.watch !== true) {
    return once().then((text) => {
      writeFileAtomically(output, text);
      return 0;
    });
  }
  return exportWatching(new Context(values), output, render, { onChange, debounceMs: DEBOUNCE_MS });
}
