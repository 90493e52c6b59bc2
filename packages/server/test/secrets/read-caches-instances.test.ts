import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { onlyOn, POSTGRES_URL } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { envelope, projectWithVault, type VaultProject } from '../support/vault.js';
import { createToken, secretsUrl } from './fixtures.js';
import {
  ensureBuilt,
  freePort,
  reachable,
  serviceMissing,
  startServerProcess,
  type ServerProcess,
} from '../foundation/server-process.js';

// Several server processes on one PostgreSQL database and one Redis, as
// deployed behind a load balancer: a write acknowledged by one is what every
// later read on any other returns, and an unchanged environment is read
// without the database on each of them.

const REDIS_URL = process.env.COFFER_TEST_REDIS_URL || 'redis://127.0.0.1:6379';
const METRICS_TOKEN = randomBytes(16).toString('hex');

interface Instance {
  process: ServerProcess;
  url: string;
}

async function startInstance(t: TestApp, redisUrl: string, prefix: string): Promise<Instance> {
  const process = await startServerProcess({
    DATA_DIR: t.testDb.dataDir,
    DATABASE_URL: t.testDb.databaseUrl!,
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: prefix,
    HOST: '127.0.0.1',
    TLS: 'off',
    TRUST_PROXY: 'true',
    LOG_LEVEL: 'warn',
    METRICS_TOKEN,
    RATE_LIMIT_API_KEY: '1000000',
    RATE_LIMIT_SESSION: '1000000',
    // The outbox is polled every 5 s by default (a select that is no read's);
    // hourly here, so the counts below are the reads' own.
    OUTBOX_POLL_MS: '3600000',
  });
  return { process, url: process.url.replace('//localhost:', '//127.0.0.1:') };
}

/** A JSON answer as these tests read it: a `data` envelope or a Form A error. */
type Answer = {
  data?: { value?: string; version?: number } & Array<{
    name: string;
    version: number;
    value: string;
  }>;
  error?: { code: string };
} | null;

async function call(
  instance: Instance,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; data: Answer; text: string }> {
  const res = await fetch(`${instance.url}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let data: Answer = null;
  if (text && (res.headers.get('content-type') ?? '').includes('json'))
    data = JSON.parse(text) as Answer;
  return { status: res.status, data, text };
}

const metrics = async (instance: Instance) =>
  (await call(instance, 'GET', '/metrics', { authorization: `Bearer ${METRICS_TOKEN}` })).text;

const metricOf = (text: string, line: string) =>
  Number(new RegExp(`^${line.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)`, 'm').exec(text)?.[1]);

const statementsOf = (text: string) => ({
  select: metricOf(text, 'coffer_db_statements_total{kind="select"}'),
  other: metricOf(text, 'coffer_db_statements_total{kind="other"}'),
});

/** What the tests below need first: a real PostgreSQL for the processes to share. */
async function prerequisites(redisUrl: string): Promise<string | null> {
  if (!POSTGRES_URL)
    return 'A real PostgreSQL server shared by the processes (COFFER_TEST_DATABASE_URL)';
  if (!(await reachable(redisUrl))) return `Redis at ${redisUrl} (COFFER_TEST_REDIS_URL)`;
  return null;
}

describe('read caches across server processes (PostgreSQL + Redis)', onlyOn('postgres'), () => {
  let t: TestApp;
  let project: VaultProject;
  const instances: Instance[] = [];
  let missing: string | null = null;
  let key: { headers: { authorization: string } };

  before(async () => {
    missing = await prerequisites(REDIS_URL);
    if (missing) return;
    ensureBuilt();
    t = await startTestApp('postgres');
    project = await projectWithVault(t);
    key = await createToken(t, project, 'api_key', { [project.env.staging.id]: 'read_write' });
    const prefix = `coffer-test-${randomBytes(6).toString('hex')}:`;
    instances.push(await startInstance(t, REDIS_URL, prefix));
    instances.push(await startInstance(t, REDIS_URL, prefix));
  });
  after(async () => {
    await Promise.all(instances.map((i) => i.process.stop()));
    await t?.close();
  });

  it('an unchanged environment: 0 statements per read on each instance once warm', async (context) => {
    if (missing) return serviceMissing(context, missing);
    const env = project.env.staging;
    const admin = { cookie: project.admin.cookie };
    const [a] = instances as [Instance, Instance];
    const put = await call(
      a,
      'PUT',
      secretsUrl(project, env.slug, '/WARM'),
      { ...key.headers },
      { value: envelope(project, env.id, 'WARM', 'w') },
    );
    assert.equal(put.status, 201);
    const reads = (instance: Instance) => [
      call(instance, 'GET', secretsUrl(project, env.slug), admin),
      call(instance, 'GET', secretsUrl(project, env.slug, '/WARM'), admin),
    ];
    for (const instance of instances) {
      // Warm right before counting: the first reads ask the database, and the
      // session (cached 5 s) is fresh when the count starts.
      for (const r of reads(instance)) assert.equal((await r).status, 200);
      // A scrape counts the outbox (two selects): measured, then left out.
      const s0 = await metrics(instance);
      const s1 = await metrics(instance);
      const perScrape = statementsOf(s1).select - statementsOf(s0).select;
      const started = Date.now();
      for (let i = 0; i < 25; i++)
        for (const r of reads(instance)) assert.equal((await r).status, 200);
      const elapsed = Date.now() - started;
      const s2 = await metrics(instance);
      const selects = statementsOf(s2).select - statementsOf(s1).select - perScrape;
      // Allowed: the session looked up again when its 5 s cache entry expires
      // (none in a burst shorter than that), and a read whose Redis check failed
      // on an overloaded machine (1 s command timeout) asks the database (at
      // most 3 selects); those are counted, and must stay rare.
      const credentialReloads = Math.floor(elapsed / 5000);
      const fallbacks =
        metricOf(s2, 'coffer_read_cache_fallbacks_total') -
        metricOf(s1, 'coffer_read_cache_fallbacks_total');
      assert.ok(fallbacks <= 2, `${fallbacks} reads could not check Redis`);
      assert.ok(
        selects <= credentialReloads + 3 * fallbacks,
        `${selects} selects for 50 reads in ${elapsed} ms on ${instance.url} (${fallbacks} fallbacks)`,
      );
      const others = statementsOf(s2).other - statementsOf(s1).other;
      assert.ok(others <= credentialReloads + 1, 'no writes but a last-used stamp');
    }
  });

  it('1,000 writes each followed by a read on the other instance: none stale', async (context) => {
    if (missing) return serviceMissing(context, missing);
    const env = project.env.staging;
    const [a, b] = instances as [Instance, Instance];
    let stale = 0;
    const failures: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const [writer, reader] = i % 2 === 0 ? [a, b] : [b, a];
      const value = envelope(project, env.id, 'ROTATED', `value ${i}`);
      const put = await call(
        writer,
        'PUT',
        secretsUrl(project, env.slug, '/ROTATED'),
        key.headers,
        { value },
      );
      assert.ok(put.status === 200 || put.status === 201, `write ${i}: ${put.status} ${put.text}`);
      const version = (put.data as { data: { version: number } }).data.version;
      // Alternately the secret itself and the environment's listing.
      if (i % 2 === 0) {
        const read = await call(
          reader,
          'GET',
          secretsUrl(project, env.slug, '/ROTATED'),
          key.headers,
        );
        if ((read.data as { data: { value: string } }).data.value !== value) {
          stale++;
          failures.push(`pair ${i}: read of the secret`);
        }
      } else {
        const list = await call(reader, 'GET', secretsUrl(project, env.slug), key.headers);
        const listed = (
          list.data as { data: { name: string; version: number; value: string }[] }
        ).data.find((s) => s.name === 'ROTATED');
        if (listed?.version !== version || listed.value !== value) {
          stale++;
          failures.push(`pair ${i}: listing has version ${listed?.version}, wrote ${version}`);
        }
      }
    }
    assert.equal(stale, 0, failures.slice(0, 5).join('; '));
    // The other instance met each new token on its first read after the write.
    const lagCount = metricOf(await metrics(b), 'coffer_change_seen_lag_seconds_count');
    assert.ok(lagCount > 0, 'the invalidation lag is measured');
  });
});

function startRedis(port: number): ChildProcess {
  return spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
}

async function until<T>(check: () => Promise<T | null>, what: string): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const value = await check();
    if (value !== null) return value;
    await sleep(100);
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe(
  'read caches with Redis down: answers from the database, said once',
  onlyOn('postgres'),
  () => {
    let t: TestApp;
    let project: VaultProject;
    const instances: Instance[] = [];
    let redis: ChildProcess | null = null;
    let redisUrl = '';
    let missing: string | null = null;

    before(async () => {
      if (spawnSync('redis-server', ['--version']).status !== 0) {
        missing = 'The redis-server binary';
        return;
      }
      const port = await freePort();
      redisUrl = `redis://127.0.0.1:${port}`;
      redis = startRedis(port);
      await until(async () => ((await reachable(redisUrl)) ? true : null), 'the private Redis');
      missing = await prerequisites(redisUrl);
      if (missing) return;
      ensureBuilt();
      t = await startTestApp('postgres');
      project = await projectWithVault(t);
      const prefix = `coffer-test-${randomBytes(6).toString('hex')}:`;
      instances.push(await startInstance(t, redisUrl, prefix));
      instances.push(await startInstance(t, redisUrl, prefix));
    });
    after(async () => {
      redis?.kill('SIGKILL');
      await Promise.all(instances.map((i) => i.process.stop()));
      await t?.close();
    });

    it('reads stay correct, writes to projects wait for Redis, and both come back', async (context) => {
      if (missing) return serviceMissing(context, missing);
      const env = project.env.staging;
      const [a, b] = instances as [Instance, Instance];
      const admin = { cookie: project.admin.cookie, origin: new URL(a.url).origin };
      const adminB = { cookie: project.admin.cookie };
      const path = secretsUrl(project, env.slug, '/DB_PASSWORD');
      // Envelopes are random (a fresh nonce each): each value is sealed once.
      const sealed = new Map<string, string>();
      const seal = (value: string) => {
        if (!sealed.has(value)) sealed.set(value, envelope(project, env.id, 'DB_PASSWORD', value));
        return sealed.get(value)!;
      };
      const write = (value: string) => call(a, 'PUT', path, { ...admin }, { value: seal(value) });
      const readOnB = async () =>
        (await call(b, 'GET', path, adminB)).data?.data?.value as string | undefined;

      assert.equal((await write('first')).status, 201);
      assert.equal(await readOnB(), seal('first'));

      const stopped = new Promise((resolve) => redis!.once('exit', resolve));
      redis!.kill('SIGKILL');
      await stopped;

      // B answers from the database, and says so once.
      for (let i = 0; i < 5; i++) assert.equal(await readOnB(), seal('first'));
      const during = await metrics(b);
      assert.equal(metricOf(during, 'coffer_read_cache_degraded'), 1);
      assert.ok(metricOf(during, 'coffer_read_cache_fallbacks_total') >= 5);
      const warnings = b.process
        .logs()
        .filter((l) => l.msg?.startsWith('read caches: Redis unreachable'));
      assert.equal(warnings.length, 1, 'one warning per outage');

      // A write A cannot announce is refused before anything is written.
      const refused = await write('second');
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.data?.error?.code, 'service_unavailable');
      assert.equal(await readOnB(), seal('first'));

      // Redis back (empty): writes go through and B sees them at once.
      redis = startRedis(Number(new URL(redisUrl).port));
      await until(async () => {
        const res = await write('third');
        return res.status === 200 ? res : null;
      }, 'writes to be accepted again');
      assert.equal(await readOnB(), seal('third'));
      // B's own connection comes back on its own schedule (a reconnect backs off
      // up to 2 s): until then its reads keep coming from the database, and the
      // first read through Redis again ends the outage.
      await until(async () => {
        assert.equal(await readOnB(), seal('third'));
        return metricOf(await metrics(b), 'coffer_read_cache_degraded') === 0 ? true : null;
      }, 'B to use Redis again');
      assert.ok(
        b.process.logs().some((l) => l.msg?.startsWith('read caches: Redis is reachable again')),
      );
    });
  },
);
