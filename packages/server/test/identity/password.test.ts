import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  derivePasswordKeys,
  deriveRecoveryKeys,
  generateKdfParams,
  parseRecoveryKey,
  ready,
  unwrapPrivateKeys,
  wrapPrivateKeys,
  type KdfParams,
  type UserKeys,
} from '@coffer/sdk';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { errorOf } from '../support/http.js';
import { TEST_KDF_COST, logIn, signUp, uniqueEmail, type TestUser } from '../support/users.js';

/** What a client sends to store a new password: parameters, auth key, re-wrapped keys. */
function newPasswordMaterial(keys: UserKeys, password: string) {
  const kdf_params = generateKdfParams(TEST_KDF_COST);
  const { authKey, wrapKey } = derivePasswordKeys(password, kdf_params);
  return {
    kdf_params,
    auth_key: authKey,
    wrapped_private_keys: wrapPrivateKeys(keys, wrapKey, 'password'),
  };
}

for (const dialect of DIALECTS) {
  describe(`identity: password change and recovery (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      await ready();
      t = await startTestApp(dialect);
    });
    after(async () => t.close());

    const me = (cookie: string) => t.request({ method: 'GET', url: '/v1/me', headers: { cookie } });

    async function currentAuthKey(user: TestUser, password = user.password) {
      const keysRes = await t.request({
        method: 'GET',
        url: '/v1/me/keys',
        headers: { cookie: user.cookie },
      });
      assert.equal(keysRes.statusCode, 200, keysRes.body);
      const params = (keysRes.data as { data: { kdf_params: KdfParams } }).data.kdf_params;
      return derivePasswordKeys(password, params).authKey;
    }

    it('re-wraps the keys: the old password stops working, the new one unwraps the same keys', async () => {
      const user = await signUp(t);
      const phone = await logIn(t, user.email, user.password);
      const res = await t.request({
        method: 'PUT',
        url: '/v1/me/password',
        headers: user.headers,
        body: {
          current_auth_key: await currentAuthKey(user),
          ...newPasswordMaterial(user.keys, 'the new password'),
        },
      });
      assert.equal(res.statusCode, 204, res.body);

      assert.equal((await me(user.cookie)).statusCode, 200, 'the current session stays');
      assert.equal((await me(phone.cookie!)).statusCode, 401, 'other sessions end');

      const old = await logIn(t, user.email, user.password);
      assert.equal(old.res.statusCode, 401);
      const fresh = await logIn(t, user.email, 'the new password');
      assert.equal(fresh.res.statusCode, 200, fresh.res.body);
      const wrapped = (fresh.res.data as { data: { wrapped_private_keys: string } }).data
        .wrapped_private_keys;
      const keys = unwrapPrivateKeys(wrapped, fresh.wrapKey, 'password');
      assert.deepEqual(keys.encryption.secretKey, user.keys.encryption.secretKey);
      assert.deepEqual(keys.signing.secretKey, user.keys.signing.secretKey);

      const audit = await t.testDb.db.kysely
        .selectFrom('audit_events')
        .select(['action', 'actor_id', 'data'])
        .where('target_id', '=', user.id)
        .where('action', '=', 'user.password_changed')
        .execute();
      assert.equal(audit.length, 1);
      assert.equal(audit[0]!.actor_id, user.id);
      assert.deepEqual(JSON.parse(audit[0]!.data), { sessions_ended: 1 });
    });

    it('refuses a wrong current password and changes nothing', async () => {
      const user = await signUp(t);
      const res = await t.request({
        method: 'PUT',
        url: '/v1/me/password',
        headers: user.headers,
        body: {
          current_auth_key: await currentAuthKey(user, 'a guess'),
          ...newPasswordMaterial(user.keys, 'attacker password'),
        },
      });
      assert.equal(res.statusCode, 403);
      assert.equal(errorOf(res).code, 'forbidden');
      assert.equal((await logIn(t, user.email, user.password)).res.statusCode, 200);
      assert.equal((await logIn(t, user.email, 'attacker password')).res.statusCode, 401);
    });

    it('needs a matching Origin like every cookie-authenticated change', async () => {
      const user = await signUp(t);
      const res = await t.request({
        method: 'PUT',
        url: '/v1/me/password',
        headers: { cookie: user.cookie },
        body: {
          current_auth_key: await currentAuthKey(user),
          ...newPasswordMaterial(user.keys, 'x'),
        },
      });
      assert.equal(res.statusCode, 403);
      assert.equal((await logIn(t, user.email, user.password)).res.statusCode, 200);
    });

    it('the recovery key restores access after a forgotten password', async () => {
      const user = await signUp(t);
      const recovery = deriveRecoveryKeys(parseRecoveryKey(user.recoveryKey));

      const keysRes = await t.request({
        method: 'POST',
        url: '/v1/auth/recovery/keys',
        body: { email: user.email, recovery_auth_key: recovery.authKey },
      });
      assert.equal(keysRes.statusCode, 200, keysRes.body);
      const blob = (keysRes.data as { data: { recovery_wrapped_private_keys: string } }).data
        .recovery_wrapped_private_keys;
      const keys = unwrapPrivateKeys(blob, recovery.wrapKey, 'recovery');
      assert.deepEqual(keys.encryption.secretKey, user.keys.encryption.secretKey);

      const reset = await t.request({
        method: 'POST',
        url: '/v1/auth/recovery/reset',
        body: {
          email: user.email,
          recovery_auth_key: recovery.authKey,
          ...newPasswordMaterial(keys, 'remembered this time'),
        },
      });
      assert.equal(reset.statusCode, 204, reset.body);

      assert.equal((await me(user.cookie)).statusCode, 401, 'every session ends');
      assert.equal((await logIn(t, user.email, user.password)).res.statusCode, 401);
      const fresh = await logIn(t, user.email, 'remembered this time');
      assert.equal(fresh.res.statusCode, 200, fresh.res.body);
      const wrapped = (fresh.res.data as { data: { wrapped_private_keys: string } }).data
        .wrapped_private_keys;
      assert.deepEqual(
        unwrapPrivateKeys(wrapped, fresh.wrapKey, 'password').signing.secretKey,
        user.keys.signing.secretKey,
      );

      const audit = await t.testDb.db.kysely
        .selectFrom('audit_events')
        .select(['action', 'target_type', 'data'])
        .where('target_id', '=', user.id)
        .where('action', '=', 'user.password_recovered')
        .execute();
      assert.deepEqual(
        audit.map((a) => [a.action, a.target_type, JSON.parse(a.data)]),
        [['user.password_recovered', 'user', { sessions_ended: 1 }]],
      );
    });

    it('a wrong recovery key and an unknown e-mail get identical answers, and nothing changes', async () => {
      const user = await signUp(t);
      const someoneElse = await signUp(t);
      const wrongKey = deriveRecoveryKeys(parseRecoveryKey(someoneElse.recoveryKey)).authKey;
      const answers: TestResponse[] = [];
      for (const email of [user.email, uniqueEmail('nobody')]) {
        answers.push(
          await t.request({
            method: 'POST',
            url: '/v1/auth/recovery/keys',
            body: { email, recovery_auth_key: wrongKey },
          }),
        );
        answers.push(
          await t.request({
            method: 'POST',
            url: '/v1/auth/recovery/reset',
            body: {
              email,
              recovery_auth_key: wrongKey,
              ...newPasswordMaterial(someoneElse.keys, 'hijacked'),
            },
          }),
        );
      }
      for (const res of answers) {
        assert.equal(res.statusCode, 401);
        assert.deepEqual(
          { ...errorOf(res), request_id: null },
          { ...errorOf(answers[0]!), request_id: null },
        );
      }
      assert.equal((await logIn(t, user.email, user.password)).res.statusCode, 200);
      assert.equal((await me(user.cookie)).statusCode, 200);
    });
  });
}
