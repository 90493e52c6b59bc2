import type { Redis } from 'ioredis';

/** Where the fixed-window counters live: process memory, or Redis shared by every instance. */
export interface RateLimitStore {
  /**
   * Counts one request against `key` in the window that contains `nowMs`;
   * returns its position in the window's count (over `limit`: refused).
   */
  hit(key: string, windowSeconds: number, nowMs: number, limit: number): number | Promise<number>;
  close(): Promise<void>;
}

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix seconds at which the window resets. */
  reset: number;
  exceeded: boolean;
  /** Seconds until the window resets (at least 1), for `Retry-After`. */
  retryAfter: number;
}

export function consume(
  store: RateLimitStore,
  key: string,
  limit: number,
  windowSeconds: number,
  nowMs: number,
): RateLimitState | Promise<RateLimitState> {
  const count = store.hit(key, windowSeconds, nowMs, limit);
  return typeof count === 'number'
    ? stateAt(count, limit, windowSeconds, nowMs)
    : count.then((n) => stateAt(n, limit, windowSeconds, nowMs));
}

function stateAt(
  count: number,
  limit: number,
  windowSeconds: number,
  nowMs: number,
): RateLimitState {
  const windowMs = windowSeconds * 1000;
  const resetMs = (Math.floor(nowMs / windowMs) + 1) * windowMs;
  return {
    limit,
    remaining: Math.max(0, limit - count),
    reset: Math.ceil(resetMs / 1000),
    exceeded: count > limit,
    retryAfter: Math.max(1, Math.ceil((resetMs - nowMs) / 1000)),
  };
}

/**
 * Per-key state of the current fixed window, in process memory. A key's state
 * from an earlier window is replaced on its next request, and once per window
 * every past one is dropped, so memory stays bounded by the clients active in
 * the last window.
 */
class CurrentWindows<V extends { readonly window: number }> {
  private readonly entries = new Map<string, V>();
  private sweptBefore = 0;

  /**
   * `key`'s state in `window`, made by `fresh` when it has none there yet. A
   * request from an earlier window (it waited across the minute) gets the
   * newer window's state and counts there: replacing the newer state with an
   * older one let two windows' requests knock each other's Redis lease out
   * forever, each reserving again and never serving (the PostgreSQL + Redis
   * benchmark's stall).
   */
  get(key: string, window: number, fresh: () => V): V {
    if (window > this.sweptBefore) {
      for (const [k, entry] of this.entries) if (entry.window < window) this.entries.delete(k);
      this.sweptBefore = window;
    }
    let entry = this.entries.get(key);
    if (entry && entry.window > window) return entry;
    if (!entry || entry.window !== window) {
      entry = fresh();
      this.entries.set(key, entry);
    }
    return entry;
  }

  clear(): void {
    this.entries.clear();
  }
}

const windowOf = (windowSeconds: number, nowMs: number) =>
  Math.floor(nowMs / (windowSeconds * 1000));

export class MemoryRateLimitStore implements RateLimitStore {
  private readonly counters = new CurrentWindows<{ window: number; count: number }>();

  hit(key: string, windowSeconds: number, nowMs: number): number {
    const window = windowOf(windowSeconds, nowMs);
    return ++this.counters.get(key, window, () => ({ window, count: 0 })).count;
  }

  async close(): Promise<void> {
    this.counters.clear();
  }
}

/**
 * Reserves up to `ARGV[2]` requests of the window's shared count in one atomic
 * round trip, but never more than an eighth of what is left of the budget
 * (at least one, so a refusal is counted too), and sets the expiry on the
 * window's first reservation. Returns the count after it and how many it reserved.
 */
const LEASE_SCRIPT = `
local limit = tonumber(ARGV[3])
local left = limit - tonumber(redis.call('GET', KEYS[1]) or '0')
local n = math.max(1, math.min(tonumber(ARGV[2]), math.floor(left / 8)))
local count = redis.call('INCRBY', KEYS[1], n)
if count == n then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {count, n}`;

/** Most requests one instance reserves of a key's shared count at once. */
const MAX_LEASE = 64;

/** Requests of one key's window reserved by this instance: positions `next`…`end` of the shared count. */
interface Lease {
  window: number;
  next: number;
  end: number;
  /** How many to ask for next time: doubles with every reservation in the window. */
  size: number;
  /** The reservation in flight; concurrent requests of the key wait for it instead of asking again. */
  pending: Promise<void> | null;
}

/**
 * Fixed-window counters shared by every instance through Redis, without a
 * round trip on every request: an instance reserves a run of positions in a
 * key's count (a lease) and hands them out locally. A key's first request in
 * a window reserves one; each further reservation doubles, up to `MAX_LEASE`
 * and never more than an eighth of what is left of the budget. So a client
 * sending a few requests per window is counted exactly as with one INCR each,
 * a busy one costs a round trip per 64 requests, and the shared count still
 * never lets a window serve more than `limit`. What a lease costs: positions
 * reserved by one instance and not used by the end of the window count all
 * the same, so a client spreading requests over several instances can be
 * refused a few requests early (each instance holds at most an eighth of what
 * was left when it reserved); and `X-RateLimit-Remaining` reflects the
 * instance's own reservations, not the other instances' latest.
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly leases = new CurrentWindows<Lease>();

  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'coffer:rl:',
  ) {
    redis.defineCommand('cofferRateLease', { numberOfKeys: 1, lua: LEASE_SCRIPT });
  }

  /** Without waiting while this instance's lease has positions left (most requests). */
  hit(key: string, windowSeconds: number, nowMs: number, limit: number): number | Promise<number> {
    const window = windowOf(windowSeconds, nowMs);
    const taken = this.take(key, window, limit);
    return typeof taken === 'number'
      ? taken
      : this.reserveThenTake(key, windowSeconds, limit, window, taken);
  }

  /** The key's next position in `window`, or its lease when that has none left to give. */
  private take(key: string, window: number, limit: number): number | Lease {
    const lease = this.leases.get(key, window, () => ({
      window,
      next: 1,
      end: 0,
      size: 1,
      pending: null,
    }));
    if (lease.next <= lease.end) return lease.next++;
    // Counts only grow within a window: once over the limit, refused until it ends.
    if (lease.end > limit) return lease.end;
    return lease;
  }

  private async reserveThenTake(
    key: string,
    windowSeconds: number,
    limit: number,
    window: number,
    lease: Lease,
  ): Promise<number> {
    for (;;) {
      lease.pending ??= this.reserve(key, windowSeconds, limit, lease).finally(() => {
        lease.pending = null;
      });
      await lease.pending;
      const taken = this.take(key, window, limit);
      if (typeof taken === 'number') return taken;
      lease = taken;
    }
  }

  private async reserve(
    key: string,
    windowSeconds: number,
    limit: number,
    lease: Lease,
  ): Promise<void> {
    const run = (
      this.redis as unknown as Record<
        string,
        (k: string, ttl: number, size: number, limit: number) => Promise<[number, number]>
      >
    ).cofferRateLease!;
    const redisKey = `${this.prefix}${key}:${lease.window}`;
    const [count, reserved] = await run.call(
      this.redis,
      redisKey,
      windowSeconds * 1000 + 1000,
      lease.size,
      limit,
    );
    lease.next = Number(count) - Number(reserved) + 1;
    lease.end = Number(count);
    lease.size = Math.min(MAX_LEASE, lease.size * 2);
  }

  async close(): Promise<void> {
    this.leases.clear();
    // QUIT fails when the connection is down; then just drop it.
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
