import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { derivePasswordKeys, ready, type KdfParams } from '@coffer/sdk';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { sessionCookieOf, signUp, type TestUser } from '../support/users.js';

// Values a sibling subdomain could set that are not percent-encoded UTF-8:
// an invalid escape, and a valid escape of bytes that are not UTF-8.
const MALFORMED = ['%ZZ', '%C3%28', '%', 'abc%E0%A4'];

function assertUnauthenticated(res: TestResponse): void {
  assert.equal(res.statusCode, 401, res.body);
  const body = res.data as { error: { code: string; message: string; request_id: string } };
  assert.deepEqual(Object.keys(body), ['error']);
  assert.equal(body.error.code, 'unauthenticated');
  assert.equal(body.error.request_id, res.headers['x-request-id']);
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
    assert.match(String(res.headers[name]), /^\d+$/, name);
}

for (const dialect of DIALECTS) {
  describe(`a session cookie that does not decode (${dialect})`, () => {
    let t: TestApp;
    let user: TestUser;
    before(async () => {
      await ready();
      t = await startTestApp(dialect);
      user = await signUp(t);
    });
    after(async () => t.close());

    it('counts as no session: GET /v1/me is a 401 with rate-limit headers, not a 500', async () => {
      for (const value of MALFORMED) {
        const res = await t.request({
          method: 'GET',
          url: '/v1/me',
          headers: { cookie: `coffer_session=${value}` },
        });
        assertUnauthenticated(res);
      }
    });

    it('never blocks prelogin or login', async () => {
      for (const value of MALFORMED) {
        const cookie = `coffer_session=${value}`;
        const pre = await t.request({
          method: 'POST',
          url: '/v1/auth/prelogin',
          headers: { cookie },
          body: { email: user.email },
        });
        assert.equal(pre.statusCode, 200, pre.body);
        const kdf = (pre.data as { data: { kdf_params: KdfParams } }).data.kdf_params;
        const { authKey } = derivePasswordKeys(user.password, kdf);
        const login = await t.request({
          method: 'POST',
          url: '/v1/auth/login',
          headers: { cookie },
          body: { email: user.email, auth_key: authKey },
        });
        assert.equal(login.statusCode, 200, login.body);
        const fresh = sessionCookieOf(login.headers);
        assert.ok(fresh, 'login sets a new session cookie');
        const me = await t.request({ method: 'GET', url: '/v1/me', headers: { cookie: fresh } });
        assert.equal(me.statusCode, 200, me.body);
      }
    });

    it('uses the first session cookie that decodes when several are sent', async () => {
      for (const value of MALFORMED) {
        const res = await t.request({
          method: 'GET',
          url: '/v1/me',
          headers: { cookie: `theme=dark; coffer_session=${value}; ${user.cookie}` },
        });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal((res.data as { data: { id: string } }).data.id, user.id);
      }
    });

    it('a valid but unknown session cookie is still refused', async () => {
      const res = await t.request({
        method: 'GET',
        url: '/v1/me',
        headers: { cookie: 'coffer_session=%41unknown' },
      });
      assertUnauthenticated(res);
    });
  });
}
