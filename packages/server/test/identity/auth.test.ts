import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  DEFAULT_KDF_PARAMS,
  KDF_SALT_PATTERN,
  derivePasswordKeys,
  prepareSignUp,
  ready,
  toBase64url,
  unwrapPrivateKeys,
  type KdfParams,
} from '@coffer/sdk';
import { buildApp } from '../../src/app.js';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { dataOf, errorOf } from '../support/http.js';
import {
  TEST_KDF_COST,
  logIn,
  originOf,
  sessionCookieOf,
  signUp,
  uniqueEmail,
  type TestUser,
} from '../support/users.js';

const prelogin = async (t: TestApp, email: string) => {
  const res = await t.request({ method: 'POST', url: '/v1/auth/prelogin', body: { email } });
  assert.equal(res.statusCode, 200, res.body);
  return dataOf<{ kdf_params: KdfParams }>(res).kdf_params;
};

for (const dialect of DIALECTS) {
  describe(`identity: sign-up, login, logout (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      await ready();
      t = await startTestApp(dialect);
    });
    after(async () => t.close());

    it('sign-up → login → GET /me with the cookie → logout → the cookie is refused', async () => {
      const email = uniqueEmail();
      const { body, keys } = prepareSignUp({
        email,
        name: 'Ada Lovelace',
        password: 'correct horse battery staple',
        kdfCost: TEST_KDF_COST,
      });
      const signup = await t.request({ method: 'POST', url: '/v1/auth/signup', body });
      assert.equal(signup.statusCode, 201, signup.body);
      const user = dataOf<{ user: { id: string; email: string; name: string } }>(signup).user;
      assert.match(user.id, /^usr_[0-9A-Za-z]{20}$/);
      assert.equal(user.email, email);
      assert.equal(sessionCookieOf(signup.headers), undefined, 'sign-up does not log in');

      const { res: login, wrapKey } = await logIn(t, email, 'correct horse battery staple');
      assert.equal(login.statusCode, 200, login.body);
      const cookieHeader = String(login.headers['set-cookie']);
      assert.match(cookieHeader, /^coffer_session=[A-Za-z0-9_-]{43};/);
      for (const attribute of [
        'HttpOnly',
        'Secure',
        'SameSite=Strict',
        'Path=/',
        'Max-Age=2592000',
      ])
        assert.ok(cookieHeader.includes(attribute), `cookie has ${attribute}`);
      const result = dataOf<{ user: { id: string }; wrapped_private_keys: string }>(login);
      assert.equal(result.user.id, user.id);
      const unwrapped = unwrapPrivateKeys(result.wrapped_private_keys, wrapKey, 'password');
      assert.deepEqual(unwrapped.encryption.secretKey, keys.encryption.secretKey);
      assert.deepEqual(unwrapped.signing.secretKey, keys.signing.secretKey);

      const cookie = sessionCookieOf(login.headers)!;
      const me = await t.request({ method: 'GET', url: '/v1/me', headers: { cookie } });
      assert.equal(me.statusCode, 200, me.body);
      assert.deepEqual(dataOf(me), {
        id: user.id,
        email,
        name: 'Ada Lovelace',
        email_verified: false,
        public_key: toBase64url(keys.encryption.publicKey),
        signing_public_key: toBase64url(keys.signing.publicKey),
        created_at: dataOf<{ created_at: string }>(me).created_at,
      });

      const logout = await t.request({
        method: 'POST',
        url: '/v1/auth/logout',
        headers: { cookie, origin: originOf(t) },
      });
      assert.equal(logout.statusCode, 204);
      assert.equal(logout.body, '');
      assert.match(String(logout.headers['set-cookie']), /^coffer_session=;.*Max-Age=0/);

      const after = await t.request({ method: 'GET', url: '/v1/me', headers: { cookie } });
      assert.equal(after.statusCode, 401);
      assert.equal(errorOf(after).code, 'unauthenticated');
      const rows = await t.testDb.db.kysely
        .selectFrom('sessions')
        .select('id')
        .where('user_id', '=', user.id)
        .execute();
      assert.deepEqual(rows, [], 'the session row is gone');
    });

    it('a wrong password and an unknown e-mail get identical answers', async () => {
      const user = await signUp(t);
      const wrong = await logIn(t, user.email, 'not the password');
      const unknown = await logIn(t, uniqueEmail('nobody'), 'not the password');
      for (const { res } of [wrong, unknown]) {
        assert.equal(res.statusCode, 401);
        assert.equal(res.headers['set-cookie'], undefined);
      }
      assert.deepEqual(
        { ...errorOf(wrong.res), request_id: null },
        { ...errorOf(unknown.res), request_id: null },
      );
      assert.equal(errorOf(wrong.res).code, 'unauthenticated');
    });

    it('prelogin returns the real parameters for a user, stable fake ones for an unknown e-mail', async () => {
      const user = await signUp(t);
      const real = await prelogin(t, user.email);
      assert.equal(real.ops_limit, TEST_KDF_COST.ops_limit);
      assert.equal(real.mem_limit_kib, TEST_KDF_COST.mem_limit_kib);

      const email = uniqueEmail('ghost');
      const fake = await prelogin(t, email);
      assert.deepEqual(Object.keys(fake).sort(), Object.keys(real).sort());
      assert.equal(fake.algorithm, 'argon2id');
      assert.equal(fake.ops_limit, DEFAULT_KDF_PARAMS.ops_limit);
      assert.equal(fake.mem_limit_kib, DEFAULT_KDF_PARAMS.mem_limit_kib);
      assert.match(fake.salt, KDF_SALT_PATTERN);
      assert.deepEqual(await prelogin(t, email), fake, 'stable across calls');
      assert.deepEqual(await prelogin(t, `  ${email.toUpperCase()} `), fake, 'after normalising');
      assert.notEqual((await prelogin(t, uniqueEmail('ghost'))).salt, fake.salt);

      // Another server instance on the same database gives the same answer.
      const other = await buildApp({ config: t.config, db: t.testDb.db, clock: t.clock });
      try {
        const res = await other.inject({
          method: 'POST',
          url: '/v1/auth/prelogin',
          payload: { email },
        });
        assert.deepEqual(JSON.parse(res.body).data.kdf_params, fake);
      } finally {
        await other.close();
      }
    });

    it('the fake salt does not come from the e-mail alone: another database gives another salt', async () => {
      const email = uniqueEmail('ghost');
      const here = await prelogin(t, email);
      const elsewhere = await startTestApp(dialect);
      try {
        assert.notEqual((await prelogin(elsewhere, email)).salt, here.salt);
      } finally {
        await elsewhere.close();
      }
    });

    it('e-mails are trimmed and lower-cased; a second account for the same e-mail is a 409', async () => {
      const email = uniqueEmail();
      const first = prepareSignUp({
        email: `  ${email.toUpperCase()}  `,
        name: '  Grace  ',
        password: 'pw',
        kdfCost: TEST_KDF_COST,
      });
      const created = await t.request({ method: 'POST', url: '/v1/auth/signup', body: first.body });
      assert.equal(created.statusCode, 201, created.body);
      const user = dataOf<{ user: { email: string; name: string } }>(created).user;
      assert.equal(user.email, email);
      assert.equal(user.name, 'Grace');

      const again = prepareSignUp({
        email,
        name: 'Other',
        password: 'pw2',
        kdfCost: TEST_KDF_COST,
      });
      const dup = await t.request({ method: 'POST', url: '/v1/auth/signup', body: again.body });
      assert.equal(dup.statusCode, 409);
      assert.equal(errorOf(dup).code, 'already_exists');

      // Logging in with a differently-cased e-mail works.
      const { res } = await logIn(t, email.toUpperCase(), 'pw');
      assert.equal(res.statusCode, 200, res.body);
    });

    it('validates every field of sign-up and rejects unknown ones', async () => {
      const { body } = prepareSignUp({
        email: uniqueEmail(),
        name: 'N',
        password: 'pw',
        kdfCost: TEST_KDF_COST,
      });
      const cases: [Record<string, unknown>, string, string][] = [
        [{ ...body, is_admin: true }, 'is_admin', 'unknown'],
        [{ ...body, email: 'not-an-email' }, 'email', 'invalid'],
        [{ ...body, name: '' }, 'name', 'too_short'],
        [{ ...body, name: '   ' }, 'name', 'too_short'],
        [{ ...body, name: 'x'.repeat(101) }, 'name', 'too_long'],
        [{ ...body, public_key: 'short' }, 'public_key', 'invalid'],
        [{ ...body, auth_key: undefined }, 'auth_key', 'required'],
        [{ ...body, wrapped_private_keys: 'v1.abc.def' }, 'wrapped_private_keys', 'invalid'],
        [
          { ...body, kdf_params: { ...body.kdf_params, algorithm: 'scrypt' } },
          'kdf_params.algorithm',
          'invalid',
        ],
        [{ ...body, kdf_params: { ...body.kdf_params, extra: 1 } }, 'kdf_params.extra', 'unknown'],
        [
          { ...body, kdf_params: { ...body.kdf_params, ops_limit: 99 } },
          'kdf_params.ops_limit',
          'maximum',
        ],
      ];
      for (const [payload, field, issue] of cases) {
        const res = await t.request({ method: 'POST', url: '/v1/auth/signup', body: payload });
        assert.equal(res.statusCode, 400, `${field}: ${res.body}`);
        const error = errorOf(res);
        assert.equal(error.code, 'validation_error');
        assert.ok(
          error.details?.some((d) => d.field === field && d.issue === issue),
          `${field}/${issue} in ${JSON.stringify(error.details)}`,
        );
      }
      const login = await t.request({
        method: 'POST',
        url: '/v1/auth/login',
        body: { email: uniqueEmail(), auth_key: body.auth_key, password: 'plain' },
      });
      assert.equal(login.statusCode, 400);
      assert.deepEqual(errorOf(login).details, [{ field: 'password', issue: 'unknown' }]);
    });

    it('a stale session cookie does not block logging in again', async () => {
      const user = await signUp(t);
      await t.request({ method: 'POST', url: '/v1/auth/logout', headers: user.headers });
      const { res } = await logIn(t, user.email, user.password);
      assert.equal(res.statusCode, 200, res.body);
      const withStale = await t.request({
        method: 'POST',
        url: '/v1/auth/login',
        headers: { cookie: user.cookie },
        body: {
          email: user.email,
          auth_key: derivePasswordKeys(user.password, await prelogin(t, user.email)).authKey,
        },
      });
      assert.equal(withStale.statusCode, 200, withStale.body);
    });

    it('a bearer with its key part attached is refused with 401', async () => {
      const res = await t.request({
        method: 'GET',
        url: '/v1/me',
        headers: {
          authorization: 'Bearer cek_0123456789abcdefghijABCDEFGHIJ012345.c2VjcmV0LWtleS1wYXJ0',
        },
      });
      assert.equal(res.statusCode, 401);
      assert.equal(errorOf(res).code, 'unauthenticated');
      assert.doesNotMatch(res.body, /c2VjcmV0/, 'the key part is not echoed');
    });

    it('a cookie-authenticated change without a matching Origin is refused', async () => {
      const user: TestUser = await signUp(t);
      const other = await signUp(t);
      for (const headers of [
        { cookie: user.cookie },
        { cookie: user.cookie, origin: 'https://evil.example' },
      ]) {
        const res = await t.request({
          method: 'DELETE',
          url: `/v1/me/sessions/${other.sessionId}`,
          headers,
        });
        assert.equal(res.statusCode, 403, res.body);
        assert.equal(errorOf(res).code, 'forbidden');
      }
      // Reads need no Origin; the session still works.
      const me = await t.request({
        method: 'GET',
        url: '/v1/me',
        headers: { cookie: user.cookie },
      });
      assert.equal(me.statusCode, 200);
    });

    it('GET /me without a credential is a 401', async () => {
      const res = await t.request({ method: 'GET', url: '/v1/me' });
      assert.equal(res.statusCode, 401);
      assert.equal(errorOf(res).code, 'unauthenticated');
    });
  });

  describe(`identity: KDF floor (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      await ready();
      // The production defaults: OWASP's Argon2id floor.
      t = await startTestApp(dialect, { env: { KDF_MIN_OPS: '2', KDF_MIN_MEM_KIB: '19456' } });
    });
    after(async () => t.close());

    it('refuses sign-up with Argon2id parameters below the configured minimum', async () => {
      const { body } = prepareSignUp({
        email: uniqueEmail(),
        name: 'Weak',
        password: 'pw',
        kdfCost: { ops_limit: 1, mem_limit_kib: 8192 },
      });
      const res = await t.request({ method: 'POST', url: '/v1/auth/signup', body });
      assert.equal(res.statusCode, 400);
      const error = errorOf(res);
      assert.equal(error.code, 'validation_error');
      assert.deepEqual(
        error.details?.map((d) => [d.field, d.issue]),
        [
          ['kdf_params.ops_limit', 'minimum'],
          ['kdf_params.mem_limit_kib', 'minimum'],
        ],
      );
    });
  });
}
