import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { buildApp, type App } from '../../src/app.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { shareCredentialInvalidation } from '../../src/domains/identity/credentials.js';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';
import { reachable, serviceMissing } from '../foundation/server-process.js';

const REDIS_URL = process.env.COFFER_TEST_REDIS_URL || 'redis://127.0.0.1:6379';

// Two instances on one database, each with its own credential cache, sharing
// revocations over a real Redis. The test clock never moves, so without the
// shared invalidation instance B would keep accepting a cached session forever.

for (const dialect of DIALECTS) {
  describe(`identity: revocations reach every instance through Redis (${dialect})`, () => {
    let t: TestApp;
    let appB: App | null = null;
    let dbB: Db | null = null;
    const redisClients: Redis[] = [];
    const sharing: Array<{ close(): Promise<void> }> = [];
    let missing: string | null = null;

    before(async () => {
      if (!(await reachable(REDIS_URL))) {
        missing = `Redis at ${REDIS_URL} (COFFER_TEST_REDIS_URL)`;
        return;
      }
      t = await startTestApp(dialect);
      if (dialect === 'sqlite') {
        dbB = await openDatabase({ kind: 'sqlite', file: join(t.testDb.dataDir, 'coffer.db') });
      } else if (t.testDb.databaseUrl) {
        dbB = await openDatabase({ kind: 'postgres', url: t.testDb.databaseUrl });
      } else {
        missing =
          'A PostgreSQL server for a second instance (in-process PGlite has one connection; COFFER_TEST_DATABASE_URL)';
        return;
      }
      appB = await buildApp({ config: t.config, db: dbB, clock: t.clock });
      await appB.ready();
      const channel = `coffer-test-${randomBytes(6).toString('hex')}:credentials`;
      for (const app of [t.app, appB]) {
        const redis = new Redis(REDIS_URL);
        redisClients.push(redis);
        const shared = shareCredentialInvalidation(app.credentials, redis, channel);
        sharing.push(shared);
        await shared.subscribed;
      }
    });

    after(async () => {
      for (const s of sharing) await s.close();
      await Promise.all(redisClients.map((r) => r.quit()));
      await appB?.close();
      if (dbB && dbB !== t?.testDb.db) await dbB.close();
      await t?.close();
    });

    /** `GET /v1/me` on instance B until it answers `status` (pub/sub is asynchronous). */
    async function meOnB(user: TestUser, status: number): Promise<number> {
      let last = 0;
      for (let i = 0; i < 40; i++) {
        last = (
          await appB!.inject({ method: 'GET', url: '/v1/me', headers: { cookie: user.cookie } })
        ).statusCode;
        if (last === status) break;
        await sleep(50);
      }
      return last;
    }

    it('a logout on instance A ends the session on instance B at once', async (context) => {
      if (missing) return serviceMissing(context, missing);
      const user = await signUp(t);
      assert.equal(await meOnB(user, 200), 200, 'B accepts (and caches) the live session');
      const logout = await t.request({
        method: 'POST',
        url: '/v1/auth/logout',
        headers: user.headers,
      });
      assert.equal(logout.statusCode, 204);
      assert.equal(
        await meOnB(user, 401),
        401,
        'B refuses the session without waiting for its cache TTL',
      );
    });

    it('ending a session from the session list on A refuses it on B', async (context) => {
      if (missing) return serviceMissing(context, missing);
      const user = await signUp(t);
      const other = await t.request({
        method: 'POST',
        url: '/v1/auth/login',
        body: { email: user.email, auth_key: await authKeyOf(t, user) },
      });
      assert.equal(other.statusCode, 200);
      const cookie = String(other.headers['set-cookie']).split(';')[0]!;
      const second: TestUser = { ...user, cookie, headers: { ...user.headers, cookie } };
      assert.equal(await meOnB(second, 200), 200);
      const sessionId = (other.data as { data: { session: { id: string } } }).data.session.id;
      const ended = await t.request({
        method: 'DELETE',
        url: `/v1/me/sessions/${sessionId}`,
        headers: user.headers,
      });
      assert.equal(ended.statusCode, 204);
      assert.equal(await meOnB(second, 401), 401);
    });
  });
}

async function authKeyOf(t: TestApp, user: TestUser): Promise<string> {
  const { derivePasswordKeys } = await import('@coffer/sdk');
  const pre = await t.request({
    method: 'POST',
    url: '/v1/auth/prelogin',
    body: { email: user.email },
  });
  const params = (pre.data as { data: { kdf_params: Parameters<typeof derivePasswordKeys>[1] } })
    .data.kdf_params;
  return derivePasswordKeys(user.password, params).authKey;
}
