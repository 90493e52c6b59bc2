import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';
import type { App } from '../../src/app.js';
import { createProject } from '../support/projects.js';
import { insertBearer } from './credentials.js';
import { LogCapture } from './log-capture.js';
import { redact } from '../../src/http/logging.js';

const BEARER = 'cek_LogSecretBearer0000000000000000aaaaaa';
const COOKIE = 'LogSecretCookieValue';
const AUTH_KEY = 'LogSecretAuthKeyMaterial0000000000000000000';
const QUERY_TOKEN = 'LogSecretQueryToken';
const KEY_PART = 'LogSecretKeyPart';

/**
 * A route that logs what a careless handler might: the whole headers, the body
 * and the response headers. Redaction must hold even then.
 */
async function carelessRoutes(v1: App): Promise<void> {
  v1.post('/careless', async (request, reply) => {
    reply.header('set-cookie', `coffer_session=${COOKIE}; HttpOnly`);
    request.log.info(
      { headers: request.headers, body: request.body, response: { headers: reply.getHeaders() } },
      'careless handler',
    );
    return { data: { ok: true } };
  });
}

for (const dialect of DIALECTS) {
  describe(`structured logs (${dialect})`, () => {
    const logs = new LogCapture();
    let t: TestApp;
    let user: TestUser;
    let apiKey: string;
    const requestIds: string[] = [];
    before(async () => {
      t = await startTestApp(dialect, {
        deps: { logger: logs.options() },
        routes: carelessRoutes,
      });
      user = await signUp(t);
      apiKey = await insertBearer(t, 'api_key', (await createProject(t, user)).id, user.id);
      const sent = [
        await t.request({
          method: 'GET',
          url: '/v1/projects',
          headers: { authorization: `Bearer ${BEARER}` },
        }),
        await t.request({
          method: 'GET',
          url: '/v1/me',
          headers: { cookie: `coffer_session=${COOKIE}` },
        }),
        await t.request({ method: 'GET', url: '/v1/me', headers: { cookie: user.cookie } }),
        await t.request({
          method: 'POST',
          url: '/v1/auth/login',
          body: { email: user.email, auth_key: AUTH_KEY },
        }),
        await t.request({ method: 'GET', url: `/v1/invitations?token=${QUERY_TOKEN}&page=1` }),
        // A credential with its key part attached: refused, and the key part never logged.
        await t.request({
          method: 'GET',
          url: '/v1/projects',
          headers: { authorization: `Bearer ${BEARER}.${KEY_PART}` },
        }),
        await t.request({
          method: 'POST',
          url: '/v1/careless',
          // A valid API key, so the handler runs and logs it.
          headers: { authorization: `Bearer ${apiKey}`, cookie: user.cookie },
          body: { auth_key: AUTH_KEY, nested: { password: AUTH_KEY, token: QUERY_TOKEN } },
        }),
      ];
      for (const res of sent) requestIds.push(String(res.headers['x-request-id']));
    });
    after(async () => t.close());

    it('writes one JSON line per request, when it completes, with its request id, path, status and time', () => {
      for (const id of requestIds) {
        const mine = logs.lines.filter(
          (l) => l.reqId === id && (l.msg === 'request completed' || l.msg === 'request errored'),
        );
        assert.equal(mine.length, 1, `one access-log line for ${id}`);
        const line = mine[0]!;
        assert.equal(typeof (line.req as { url?: unknown }).url, 'string');
        assert.equal(typeof (line.req as { method?: unknown }).method, 'string');
        assert.equal(typeof (line.res as { statusCode?: unknown }).statusCode, 'number');
        assert.equal(typeof line.responseTime, 'number');
      }
      // Arrivals are logged at debug only; this capture is at info.
      assert.ok(!logs.lines.some((l) => l.msg === 'incoming request'));
    });

    it('never writes a bearer, a cookie, a session cookie, an auth key or a key part', () => {
      assert.ok(logs.lines.some((l) => l.msg === 'careless handler'));
      const sessionValue = user.cookie.split('=')[1]!;
      for (const secret of [
        BEARER,
        apiKey,
        COOKIE,
        sessionValue,
        AUTH_KEY,
        QUERY_TOKEN,
        KEY_PART,
      ]) {
        assert.ok(!logs.text.includes(secret), `${secret.slice(0, 12)}… must not be logged`);
      }
      assert.match(logs.text, /\[redacted\]/);
    });

    it('logs the path and the harmless query parameters, masking secret-looking ones', () => {
      const line = logs.lines.find(
        (l) =>
          l.msg === 'request completed' &&
          String((l.req as { url: string }).url).includes('/v1/invitations'),
      );
      assert.ok(line);
      const url = String((line.req as { url: string }).url);
      assert.match(url, /^\/v1\/invitations\?/);
      assert.match(url, /page=1/);
      assert.match(url, /token=%5Bredacted%5D/);
    });
  });
}

describe('log redaction', () => {
  it('censors secret fields at any depth, in arrays, in errors and whatever their case', () => {
    const err = Object.assign(new Error('refused'), { token: QUERY_TOKEN });
    const line = {
      err,
      items: [{ Password: AUTH_KEY, name: 'API_URL' }],
      headers: { Authorization: `Bearer ${BEARER}`, accept: 'application/json' },
    };
    const text = JSON.stringify(redact(line));
    for (const secret of [QUERY_TOKEN, AUTH_KEY, BEARER]) assert.ok(!text.includes(secret));
    assert.match(text, /"message":"refused"/);
    assert.match(text, /"name":"API_URL"/);
    assert.match(text, /"accept":"application\/json"/);
    // The caller's object is left as it was.
    assert.equal(line.headers.Authorization, `Bearer ${BEARER}`);
  });

  it('returns a line with nothing secret in it as it is, without copying', () => {
    const line = { req: { method: 'GET', url: '/v1/me' }, responseTime: 1.5 };
    assert.equal(redact(line), line);
  });
});
