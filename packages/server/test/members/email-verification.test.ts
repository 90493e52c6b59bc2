import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, uniqueEmail, type TestUser } from '../support/users.js';
import { as, dataOf, errorOf, eventually } from '../support/http.js';
import { addMember, createProject, invite } from '../support/projects.js';
import { invitationTokenIn } from './fixtures.js';
import { startSmtpServer, type TestSmtpServer } from './smtp.js';

/**
 * Under `SIGNUP_POLICY=open` nobody's address is checked at sign-up, so anyone
 * can hold an account for an address they do not own. Joining a project must
 * take a proven address: the token of the invitation e-mail, which only the
 * mailbox received. Tokens are read the way the invitee reads them: from the
 * e-mail delivered to a real SMTP server.
 */
for (const dialect of DIALECTS) {
  describe(`invitations need a proven e-mail address (${dialect})`, () => {
    let smtp: TestSmtpServer;
    let t: TestApp;
    before(async () => {
      smtp = await startSmtpServer();
      t = await startTestApp(dialect, { env: { SMTP_URL: smtp.url, OUTBOX_POLL_MS: '50' } });
    });
    after(async () => {
      await t.close();
      await smtp.close();
    });

    const tokenFromMail = (memberId: string) =>
      eventually(
        async () => invitationTokenIn(smtp.received, memberId),
        `the e-mail of ${memberId}`,
      );
    const accept = (user: TestUser, memberId: string, body?: object) =>
      as(t, user, 'POST', `/v1/invitations/${memberId}/accept`, body);
    const emailVerified = async (user: TestUser) =>
      dataOf<{ email_verified: boolean }>(await as(t, user, 'GET', '/v1/me'), 200).email_verified;
    const acceptedAudit = async (memberId: string) => {
      const event = await t.testDb.db.kysely
        .selectFrom('audit_events')
        .select('data')
        .where('action', '=', 'invitation.accepted')
        .where('target_id', '=', memberId)
        .executeTakeFirstOrThrow();
      return JSON.parse(event.data) as Record<string, unknown>;
    };
    const statusOf = async (memberId: string) =>
      (
        await t.testDb.db.kysely
          .selectFrom('members')
          .select('status')
          .where('id', '=', memberId)
          .executeTakeFirstOrThrow()
      ).status;

    it('an unverified user cannot accept without the token nor with a wrong one; the e-mailed token works and verifies them', async () => {
      const admin = await signUp(t);
      const bob = await signUp(t, { emailVerified: false });
      const project = await createProject(t, admin);
      const { id } = await invite(t, admin, project.id, bob.email, 'developer');
      const token = await tokenFromMail(id);
      // A real token, but of someone else's invitation.
      const other = await invite(t, admin, project.id, uniqueEmail('other'), 'viewer');
      const othersToken = await tokenFromMail(other.id);

      const missing = errorOf(await accept(bob, id), 403, 'forbidden');
      assert.deepEqual(missing.details, [{ field: 'token', issue: 'required' }]);
      assert.match(
        (missing as unknown as { message: string }).message,
        /e-mail address.*link from the invitation e-mail/,
      );
      assert.deepEqual(
        errorOf(await accept(bob, id, {}), 403, 'forbidden').details,
        [{ field: 'token', issue: 'required' }],
        'an empty body is no token either',
      );
      for (const wrong of [randomBytes(32).toString('base64url'), othersToken]) {
        assert.deepEqual(
          errorOf(await accept(bob, id, { token: wrong }), 403, 'forbidden').details,
          [{ field: 'token', issue: 'invalid' }],
        );
      }
      assert.deepEqual(
        errorOf(await accept(bob, id, { token, role: 'admin' }), 400, 'validation_error').details,
        [{ field: 'role', issue: 'unknown' }],
      );
      assert.equal(await statusOf(id), 'pending');
      assert.equal(await emailVerified(bob), false);
      errorOf(await as(t, bob, 'GET', `/v1/projects/${project.id}`), 404, 'not_found');

      const accepted = dataOf<{ status: string }>(await accept(bob, id, { token }), 200);
      assert.equal(accepted.status, 'active');
      assert.equal(await emailVerified(bob), true, 'the token proved the address');
      assert.equal((await acceptedAudit(id)).email_verified_by_token, true);
      dataOf(await as(t, bob, 'GET', `/v1/projects/${project.id}`), 200);

      // Verified now: the next invitation needs no token, but one that is sent must match.
      const second = await createProject(t, admin);
      const again = await invite(t, admin, second.id, bob.email, 'viewer');
      assert.deepEqual(
        errorOf(await accept(bob, again.id, { token }), 403, 'forbidden').details,
        [{ field: 'token', issue: 'invalid' }],
        'the token of the first invitation does not answer the second',
      );
      dataOf(await accept(bob, again.id), 200);
      assert.equal((await acceptedAudit(again.id)).email_verified_by_token, false);
    });

    it('the attack: someone signs up as an invited address without the link and cannot accept', async () => {
      const admin = await signUp(t);
      const project = await createProject(t, admin);
      const victim = uniqueEmail('victim');
      const { id, user } = await invite(t, admin, project.id, victim, 'developer');
      // A developer who joined properly, for comparison.
      const colleague = await addMember(t, admin, project.id, 'developer');

      // The invitation created a placeholder account; sign-up without a token fills it.
      const attacker = await signUp(t, { email: victim, emailVerified: false });
      assert.equal(attacker.id, user.id);
      const invitations = dataOf<{ id: string }[]>(
        await as(t, attacker, 'GET', '/v1/invitations'),
        200,
      );
      assert.deepEqual(
        invitations.map((i) => i.id),
        [id],
      );
      assert.deepEqual(errorOf(await accept(attacker, id), 403, 'forbidden').details, [
        { field: 'token', issue: 'required' },
      ]);
      const guessed = randomBytes(32).toString('base64url');
      assert.deepEqual(
        errorOf(await accept(attacker, id, { token: guessed }), 403, 'forbidden').details,
        [{ field: 'token', issue: 'invalid' }],
      );
      assert.equal(await statusOf(id), 'pending');
      for (const url of [
        `/v1/projects/${project.id}`,
        `/v1/projects/${project.id}/members`,
        `/v1/projects/${project.id}/environments`,
      ]) {
        errorOf(await as(t, attacker, 'GET', url), 404, 'not_found');
      }
      // Active members are who the vault's "awaiting a grant" list is drawn from.
      const active = dataOf<{ user: { id: string } }[]>(
        await as(t, admin, 'GET', `/v1/projects/${project.id}/members?status=active`),
        200,
      );
      assert.deepEqual(
        active.map((m) => m.user.id).sort(),
        [admin.id, colleague.user.id].sort(),
        'the attacker is not an active member',
      );
      // Declining needs no token: it harms no one.
      const declined = await as(t, attacker, 'POST', `/v1/invitations/${id}/decline`);
      assert.equal(declined.statusCode, 204);
      assert.equal(await statusOf(id), 'revoked');
    });

    it('the attack with an account registered before the invitation: still no token, no membership', async () => {
      const admin = await signUp(t);
      const project = await createProject(t, admin);
      const victim = uniqueEmail('early');
      const squatter = await signUp(t, { email: victim, emailVerified: false });
      const { id, user } = await invite(t, admin, project.id, victim, 'admin');
      assert.equal(user.id, squatter.id);
      assert.ok(await tokenFromMail(id), 'the token went to the mailbox, not to the account');
      errorOf(await accept(squatter, id), 403, 'forbidden');
      errorOf(
        await accept(squatter, id, { token: randomBytes(32).toString('base64url') }),
        403,
        'forbidden',
      );
      assert.equal(await statusOf(id), 'pending');
      assert.equal(await emailVerified(squatter), false);
    });

    it('a user who signed up with the invitation link accepts without sending the token', async () => {
      const admin = await signUp(t);
      const project = await createProject(t, admin);
      const email = uniqueEmail('linked');
      const { id } = await invite(t, admin, project.id, email, 'viewer');
      const newcomer = await signUp(t, {
        email,
        invitationToken: await tokenFromMail(id),
        emailVerified: false,
      });
      assert.equal(await emailVerified(newcomer), true, 'sign-up with the link proved the address');
      dataOf(await accept(newcomer, id), 200);
      assert.equal((await acceptedAudit(id)).email_verified_by_token, false);
    });
  });
}
