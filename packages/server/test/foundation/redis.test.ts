import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
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

  it('requests alternating between the two processes count against one budget', async () => {
    if (!available) return serviceMissing(`Redis at ${REDIS_URL} (COFFER_TEST_REDIS_URL)`);
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

  it('the per-IP auth budget is shared the same way', async () => {
    if (!available) return serviceMissing(`Redis at ${REDIS_URL} (COFFER_TEST_REDIS_URL)`);
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

  it('fails open to local counters with one warning, and uses Redis again once it is back', async () => {
    if (!hasRedisServer) return serviceMissing('The redis-server binary');
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
