import type { Redis } from 'ioredis';

/** Where the fixed-window counters live: process memory, or Redis shared by every instance. */
export interface RateLimitStore {
  /** Counts one request against `key` in the window that contains `nowMs`; returns the count so far. */
  hit(key: string, windowSeconds: number, nowMs: number): Promise<number>;
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

export async function consume(
  store: RateLimitStore,
  key: string,
  limit: number,
  windowSeconds: number,
  nowMs: number,
): Promise<RateLimitState> {
  const count = await store.hit(key, windowSeconds, nowMs);
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

export class MemoryRateLimitStore implements RateLimitStore {
  private readonly windows = new Map<string, { window: number; count: number }>();
  private sweepAt = 0;

  async hit(key: string, windowSeconds: number, nowMs: number): Promise<number> {
    const window = Math.floor(nowMs / (windowSeconds * 1000));
    if (nowMs >= this.sweepAt) this.sweep(window, nowMs, windowSeconds);
    const entry = this.windows.get(key);
    if (entry && entry.window === window) return ++entry.count;
    this.windows.set(key, { window, count: 1 });
    return 1;
  }

  /** Drops counters of past windows so memory stays bounded by the active clients. */
  private sweep(window: number, nowMs: number, windowSeconds: number): void {
    for (const [key, entry] of this.windows) if (entry.window < window) this.windows.delete(key);
    this.sweepAt = nowMs + windowSeconds * 1000;
  }

  async close(): Promise<void> {
    this.windows.clear();
  }
}

// INCR and set the expiry in one atomic round trip.
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`;

export class RedisRateLimitStore implements RateLimitStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'coffer:rl:',
  ) {
    redis.defineCommand('cofferRateHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  }

  async hit(key: string, windowSeconds: number, nowMs: number): Promise<number> {
    const window = Math.floor(nowMs / (windowSeconds * 1000));
    const redisKey = `${this.prefix}${key}:${window}`;
    const run = (
      this.redis as unknown as Record<string, (k: string, ttl: number) => Promise<number>>
    ).cofferRateHit!;
    return Number(await run.call(this.redis, redisKey, windowSeconds * 1000 + 1000));
  }

  async close(): Promise<void> {
    // QUIT fails when the connection is down; then just drop it.
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
