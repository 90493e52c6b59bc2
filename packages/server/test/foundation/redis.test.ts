import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { consume, RedisRateLimitStore } from '../../src/http/rate-limit.js';
import {
  reachable,
  send,
  serviceMissing,
  startServerProcess,
  type HttpResponse,
  type ServerProcess,
} from './server-process.js';

const REDIS_URL = process.env.COFFER_TEST_REDIS_URL || 'redis://127.0.0.1:6379';

const budget = (res: HttpResponse) => ({
  status: res.status,
  limit: Number(res.headers['x-ratelimit-limit']),
  remaining: Number(res.headers['x-ratelimit-remaining']),
  reset: Number(res.headers['x-ratelimit-reset']),
});

/** Counters are per minute window: start a sequence with time to spare in the window. */
async function awayFromWindowEdge(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 15_000) await new Promise((resolve) => setTimeout(resolve, left + 200));
}

describe('shared rate limits in Redis: two server processes, one budget', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coffer-redis-'));
  const servers: ServerProcess[] = [];
  let ca = '';
  let available = false;
  before(async () => {
    available = await reachable(REDIS_URL);
    if (!available) return;
    // Same database (one SQLite file), same Redis, a key prefix of this test's own.
    const env = {
      DATA_DIR: dataDir,
      REDIS_URL,
      REDIS_KEY_PREFIX: `coffer-test-${randomBytes(6).toString('hex')}:`,
      RATE_LIMIT_ANONYMOUS: '6',
      RATE_LIMIT_AUTH: '4',
    };
    servers.push(await startServerProcess(env));
    servers.push(await startServerProcess(env));
    ca = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('requests alternating between the two processes count against one budget', async (t) => {
    if (!available) return serviceMissing(t, `Redis at ${REDIS_URL} (COFFER_TEST_REDIS_URL)`);
    const [a, b] = servers as [ServerProcess, ServerProcess];
    assert.notEqual(a.url, b.url);
    await awayFromWindowEdge();
    const seen = [];
    for (let i = 0; i < 8; i++) {
      const server = i % 2 === 0 ? a : b;
      seen.push(budget(await send(`${server.url}/v1/projects`, { ca })));
    }
    assert.deepEqual(
      seen.map((s) => [s.status, s.limit, s.remaining]),
      [
        [401, 6, 5],
        [401, 6, 4],
        [401, 6, 3],
        [401, 6, 2],
        [401, 6, 1],
        [401, 6, 0],
        [429, 6, 0],
        [429, 6, 0],
      ],
    );
    assert.equal(new Set(seen.map((s) => s.reset)).size, 1, 'one window');
  });

  it('the per-IP auth budget is shared the same way', async (t) => {
    if (!available) return serviceMissing(t, `Redis at ${REDIS_URL} (COFFER_TEST_REDIS_URL)`);
    const [a, b] = servers as [ServerProcess, ServerProcess];
    await awayFromWindowEdge();
    const statuses = [];
    for (const server of [a, b, a, b, a]) {
      const res = await send(`${server.url}/v1/auth/prelogin`, {
        method: 'POST',
        ca,
        body: { email: 'shared@example.test' },
      });
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 429]);
  });
});

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

function startRedis(port: number): ChildProcess {
  return spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
}

async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe('Redis going down mid-run: the server keeps answering, counting per instance', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coffer-redis-down-'));
  const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;
  let redis: ChildProcess | null = null;
  let server: ServerProcess | null = null;
  let redisUrl = '';
  let ca = '';
  before(async () => {
    if (!hasRedisServer) return;
    const port = await freePort();
    redisUrl = `redis://127.0.0.1:${port}`;
    redis = startRedis(port);
    await waitUntil(() => reachable(redisUrl), 'the private Redis');
    server = await startServerProcess({
      DATA_DIR: dataDir,
      REDIS_URL: redisUrl,
      RATE_LIMIT_ANONYMOUS: '3',
    });
    ca = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
  });
  after(async () => {
    redis?.kill('SIGKILL');
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('fails open to local counters with one warning, and uses Redis again once it is back', async (t) => {
    if (!hasRedisServer) return serviceMissing(t, 'The redis-server binary');
    const s = server!;
    await awayFromWindowEdge();
    const first = budget(await send(`${s.url}/v1/projects`, { ca }));
    assert.deepEqual([first.status, first.remaining], [401, 2]);

    const stopped = new Promise((resolve) => redis!.once('exit', resolve));
    redis!.kill('SIGKILL');
    await stopped;

    // Still answered, still with headers, and still limited: by this instance's memory.
    const during = [];
    for (let i = 0; i < 4; i++) during.push(budget(await send(`${s.url}/v1/projects`, { ca })));
    assert.deepEqual(
      during.map((d) => [d.status, d.limit, d.remaining]),
      [
        [401, 3, 2],
        [401, 3, 1],
        [401, 3, 0],
        [429, 3, 0],
      ],
    );
    const warnings = s.logs().filter((l) => l.msg?.startsWith('rate-limit store unreachable'));
    assert.equal(warnings.length, 1, 'one warning per outage, not one per request');
    assert.ok(warnings[0]!.level >= 40);

    // Back: a fresh, empty Redis on the same address; counting returns to it.
    redis = startRedis(Number(new URL(redisUrl).port));
    await waitUntil(async () => {
      await send(`${s.url}/v1/projects`, { ca });
      return s.logs().some((l) => l.msg?.startsWith('rate-limit store is reachable again'));
    }, 'the server to use Redis again');
  });
});

describe('Redis counters reserved in leases (one store per server instance)', () => {
  let redis: Redis | null = null;
  let available = false;
  const prefix = `coffer-test-${randomBytes(6).toString('hex')}:rl:`;
  /** A store as `startServer` builds it, and how many round trips its reservations took. */
  const instance = () => {
    const client = redis!.duplicate();
    const store = new RedisRateLimitStore(client, prefix);
    const commands = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const lease = commands.cofferRateLease!;
    const counter = { roundTrips: 0 };
    commands.cofferRateLease = (...args) => {
      counter.roundTrips++;
      return lease.apply(client, args);
    };
    return { store, counter };
  };
  const WINDOW = 60;
  const NOW = Date.UTC(2026, 10, 23, 12, 0, 10);

  before(async () => {
    available = await reachable(REDIS_URL);
    if (available) redis = new Redis(REDIS_URL);
  });
  after(async () => {
    if (!redis) return;
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it('one instance counts every request exactly and refuses past the limit, with a round trip per lease', async (t) => {
    if (!available) return serviceMissing(t, `Redis at ${REDIS_URL} (COFFER_TEST_REDIS_URL)`);
    const { store, counter } = instance();
    const states = [];
    for (let i = 0; i < 1001; i++) states.push(await consume(store, 'key:busy', 1000, WINDOW, NOW));
    assert.deepEqual(
      states.slice(0, 1000).map((s) => s.remaining),
      Array.from({ length: 1000 }, (_, i) => 999 - i),
    );
    assert.ok(states.slice(0, 1000).every((s) => !s.exceeded));
    assert.equal(states[1000]!.exceeded, true);
    // Leases of 1, 2, 4 … 64, shrinking near the limit: far fewer round trips than requests.
    assert.ok(counter.roundTrips < 60, `${counter.roundTrips} round trips for 1,001 requests`);
    // Refused requests of the window cost no more round trips.
    const before = counter.roundTrips;
    for (let i = 0; i < 20; i++)
      assert.ok((await consume(store, 'key:busy', 1000, WINDOW, NOW)).exceeded);
    assert.equal(counter.roundTrips, before);
    // The next window starts from zero.
    const next = await consume(store, 'key:busy', 1000, WINDOW, NOW + WINDOW * 1000);
    assert.deepEqual([next.exceeded, next.remaining], [false, 999]);
    await store.close();
  });

  it('requests of two windows in flight at once are all answered', async (t) => {
    if (!available) return serviceMissing(t, `Redis at ${REDIS_URL} (COFFER_TEST_REDIS_URL)`);
    // A request that started in one minute and waits for a reservation while the
    // next minute's first request arrives: each used to replace the other's
    // lease, reserve again and never answer (the benchmark's stall).
    const { store } = instance();
    const requests = [
      consume(store, 'key:edge', 1000, WINDOW, NOW),
      consume(store, 'key:edge', 1000, WINDOW, NOW + WINDOW * 1000),
      consume(store, 'key:edge', 1000, WINDOW, NOW),
    ];
    const answered = await Promise.race([
      Promise.all(requests).then(() => true),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), 5000)),
    ]);
    assert.equal(answered, true, 'every request answered within 5 s');
    await store.close();
  });

  it('a key with a few requests per window is counted one by one, as without leases', async (t) => {
    if (!available) return serviceMissing(t, `Redis at ${REDIS_URL} (COFFER_TEST_REDIS_URL)`);
    const a = instance();
    const b = instance();
    const seen = [];
    for (const { store } of [a, b, a, b, a, b]) {
      seen.push((await consume(store, 'key:quiet', 5, WINDOW, NOW)).remaining);
    }
    assert.deepEqual(seen, [4, 3, 2, 1, 0, 0]);
    await Promise.all([a.store.close(), b.store.close()]);
  });

  it('two instances under concurrent load never serve more than the shared limit, nor far less', async (t) => {
    if (!available) return serviceMissing(t, `Redis at ${REDIS_URL} (COFFER_TEST_REDIS_URL)`);
    const a = instance();
    const b = instance();
    const limit = 500;
    const results = await Promise.all(
      Array.from({ length: 700 }, (_, i) =>
        Promise.resolve(consume((i % 2 ? a : b).store, 'key:shared', limit, WINDOW, NOW)).then(
          (state) => ({ state, via: i % 2 }),
        ),
      ),
    );
    const served = results.filter((r) => !r.state.exceeded);
    assert.ok(served.length <= limit, `${served.length} served of a budget of ${limit}`);
    // Positions reserved and not used by one instance are the only loss: at most
    // an eighth of what was left when it reserved them.
    assert.ok(served.length >= limit - 20, `only ${served.length} served of ${limit}`);
    // No position in the shared count is handed out twice.
    const positions = served.map((r) => limit - r.state.remaining);
    assert.equal(new Set(positions).size, served.length);
    assert.ok(served.some((r) => r.via === 0) && served.some((r) => r.via === 1));
    await Promise.all([a.store.close(), b.store.close()]);
  });
});
