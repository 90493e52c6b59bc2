import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { prepareSignUp, ready } from '@coffer/sdk';
import { hashToken } from '../../src/domains/identity/credentials.js';
import { newId } from '../../src/ids.js';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { errorOf } from '../support/http.js';
import { TEST_KDF_COST, signUp, uniqueEmail, type TestUser } from '../support/users.js';
import { insertProject } from './fixtures.js';

const DAY = 24 * 60 * 60 * 1000;

/**
 * A pending invitation as the members domain stores it: an `invited` user row
 * and a `pending` member row holding the hash of the e-mailed token. Written
 * straight to the database so this test does not depend on the members routes.
 */
async function invite(
  t: TestApp,
  admin: TestUser,
  email: string,
  options: { expiresInMs?: number; status?: 'pending' | 'revoked' } = {},
) {
  const db = t.testDb.db.kysely;
  const now = t.clock.now();
  const iso = now.toISOString();
  const projectId = await insertProject(t, admin.id);
  let user = await db
    .selectFrom('users')
    .select('id')
    .where('email', '=', email)
    .executeTakeFirst();
  if (!user) {
    user = { id: newId('user') };
    await db
      .insertInto('users')
      .values({
        id: user.id,
        email,
        name: email.split('@')[0]!,
        status: 'invited',
        email_verified: 0,
        kdf_params: null,
        auth_key_hash: null,
        recovery_auth_key_hash: null,
        public_key: null,
        signing_public_key: null,
        wrapped_private_keys: null,
        recovery_wrapped_private_keys: null,
        created_at: iso,
        updated_at: iso,
      })
      .execute();
  }
  const token = randomBytes(32).toString('base64url');
  await db
    .insertInto('members')
    .values({
      id: newId('member'),
      project_id: projectId,
      user_id: user.id,
      role: 'developer',
      status: options.status ?? 'pending',
      invited_at: iso,
      invited_by: admin.id,
      invitation_token_hash: hashToken(token),
      invitation_expires_at: new Date(
        now.getTime() + (options.expiresInMs ?? 7 * DAY),
      ).toISOString(),
      joined_at: null,
      created_at: iso,
      updated_at: iso,
    })
    .execute();
  return { token, userId: user.id };
}

function signupRequest(t: TestApp, email: string, invitationToken?: string) {
  const { body } = prepareSignUp({
    email,
    name: 'Invitee',
    password: 'pw',
    kdfCost: TEST_KDF_COST,
    ...(invitationToken !== undefined ? { invitationToken } : {}),
  });
  return t.request({ method: 'POST', url: '/v1/auth/signup', body });
}

const userRow = (t: TestApp, email: string) =>
  t.testDb.db.kysely
    .selectFrom('users')
    .select(['id', 'status', 'email_verified', 'name'])
    .where('email', '=', email)
    .executeTakeFirstOrThrow();

for (const dialect of DIALECTS) {
  describe(`identity: sign-up policy invite (${dialect})`, () => {
    let t: TestApp;
    let admin: TestUser;
    before(async () => {
      await ready();
      t = await startTestApp(dialect, { env: { SIGNUP_POLICY: 'invite' } });
    });
    after(async () => t.close());

    it('the first user of an empty instance may sign up without an invitation', async () => {
      admin = await signUp(t);
      assert.match(admin.id, /^usr_/);
    });

    it('after that, sign-up without an invitation token is refused', async () => {
      const res = await signupRequest(t, uniqueEmail());
      assert.equal(res.statusCode, 403);
      assert.equal(errorOf(res).code, 'forbidden');
    });

    it('a valid invitation token lets the invitee in, keeping the invited usr_ id and verifying the e-mail', async () => {
      const email = uniqueEmail('invitee');
      const { token, userId } = await invite(t, admin, email);
      const res = await signupRequest(t, email, token);
      assert.equal(res.statusCode, 201, res.body);
      const user = (res.data as { data: { user: { id: string; email_verified: boolean } } }).data
        .user;
      assert.equal(user.id, userId);
      assert.equal(user.email_verified, true);
      assert.deepEqual(await userRow(t, email), {
        id: userId,
        status: 'active',
        email_verified: 1,
        name: 'Invitee',
      });
      const again = await signupRequest(t, email, token);
      assert.equal(again.statusCode, 409, 'the account exists now');
    });

    it('refuses an expired, revoked, unknown or someone else’s invitation token', async () => {
      const expired = uniqueEmail('late');
      const { token: expiredToken } = await invite(t, admin, expired, { expiresInMs: 1000 });
      t.clock.advance(1000);

      const revoked = uniqueEmail('revoked');
      const { token: revokedToken } = await invite(t, admin, revoked, { status: 'revoked' });

      const owner = uniqueEmail('owner');
      const { token: othersToken } = await invite(t, admin, owner);
      const thief = uniqueEmail('thief');
      await invite(t, admin, thief);

      for (const [email, token] of [
        [expired, expiredToken],
        [revoked, revokedToken],
        [thief, othersToken],
        [uniqueEmail('nobody'), randomBytes(32).toString('base64url')],
      ] as const) {
        const res = await signupRequest(t, email, token);
        assert.equal(res.statusCode, 403, `${email}: ${res.body}`);
        assert.equal(errorOf(res).code, 'forbidden');
      }
      assert.equal((await userRow(t, expired)).status, 'invited');
      assert.equal((await userRow(t, thief)).status, 'invited');
    });
  });

  describe(`identity: sign-up policy invite, empty instance (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      await ready();
      t = await startTestApp(dialect, { env: { SIGNUP_POLICY: 'invite' } });
    });
    after(async () => t.close());

    it('two first sign-ups at once: exactly one gets in', async () => {
      const answers = await Promise.all([
        signupRequest(t, uniqueEmail('first')),
        signupRequest(t, uniqueEmail('first')),
        signupRequest(t, uniqueEmail('first')),
      ]);
      assert.deepEqual(answers.map((r) => r.statusCode).sort(), [201, 403, 403]);
      const active = await t.testDb.db.kysely
        .selectFrom('users')
        .select('id')
        .where('status', '=', 'active')
        .execute();
      assert.equal(active.length, 1);
    });
  });

  describe(`identity: sign-up policy open (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      await ready();
      t = await startTestApp(dialect, { env: { SIGNUP_POLICY: 'open' } });
    });
    after(async () => t.close());

    it('anyone may sign up; an invited e-mail keeps its id but stays unverified without the token', async () => {
      const admin = await signUp(t);
      const second = await signupRequest(t, uniqueEmail());
      assert.equal(second.statusCode, 201, second.body);

      const email = uniqueEmail('invitee');
      const { userId } = await invite(t, admin, email);
      const res = await signupRequest(t, email);
      assert.equal(res.statusCode, 201, res.body);
      assert.deepEqual(await userRow(t, email), {
        id: userId,
        status: 'active',
        email_verified: 0,
        name: 'Invitee',
      });
    });

    it('an invalid invitation token is refused even when sign-up is open', async () => {
      const res = await signupRequest(t, uniqueEmail(), randomBytes(32).toString('base64url'));
      assert.equal(res.statusCode, 403);
    });
  });
}
