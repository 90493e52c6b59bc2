/** Where a buffered log hands its lines: `process.stdout` in the server. */
export interface LogTarget {
  write(chunk: string): unknown;
}

export interface LogBufferOptions {
  /** Pending bytes (UTF-16 units) that trigger a write at once. */
  maxBytes?: number;
  /** How long an info line may wait for company before it is written. */
  maxDelayMs?: number;
}

/** pino writes each line as `{"level":NN,…`; NN ≥ 40 is a warning or worse. */
const LEVEL_PREFIX = '{"level":';
const WARN = 40;

function isUrgent(line: string): boolean {
  if (!line.startsWith(LEVEL_PREFIX)) return true; // not a shape we know: never hold it
  let level = 0;
  for (let i = LEVEL_PREFIX.length; i < line.length; i++) {
    const digit = line.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) break;
    level = level * 10 + digit;
  }
  return level >= WARN;
}

/**
 * A pino destination that joins lines and writes them together: at
 * `maxBytes` (64 KB, a pipe's whole buffer on Linux), after `maxDelayMs`, at
 * once for a warning or worse (with everything before it, so the order
 * holds), on `flush()` and when the process exits. Each write to stdout is a
 * system call that wakes whoever reads the pipe (journald, Docker, a shell);
 * one per request (pino's default destination, through libuv's thread pool)
 * was about a fifth of a cached read's CPU; one per 4 KB still cost a read
 * 4–5 µs on this project's test machine; one per 64 KB or 100 ms is noise.
 *
 * What it can lose: info and debug lines of the last `maxDelayMs` when the
 * process is killed with SIGKILL (or the machine stops). Warnings and errors
 * are never held, and a normal exit (`process.exit`, the end of the event
 * loop, an uncaught exception) writes what is pending from the `exit` event.
 */
export class LogBuffer {
  private pending: string[] = [];
  private size = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Set when the target can take no more (its reader went away): lines are dropped. */
  private closed = false;
  private readonly maxBytes: number;
  private readonly maxDelayMs: number;

  constructor(
    private readonly target: LogTarget,
    options: LogBufferOptions = {},
  ) {
    this.maxBytes = options.maxBytes ?? 65_536;
    this.maxDelayMs = options.maxDelayMs ?? 100;
  }

  write(line: string): boolean {
    if (this.closed) return true;
    this.pending.push(line);
    this.size += line.length;
    if (this.size >= this.maxBytes || isUrgent(line)) this.flushSync();
    else this.timer ??= setTimeout(() => this.flushSync(), this.maxDelayMs).unref();
    return true;
  }

  /** Writes what is pending now (pino's `logger.flush(cb)` comes here). */
  flush(done?: (err?: Error) => void): void {
    this.flushSync();
    done?.();
  }

  flushSync(): void {
    const chunk = this.take();
    if (chunk !== null && !this.closed) this.target.write(chunk);
  }

  /** Drops what is pending and every later line. */
  close(): void {
    this.take();
    this.closed = true;
  }

  /** Empties the buffer (and stops its timer); what it held, joined, or null. */
  private take(): string | null {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.length === 0) return null;
    const chunk = this.pending.length === 1 ? this.pending[0]! : this.pending.join('');
    this.pending = [];
    this.size = 0;
    return chunk;
  }
}

let stdoutLog: LogBuffer | null = null;

/**
 * The one buffer in front of the process's stdout, shared by every logger that
 * writes there (so their lines keep their order) and written out on exit.
 * Text the server prints itself (`Coffer listening on …`) goes through
 * `printLine`, after what the logs hold.
 */
export function stdoutLogBuffer(): LogBuffer {
  if (!stdoutLog) {
    const buffer = new LogBuffer(process.stdout);
    process.on('exit', () => buffer.flushSync());
    // Whoever read the pipe went away (`coffer-server start | head`, a log
    // shipper that died): the server keeps serving and stops logging, as pino's
    // own destination does. Any other error is the process's as before.
    const brokenPipe = (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') return buffer.close();
      process.stdout.off('error', brokenPipe);
      process.stdout.emit('error', err);
    };
    process.stdout.on('error', brokenPipe);
    stdoutLog = buffer;
  }
  return stdoutLog;
}

/** Prints a line to stdout after every log line written before it. */
export function printLine(text: string): void {
  stdoutLog?.flushSync();
  if (!process.stdout.destroyed) process.stdout.write(`${text}\n`);
}
