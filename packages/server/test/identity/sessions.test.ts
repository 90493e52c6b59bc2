import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ready } from '@coffer/sdk';
import { buildApp } from '../../src/app.js';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { errorOf } from '../support/http.js';
import { logIn, signUp } from '../support/users.js';
import { insertApiKey, insertProject } from './fixtures.js';

const DAY = 24 * 60 * 60 * 1000;

interface SessionItem {
  id: string;
  created_at: string;
  last_used_at: string;
  expires_at: string;
  ip: string | null;
  user_agent: string | null;
  current: boolean;
}

for (const dialect of DIALECTS) {
  describe(`identity: sessions (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      await ready();
      t = await startTestApp(dialect);
    });
    after(async () => t.close());

    const me = (cookie: string) => t.request({ method: 'GET', url: '/v1/me', headers: { cookie } });

    it("lists the caller's own sessions, marking the current one", async () => {
      const user = await signUp(t);
      const second = await logIn(t, user.email, user.password);
      const stranger = await signUp(t);

      const res = await t.request({
        method: 'GET',
        url: '/v1/me/sessions?sort=created_at&order=asc',
        headers: { cookie: user.cookie, 'user-agent': 'coffer-cli/1.0' },
      });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.data as {
        data: SessionItem[];
        pagination: { total: number; page: number; per_page: number; total_pages: number };
      };
      assert.deepEqual(
        body.data.map((s) => [s.id, s.current]).sort(),
        [
          [user.sessionId, true],
          [second.sessionId, false],
        ].sort(),
      );
      assert.deepEqual(
        body.data.map((s) => s.id).sort(),
        [user.sessionId, second.sessionId].sort(),
      );
      assert.ok(!body.data.some((s) => s.id === stranger.sessionId));
      assert.deepEqual(body.pagination, { page: 1, per_page: 20, total: 2, total_pages: 1 });
      const current = body.data.find((s) => s.current)!;
      assert.equal(current.id, user.sessionId);
      assert.equal(
        Date.parse(current.expires_at) - Date.parse(current.created_at),
        30 * DAY,
        'sessions last 30 days',
      );
      assert.deepEqual(Object.keys(current).sort(), [
        'created_at',
        'current',
        'expires_at',
        'id',
        'ip',
        'last_used_at',
        'user_agent',
      ]);
    });

    it('ending one of your sessions logs that session out; the others keep working', async () => {
      const user = await signUp(t);
      const laptop = await logIn(t, user.email, user.password);
      const res = await t.request({
        method: 'DELETE',
        url: `/v1/me/sessions/${laptop.sessionId}`,
        headers: user.headers,
      });
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.headers['set-cookie'], undefined, 'not the current session');
      assert.equal((await me(laptop.cookie!)).statusCode, 401);
      assert.equal((await me(user.cookie)).statusCode, 200);

      const again = await t.request({
        method: 'DELETE',
        url: `/v1/me/sessions/${laptop.sessionId}`,
        headers: user.headers,
      });
      assert.equal(again.statusCode, 404);
    });

    it("another user's session is a 404 and stays alive", async () => {
      const user = await signUp(t);
      const victim = await signUp(t);
      const res = await t.request({
        method: 'DELETE',
        url: `/v1/me/sessions/${victim.sessionId}`,
        headers: user.headers,
      });
      assert.equal(res.statusCode, 404);
      assert.equal(errorOf(res).code, 'not_found');
      assert.equal((await me(victim.cookie)).statusCode, 200);
    });

    it('ending the current session clears its cookie', async () => {
      const user = await signUp(t);
      const res = await t.request({
        method: 'DELETE',
        url: `/v1/me/sessions/${user.sessionId}`,
        headers: user.headers,
      });
      assert.equal(res.statusCode, 204);
      assert.match(String(res.headers['set-cookie']), /^coffer_session=;.*Max-Age=0/);
      assert.equal((await me(user.cookie)).statusCode, 401);
    });

    it('a session expires after 30 days: 401 token_expired', async () => {
      const user = await signUp(t);
      t.clock.advance(30 * DAY - 60_000);
      assert.equal((await me(user.cookie)).statusCode, 200);
      t.clock.advance(60_000);
      const res = await me(user.cookie);
      assert.equal(res.statusCode, 401);
      assert.equal(errorOf(res).code, 'token_expired');
      // Expired sessions are not listed.
      const fresh = await logIn(t, user.email, user.password);
      const list = await t.request({
        method: 'GET',
        url: '/v1/me/sessions',
        headers: { cookie: fresh.cookie! },
      });
      assert.deepEqual(
        (list.data as { data: SessionItem[] }).data.map((s) => s.id),
        [fresh.sessionId],
      );
    });

    it('last_used_at is recorded, at most once a minute', async () => {
      const user = await signUp(t);
      const lastUsed = async () =>
        (
          await t.testDb.db.kysely
            .selectFrom('sessions')
            .select('last_used_at')
            .where('id', '=', user.sessionId)
            .executeTakeFirstOrThrow()
        ).last_used_at;
      const start = await lastUsed();
      t.clock.advance(30_000);
      await me(user.cookie);
      assert.equal(await lastUsed(), start, 'not rewritten within a minute');
      t.clock.advance(31_000);
      await me(user.cookie);
      assert.equal(await lastUsed(), t.clock.now().toISOString());
    });

    it('API keys and CI tokens cannot use the session endpoints', async () => {
      const user = await signUp(t);
      const { bearer } = await insertApiKey(t, await insertProject(t, user.id), user.id);
      for (const url of ['/v1/me', '/v1/me/sessions', '/v1/me/keys']) {
        const res = await t.request({
          method: 'GET',
          url,
          headers: { authorization: `Bearer ${bearer}` },
        });
        assert.equal(res.statusCode, 403, `${url}: ${res.body}`);
        assert.equal(errorOf(res).code, 'forbidden');
      }
    });

    it('logout is immediate on this instance and within the cache TTL on another', async () => {
      const user = await signUp(t);
      // Another instance: same database, its own handle (and so its own credential cache).
      const other = await buildApp({ config: t.config, db: { ...t.testDb.db }, clock: t.clock });
      try {
        const onOther = () =>
          other.inject({ method: 'GET', url: '/v1/me', headers: { cookie: user.cookie } });
        assert.equal((await onOther()).statusCode, 200);
        const out = await t.request({
          method: 'POST',
          url: '/v1/auth/logout',
          headers: user.headers,
        });
        assert.equal(out.statusCode, 204);
        assert.equal((await me(user.cookie)).statusCode, 401, 'immediately here');
        t.clock.advance(5_000);
        assert.equal((await onOther()).statusCode, 401, 'after the TTL there');
      } finally {
        await other.close();
      }
    });
  });
}
