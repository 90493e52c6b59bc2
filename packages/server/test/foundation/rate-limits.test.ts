import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';
import { createProject } from '../support/projects.js';
import { insertBearer } from './credentials.js';

interface Budget {
  limit: number;
  remaining: number;
  reset: number;
}

function budgetOf(res: TestResponse): Budget {
  const read = (name: string) => {
    const value = String(res.headers[name]);
    assert.match(value, /^\d+$/, `${name} on ${res.statusCode} ${res.body}`);
    return Number(value);
  };
  return {
    limit: read('x-ratelimit-limit'),
    remaining: read('x-ratelimit-remaining'),
    reset: read('x-ratelimit-reset'),
  };
}

const errorCode = (res: TestResponse) => (res.data as { error?: { code: string } }).error?.code;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

// Unset values fall back to the built-in defaults (the test app raises them otherwise).
const DEFAULT_LIMITS = {
  RATE_LIMIT_SESSION: '',
  RATE_LIMIT_API_KEY: '',
  RATE_LIMIT_CI_TOKEN: '',
  RATE_LIMIT_ANONYMOUS: '',
  RATE_LIMIT_AUTH: '',
};

for (const dialect of DIALECTS) {
  describe(`rate limits (${dialect})`, () => {
    describe('budgets per credential kind, with the defaults of Form A', () => {
      let t: TestApp;
      let user: TestUser;
      let apiKey: string;
      let ciToken: string;
      before(async () => {
        // Users are created with high limits; the budgets under test start afterwards.
        t = await startTestApp(dialect, { env: DEFAULT_LIMITS });
        user = await signUp(t);
        const projectId = (await createProject(t, user)).id;
        apiKey = await insertBearer(t, 'api_key', projectId, user.id);
        ciToken = await insertBearer(t, 'ci_token', projectId, user.id);
        t.clock.advance(60_000);
      });
      after(async () => t.close());

      it('session 100, API key 500, CI token 200, anonymous 100 per IP, auth 10 per IP', async () => {
        const cases: [string, Record<string, string>, string, string, number][] = [
          ['session', { cookie: user.cookie }, 'GET', '/v1/projects', 100],
          ['API key', bearer(apiKey), 'GET', '/v1/projects', 500],
          ['CI token', bearer(ciToken), 'GET', '/v1/projects', 200],
          ['anonymous', {}, 'GET', '/v1/projects', 100],
          ['auth route', {}, 'POST', '/v1/auth/prelogin', 10],
        ];
        for (const [kind, headers, method, url, limit] of cases) {
          const res = await t.request({
            method: method as 'GET' | 'POST',
            url,
            headers,
            ...(method === 'POST' ? { body: { email: 'someone@example.test' } } : {}),
          });
          const budget = budgetOf(res);
          assert.equal(budget.limit, limit, kind);
          assert.equal(budget.remaining, limit - 1, kind);
        }
      });

      it('X-RateLimit-Reset is the Unix second the current minute window ends', async () => {
        const res = await t.request({ method: 'GET', url: '/v1/projects', headers: user.headers });
        const now = t.clock.now().getTime() / 1000;
        const { reset } = budgetOf(res);
        assert.ok(reset > now && reset <= now + 60, `${reset} within a minute of ${now}`);
        assert.equal(reset % 60, 0);
      });
    });

    describe('exhausting a budget', () => {
      let setup: TestApp;
      let t: TestApp;
      let alice: TestUser;
      let bob: TestUser;
      let keyA: string;
      let keyB: string;
      let ciToken: string;
      before(async () => {
        setup = await startTestApp(dialect);
        alice = await signUp(setup);
        bob = await signUp(setup);
        const projectId = (await createProject(setup, alice)).id;
        keyA = await insertBearer(setup, 'api_key', projectId, alice.id);
        keyB = await insertBearer(setup, 'api_key', projectId, alice.id);
        ciToken = await insertBearer(setup, 'ci_token', projectId, alice.id);
        // The same database behind a second app with low limits.
        t = await startTestApp(dialect, {
          testDb: setup.testDb,
          clock: setup.clock,
          env: {
            RATE_LIMIT_SESSION: '3',
            RATE_LIMIT_API_KEY: '4',
            RATE_LIMIT_CI_TOKEN: '2',
            RATE_LIMIT_ANONYMOUS: '5',
            RATE_LIMIT_AUTH: '2',
          },
        });
      });
      after(async () => {
        await t.close();
        await setup.close();
      });

      async function spend(n: number, headers: Record<string, string>, url = '/v1/projects') {
        const out: TestResponse[] = [];
        for (let i = 0; i < n; i++) out.push(await t.request({ method: 'GET', url, headers }));
        return out;
      }

      it('counts down, then answers 429 rate_limited with Retry-After; other budgets are untouched', async () => {
        const responses = await spend(4, { cookie: alice.cookie });
        assert.deepEqual(
          responses.map((r) => [r.statusCode, budgetOf(r).remaining]),
          [
            [200, 2],
            [200, 1],
            [200, 0],
            [429, 0],
          ],
        );
        const refused = responses[3]!;
        assert.equal(errorCode(refused), 'rate_limited');
        const retryAfter = Number(refused.headers['retry-after']);
        const now = t.clock.now().getTime() / 1000;
        assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
        assert.equal(retryAfter, Math.max(1, Math.ceil(budgetOf(refused).reset - now)));

        // Another user, the API key, the CI token and anonymous callers keep their own budgets.
        assert.equal((await spend(1, { cookie: bob.cookie }))[0]!.statusCode, 200);
        assert.equal((await spend(1, bearer(keyA)))[0]!.statusCode, 200);
        assert.equal((await spend(1, bearer(ciToken)))[0]!.statusCode, 200);
        const anonymous = (await spend(1, {}))[0]!;
        assert.equal(anonymous.statusCode, 401, 'no credential: the anonymous budget, untouched');
        assert.deepEqual([budgetOf(anonymous).limit, budgetOf(anonymous).remaining], [5, 4]);
      });

      it('each API key has its own budget', async () => {
        const a = await spend(4, bearer(keyA));
        assert.equal(a.at(-1)!.statusCode, 429, 'the fifth request of key A');
        const b = await spend(1, bearer(keyB));
        assert.equal(b[0]!.statusCode, 200);
        assert.equal(budgetOf(b[0]!).limit, 4);
      });

      it('a CI token is refused past its budget', async () => {
        const res = await spend(2, bearer(ciToken));
        assert.equal(res[1]!.statusCode, 429);
        assert.equal(budgetOf(res[1]!).limit, 2);
      });

      it('auth routes have a per-IP budget of their own', async () => {
        const prelogin = (remoteAddress: string) =>
          t.request({
            method: 'POST',
            url: '/v1/auth/prelogin',
            remoteAddress,
            body: { email: 'someone@example.test' },
          });
        assert.equal((await prelogin('192.0.2.1')).statusCode, 200);
        assert.equal((await prelogin('192.0.2.1')).statusCode, 200);
        const third = await prelogin('192.0.2.1');
        assert.equal(third.statusCode, 429);
        assert.equal(errorCode(third), 'rate_limited');
        assert.equal(budgetOf(third).limit, 2);
        // Another address, and the same address on a non-auth route, still pass.
        assert.equal((await prelogin('192.0.2.2')).statusCode, 200);
        const other = await t.request({
          method: 'GET',
          url: '/v1/projects',
          remoteAddress: '192.0.2.1',
        });
        assert.equal(budgetOf(other).limit, 5);
        assert.notEqual(other.statusCode, 429);
      });

      it('a refused credential (401) carries the headers and spends the IP budget', async () => {
        const remoteAddress = '198.51.100.7';
        const statuses: number[] = [];
        for (let i = 0; i < 6; i++) {
          const res = await t.request({
            method: 'GET',
            url: '/v1/projects',
            remoteAddress,
            headers: bearer('cek_guessing_a_key_000000000000000000'),
          });
          budgetOf(res);
          statuses.push(res.statusCode);
        }
        assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
      });

      it('the window resets after a minute (TestClock)', async () => {
        assert.equal((await spend(1, { cookie: alice.cookie }))[0]!.statusCode, 429);
        const reset = budgetOf((await spend(1, { cookie: alice.cookie }))[0]!).reset;
        t.clock.advance(reset * 1000 - t.clock.now().getTime());
        const [res] = await spend(1, { cookie: alice.cookie });
        assert.equal(res!.statusCode, 200);
        assert.equal(budgetOf(res!).remaining, 2);
        assert.equal(budgetOf(res!).reset, reset + 60);
      });
    });

    describe('headers on every response', () => {
      let t: TestApp;
      let user: TestUser;
      before(async () => {
        t = await startTestApp(dialect, { env: { BODY_LIMIT_BYTES: '8192' } });
        user = await signUp(t);
      });
      after(async () => t.close());

      it('2xx, 400, 401, 403, 404, 405, 413, 415 all carry X-RateLimit-*', async () => {
        const json = { 'content-type': 'application/json' };
        const cases: [number, Parameters<TestApp['request']>[0]][] = [
          [200, { method: 'GET', url: '/v1/projects', headers: { cookie: user.cookie } }],
          [
            201,
            { method: 'POST', url: '/v1/projects', headers: user.headers, body: { name: 'x' } },
          ],
          [400, { method: 'POST', url: '/v1/auth/prelogin', payload: '{nope', headers: json }],
          [400, { method: 'POST', url: '/v1/auth/prelogin', body: { email: 42 } }],
          [401, { method: 'GET', url: '/v1/me' }],
          [401, { method: 'GET', url: '/v1/projects', headers: bearer('ci_not_a_token') }],
          // A cookie-authenticated change without Origin (CSRF guard).
          [
            403,
            {
              method: 'POST',
              url: '/v1/projects',
              headers: { cookie: user.cookie },
              body: { name: 'x' },
            },
          ],
          [404, { method: 'GET', url: '/v1/nope' }],
          [405, { method: 'PUT', url: '/v1/projects', headers: user.headers }],
          [
            413,
            {
              method: 'POST',
              url: '/v1/auth/prelogin',
              payload: JSON.stringify({ email: 'x'.repeat(9000) }),
              headers: json,
            },
          ],
          [
            415,
            {
              method: 'POST',
              url: '/v1/auth/prelogin',
              payload: 'email=a',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
            },
          ],
        ];
        for (const [status, request] of cases) {
          const res = await t.request(request);
          assert.equal(res.statusCode, status, `${request.method} ${request.url}: ${res.body}`);
          budgetOf(res);
        }
      });
    });
  });
}
