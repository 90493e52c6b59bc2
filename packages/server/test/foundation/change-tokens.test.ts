import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { LocalChangeTokens, RedisChangeTokens, TokenCache } from '../../src/db/change-tokens.js';
import { AppError } from '../../src/errors.js';
import { freePort, reachable, serviceMissing } from './server-process.js';

// The change tokens' contract, on each implementation: null while a write to
// the project is marked, a token never seen before once it ends, the same
// token while nothing is written.

const REDIS_URL = process.env.COFFER_TEST_REDIS_URL || 'redis://127.0.0.1:6379';
const PROJECT = 'proj_0123456789abcdefghij';
const OTHER = 'proj_abcdefghij0123456789';

describe('change tokens in the process (SQLite)', () => {
  it('hold while nothing is written, are null during a write, and change after it', async () => {
    let foreign = 7;
    const tokens = new LocalChangeTokens(() => foreign);
    const first = await tokens.current(PROJECT);
    assert.equal(await tokens.current(PROJECT), first);
    const end = await tokens.begin(PROJECT);
    assert.equal(await tokens.current(PROJECT), null, 'reads ask the database during a write');
    const otherDuring = await tokens.current(OTHER);
    assert.equal(await tokens.current(OTHER), otherDuring, 'other projects keep theirs');
    await end();
    const second = await tokens.current(PROJECT);
    assert.notEqual(second, null);
    assert.notEqual(second, first);
    await end(); // ending twice changes nothing
    assert.equal(await tokens.current(PROJECT), second);
    assert.equal(await tokens.current(OTHER), otherDuring);
    foreign++; // another process committed
    assert.notEqual(await tokens.current(PROJECT), second);
  });

  it('two overlapping writes: null until both have ended', async () => {
    const tokens = new LocalChangeTokens(() => 0);
    const endA = await tokens.begin(PROJECT);
    const endB = await tokens.begin(PROJECT);
    await endA();
    assert.equal(await tokens.current(PROJECT), null);
    await endB();
    assert.notEqual(await tokens.current(PROJECT), null);
  });

  it('checks for other processes’ commits once per turn, after every read of the turn asked', async () => {
    let checks = 0;
    let foreign = 1;
    const tokens = new LocalChangeTokens(() => (checks++, foreign));
    const asked = [tokens.current(PROJECT), tokens.current(OTHER), tokens.current(PROJECT)];
    // A commit elsewhere between the reads' arrival and the check: every one of them sees it.
    foreign = 2;
    const answers = await Promise.all(asked);
    assert.equal(checks, 1);
    for (const token of answers) assert.match(String(token), /^2:/);
    assert.equal(answers[0], answers[2]);
    await tokens.current(PROJECT);
    assert.equal(checks, 2, 'a later turn checks again');
  });

  it('a failing check fails the reads that waited for it, and the next turn checks again', async () => {
    let fail = true;
    const tokens = new LocalChangeTokens(() => {
      if (fail) throw new Error('disk I/O error');
      return 3;
    });
    await assert.rejects(Promise.resolve(tokens.current(PROJECT)), /disk I\/O error/);
    fail = false;
    assert.match(String(await tokens.current(PROJECT)), /^3:/);
  });
});

describe('change tokens in Redis (several instances)', () => {
  let redisA: Redis | null = null;
  let redisB: Redis | null = null;
  let available = false;
  const prefix = `coffer-test-${randomBytes(6).toString('hex')}:changes:`;
  const silent = { onDegraded: () => undefined, onRecovered: () => undefined };

  before(async () => {
    available = await reachable(REDIS_URL);
    if (!available) return;
    redisA = new Redis(REDIS_URL);
    redisB = new Redis(REDIS_URL);
  });
  after(async () => {
    if (!redisA) return;
    const keys = await redisA.keys(`${prefix}*`);
    if (keys.length) await redisA.del(...keys);
    await redisA.quit();
    await redisB?.quit();
  });

  it('a write on one instance: the other reads null during it, a new token after', async (t) => {
    if (!available) return serviceMissing(t, `Redis at ${REDIS_URL} (COFFER_TEST_REDIS_URL)`);
    const a = new RedisChangeTokens(redisA!, prefix, silent);
    const b = new RedisChangeTokens(redisB!, prefix, silent);
    const first = await b.current(PROJECT);
    assert.notEqual(first, null);
    assert.equal(await b.current(PROJECT), first, 'unchanged while nothing is written');
    const end = await a.begin(PROJECT);
    assert.equal(await b.current(PROJECT), null, 'B reads the database while A writes');
    await end();
    const second = await b.current(PROJECT);
    assert.notEqual(second, null);
    assert.notEqual(second, first, 'A acknowledged: B never matches an entry of before');
    // Reads of one project in the same turn share one check and one answer.
    const together = await Promise.all([b.current(PROJECT), b.current(PROJECT)]);
    assert.deepEqual(together, [second, second]);
  });

  it('Redis unreachable: reads get null (ask the database), writes are refused with 503', async () => {
    const port = await freePort(); // nothing listens there
    const down = new Redis(`redis://127.0.0.1:${port}`, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    down.on('error', () => undefined);
    const events: string[] = [];
    const tokens = new RedisChangeTokens(down, prefix, {
      onDegraded: () => events.push('degraded'),
      onRecovered: () => events.push('recovered'),
    });
    assert.equal(await tokens.current(PROJECT), null);
    assert.equal(await tokens.current(PROJECT), null);
    assert.equal(tokens.degraded, true);
    assert.equal(tokens.fallbacks, 2);
    await assert.rejects(
      tokens.begin(PROJECT),
      (err: unknown) => err instanceof AppError && err.code === 'service_unavailable',
    );
    assert.deepEqual(events, ['degraded'], 'said once per outage');
    down.disconnect();
  });
});

describe('the cache of values under change tokens', () => {
  it('serves a value only under the token it was stored with', () => {
    const cache = new TokenCache<string>(10, 1_000);
    cache.set('a', 't1', 'A');
    assert.equal(cache.get('a', 't1'), 'A');
    assert.equal(cache.get('a', 't2'), undefined);
    assert.deepEqual([cache.hits, cache.misses], [1, 1]);
  });

  it('when full, drops the oldest value not read since, and keeps the ones being read', () => {
    const cache = new TokenCache<string>(3, 1_000);
    for (const key of ['a', 'b', 'c']) cache.set(key, 't', key);
    assert.equal(cache.get('a', 't'), 'a');
    cache.set('d', 't', 'd');
    assert.equal(cache.size, 3);
    assert.equal(cache.get('b', 't'), undefined, 'b: oldest of those not read');
    for (const key of ['a', 'c', 'd']) assert.equal(cache.get(key, 't'), key);
    // All three read: the one passed over first goes next, never the one just stored.
    cache.set('e', 't', 'e');
    assert.equal(cache.size, 3);
    assert.equal(cache.get('e', 't'), 'e');
  });

  it('holds no more weight than its bound, however the values are read', () => {
    const cache = new TokenCache<string>(1_000, 100);
    for (let i = 0; i < 200; i++) {
      cache.set(`k${i}`, 't', 'x'.repeat(30), 30);
      cache.get(`k${i % 7}`, 't');
    }
    assert.ok(cache.size <= 3, `${cache.size} values of weight 30 under a bound of 100`);
    assert.equal(cache.get('k199', 't'), 'x'.repeat(30));
    cache.set('huge', 't', 'y'.repeat(200), 200);
    assert.equal(cache.get('huge', 't'), undefined, 'a value above the bound is not kept');
  });
});
