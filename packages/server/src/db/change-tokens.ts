import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AppError } from '../errors.js';

/**
 * When a project's cached reads may be served without asking the database.
 *
 * Every write to a project (every unsafe request under
 * `/v1/projects/:project_id`, see `markProjectWrites`) calls `begin` before its
 * handler runs and the function `begin` returned before its answer is sent.
 * Between the two, `current` is null for that project on every instance (reads
 * ask the database); after it, `current` returns a token that no earlier read
 * ever saw. A cache entry is stored with the token read BEFORE the database
 * was read, and served only while `current` returns that same token. So once
 * a write is acknowledged, no read that starts later, on any instance, can be
 * answered from an entry loaded before the write committed; and a client that
 * saw the new state (from the database, during the write) never sees an older
 * one afterwards, since every entry older than the write carries an older token.
 */
export interface ChangeTokens {
  /** The token under which the project's cached reads are valid now; null: ask the database and cache nothing. */
  current(projectId: string): string | null | Promise<string | null>;
  /**
   * Marks a write to the project as begun; resolves to the function that ends
   * it (call once the write is over, committed or not). Throws a 503
   * `service_unavailable` when the mark cannot be made (Redis unreachable):
   * then nothing has been written.
   */
  begin(projectId: string): Promise<() => Promise<void>>;
  /** True while the tokens cannot be read (Redis unreachable): every read asks the database. */
  readonly degraded: boolean;
  /** Reads that asked the database because the tokens could not be read. */
  readonly fallbacks: number;
}

/** Projects whose writes `LocalChangeTokens` counts before it starts over (memory stays bounded). */
const MAX_LOCAL_PROJECTS = 100_000;

/**
 * SQLite: one instance (or a few processes on one file), so the tokens live in
 * this process. A project's token is its count of writes here plus SQLite's
 * `PRAGMA data_version` on the writing connection, which changes whenever
 * ANOTHER connection commits (another process on the same file, an operator's
 * `coffer-server` command) and never for this connection's own commits.
 *
 * That check (`foreignCommits`: a `pread` of the WAL index, a system call) is
 * shared by the reads that arrive in the same turn of the event loop, as
 * `RedisChangeTokens` shares its script: it runs once they have all arrived
 * (`setImmediate`), so each read's token is still read after the read began.
 */
export class LocalChangeTokens implements ChangeTokens {
  readonly degraded = false;
  readonly fallbacks = 0;
  private readonly generations = new Map<string, number>();
  private readonly writing = new Map<string, number>();
  /** Part of every token: bumped when `generations` is cleared to keep it bounded. */
  private epoch = 0;
  /** The check of other connections' commits this turn's reads wait for. */
  private check: Promise<number> | null = null;

  constructor(private readonly foreignCommits: () => number) {}

  current(projectId: string): string | null | Promise<string | null> {
    if (this.writing.has(projectId)) return null;
    return this.checkForeignCommits().then((foreign) =>
      this.writing.has(projectId)
        ? null
        : `${foreign}:${this.epoch}:${this.generations.get(projectId) ?? 0}`,
    );
  }

  private checkForeignCommits(): Promise<number> {
    this.check ??= new Promise<number>((resolve, reject) =>
      setImmediate(() => {
        this.check = null;
        try {
          resolve(this.foreignCommits());
        } catch (err) {
          reject(err);
        }
      }),
    );
    return this.check;
  }

  async begin(projectId: string): Promise<() => Promise<void>> {
    this.writing.set(projectId, (this.writing.get(projectId) ?? 0) + 1);
    let ended = false;
    return async () => {
      if (ended) return;
      ended = true;
      if (this.generations.size >= MAX_LOCAL_PROJECTS) {
        // Every project's token changes at once: their caches are read anew.
        this.generations.clear();
        this.epoch++;
      }
      this.generations.set(projectId, (this.generations.get(projectId) ?? 0) + 1);
      const left = this.writing.get(projectId)! - 1;
      if (left === 0) this.writing.delete(projectId);
      else this.writing.set(projectId, left);
    };
  }
}

/** How long a write's mark holds if its instance never ends it (crash, Redis lost mid-write). */
export const WRITE_MARK_MS = 30_000;
/** Tokens of projects nobody writes expire (a read then makes a new one); keeps Redis tidy. */
const TOKEN_TTL_SECONDS = 86_400;

// Times are Redis's own (TIME), so instances' clocks never matter.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * KEYS: the project's write marks (a sorted set, scored by expiry), its token.
 * ARGV: a fresh token to use if one is needed, the token TTL.
 * Returns {token or '' while a write is marked, Redis time in ms}. A mark that
 * expired unended (its instance died) changes the token, as its end would have.
 */
const CHECK_SCRIPT = `${NOW}
if redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) > 0 then
  redis.call('SET', KEYS[2], now .. '-' .. ARGV[1], 'EX', ARGV[2])
end
if redis.call('ZCARD', KEYS[1]) > 0 then return {'', now} end
local token = redis.call('GET', KEYS[2])
if not token then
  token = now .. '-' .. ARGV[1]
  redis.call('SET', KEYS[2], token, 'EX', ARGV[2])
end
return {token, now}`;

/** KEYS: marks. ARGV: the write's id, the mark's lifetime in ms. */
const BEGIN_SCRIPT = `${NOW}
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
return now`;

/** KEYS: marks, token. ARGV: the write's id, the new token, the token TTL. */
const END_SCRIPT = `${NOW}
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], now .. '-' .. ARGV[2], 'EX', ARGV[3])
return now`;

type Script = (...args: (string | number)[]) => Promise<unknown>;

interface Waiting {
  promise: Promise<string | null>;
  resolve(token: string | null): void;
}

/**
 * PostgreSQL + Redis: the tokens live in Redis, shared by every instance. A
 * read costs one small script in Redis instead of a PostgreSQL query, and
 * reads of one project that arrive in the same turn of the event loop share
 * it (each read waits for a check sent after it arrived, never an earlier
 * one). A write costs two (its mark and its end), awaited before it answers.
 *
 * Redis unreachable: reads ask the database (correct, slower), writes to a
 * project are refused with 503 before anything is written (a write that could
 * not be announced would leave the other instances serving the old value),
 * and it is logged once per outage. Each loss of the connection starts a new
 * `connection` epoch, part of every token handed out: entries cached before it
 * never match again, even if Redis comes back with older keys (a restart from
 * a snapshot).
 */
export class RedisChangeTokens implements ChangeTokens {
  degraded = false;
  fallbacks = 0;
  /**
   * Set by the metrics: a read on this instance met a project's new token this
   * long (ms, Redis time) after the write (or expiry) that made it.
   */
  onTokenSeen: ((lagMs: number) => void) | null = null;
  /** Redis time at which each project's current token was made, to report how late an instance saw it. */
  private readonly seen = new Map<string, string>();
  private waiting = new Map<string, Waiting>();
  private flushScheduled = false;
  private readonly instance = randomBytes(6).toString('base64url');
  private sequence = 0;
  private connection = 0;
  private readonly check: Script;
  private readonly beginWrite: Script;
  private readonly endWrite: Script;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly events: { onDegraded(err: unknown): void; onRecovered(): void },
  ) {
    redis.defineCommand('cofferChangeCheck', { numberOfKeys: 2, lua: CHECK_SCRIPT });
    redis.defineCommand('cofferChangeBegin', { numberOfKeys: 1, lua: BEGIN_SCRIPT });
    redis.defineCommand('cofferChangeEnd', { numberOfKeys: 2, lua: END_SCRIPT });
    const commands = redis as unknown as Record<string, Script>;
    this.check = commands.cofferChangeCheck!.bind(redis);
    this.beginWrite = commands.cofferChangeBegin!.bind(redis);
    this.endWrite = commands.cofferChangeEnd!.bind(redis);
    redis.on('close', () => {
      this.connection++;
      this.seen.clear();
    });
  }

  current(projectId: string): Promise<string | null> {
    let waiting = this.waiting.get(projectId);
    if (!waiting) {
      let resolve!: (token: string | null) => void;
      const promise = new Promise<string | null>((r) => (resolve = r));
      waiting = { promise, resolve };
      this.waiting.set(projectId, waiting);
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    }
    return waiting.promise;
  }

  async begin(projectId: string): Promise<() => Promise<void>> {
    const id = this.nextId();
    const [marks, token] = this.keys(projectId);
    try {
      await this.beginWrite(marks, id, WRITE_MARK_MS);
      this.recovered();
    } catch (err) {
      this.failed(err);
      throw new AppError(
        'service_unavailable',
        'Nothing was written: this server cannot reach Redis to stop the other instances from serving the previous value; retry shortly',
      );
    }
    let ended = false;
    return async () => {
      if (ended) return;
      ended = true;
      try {
        await this.endWrite(marks, token, id, this.nextId(), TOKEN_TTL_SECONDS);
      } catch (err) {
        // The mark stays until it expires (WRITE_MARK_MS); until then every
        // instance reads this project from the database, and its expiry
        // changes the token. The write itself is committed: answer it.
        this.failed(err);
      }
    };
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.waiting;
    this.waiting = new Map();
    const connection = this.connection;
    for (const [projectId, waiting] of batch) {
      const [marks, token] = this.keys(projectId);
      this.check(marks, token, this.nextId(), TOKEN_TTL_SECONDS).then(
        (reply) => {
          this.recovered();
          const [value, now] = reply as [string, number];
          if (value === '' || connection !== this.connection) return waiting.resolve(null);
          this.noteSeen(projectId, value, Number(now));
          waiting.resolve(`${connection}/${value}`);
        },
        (err: unknown) => {
          this.failed(err);
          this.fallbacks++;
          waiting.resolve(null);
        },
      );
    }
  }

  private noteSeen(projectId: string, token: string, nowMs: number): void {
    const previous = this.seen.get(projectId);
    if (previous === token || !this.onTokenSeen) return;
    if (this.seen.size >= 10_000) this.seen.clear();
    this.seen.set(projectId, token);
    // A change seen here counts, not the first token this instance meets.
    if (previous === undefined) return;
    const madeAt = Number(token.slice(0, token.indexOf('-')));
    if (Number.isFinite(madeAt)) this.onTokenSeen(Math.max(0, nowMs - madeAt));
  }

  private keys(projectId: string): [string, string] {
    return [`${this.prefix}writes:${projectId}`, `${this.prefix}token:${projectId}`];
  }

  private nextId(): string {
    return `${this.instance}.${(this.sequence++).toString(36)}`;
  }

  private failed(err: unknown): void {
    // Entries cached before the outage must never be served after it.
    this.connection++;
    this.seen.clear();
    if (this.degraded) return;
    this.degraded = true;
    this.events.onDegraded(err);
  }

  private recovered(): void {
    if (!this.degraded) return;
    this.degraded = false;
    this.events.onRecovered();
  }
}

/**
 * Values of a project's reads, each stored with the `ChangeTokens` token read
 * before it was loaded and served only under that same token. Bounded by
 * entries and by weight (characters of the values). What goes first when it
 * is full: the oldest entry not read since it was last passed over (a second
 * chance, as the CLOCK algorithm gives, instead of moving an entry to the end
 * of the map on every hit: that re-hashed the key twice on each cached read).
 * `hits` and `misses` are read by the metrics.
 */
export class TokenCache<V> {
  hits = 0;
  misses = 0;
  private readonly entries = new Map<
    string,
    { token: string; value: V; weight: number; read: boolean }
  >();
  private weight = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxWeight: number,
  ) {}

  get(key: string, token: string): V | undefined {
    const value = this.peek(key, token);
    if (value === undefined) this.misses++;
    else this.hits++;
    return value;
  }

  /**
   * `get` without counting a hit or a miss, for a caller that may still ask
   * `get` for the same request (it counts a hit itself when it uses the value).
   */
  peek(key: string, token: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined || entry.token !== token) return undefined;
    entry.read = true;
    return entry.value;
  }

  set(key: string, token: string, value: V, weight = 1): void {
    if (weight > this.maxWeight) return;
    this.remove(key);
    this.entries.set(key, { token, value, weight, read: false });
    this.weight += weight;
    // Oldest first; one read since it was last passed over moves an entry to
    // the end instead (met again at the end only if still over the bounds).
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.weight <= this.maxWeight) break;
      if (oldest === key) continue;
      if (entry.read) {
        entry.read = false;
        this.entries.delete(oldest);
        this.entries.set(oldest, entry);
      } else {
        this.remove(oldest);
      }
    }
  }

  /** How many values it holds. */
  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
    this.weight = 0;
  }

  private remove(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.weight -= entry.weight;
  }
}
