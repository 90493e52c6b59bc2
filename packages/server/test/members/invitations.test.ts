import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashToken } from '../../src/domains/identity/credentials.js';
import { expireLapsedInvitations } from '../../src/domains/members/invitations/invitation-expiry.js';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, uniqueEmail } from '../support/users.js';
import { as, dataOf, errorOf, eventually } from '../support/http.js';
import { addMember, createProject, invite } from '../support/projects.js';
import {
  assertKeys,
  assertRejectedQueries,
  assertSortOrders,
  createApiKey,
  invitationTokenIn,
  ISO_MS,
} from './fixtures.js';
import { startSmtpServer, type TestSmtpServer } from './smtp.js';

const DAY = 86_400_000;
const INVITATION_KEYS = ['id', 'project', 'role', 'invited_at', 'invited_by', 'expires_at'];
const ACCEPTED_KEYS = ['id', 'project_id', 'user', 'role', 'status', 'joined_at'];

for (const dialect of DIALECTS) {
  describe(`invitations (${dialect})`, () => {
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

    const mailTo = (email: string) =>
      eventually(async () => smtp.received.find((m) => m.to.includes(email)), `mail to ${email}`);
    const db = () => t.testDb.db.kysely;

    it('a new address gets an e-mail over SMTP whose link signs them up; accepting makes them active', async () => {
      const admin = await signUp(t, { name: 'Ada Admin' });
      const project = await createProject(t, admin, 'Launchpad');
      const typed = `New.Comer-${Date.now()}@Example.TEST`;
      const email = typed.toLowerCase();

      const invited = dataOf<Record<string, unknown>>(
        await as(t, admin, 'POST', `/v1/projects/${project.id}/members`, {
          email: typed,
          role: 'developer',
        }),
        201,
      );
      assertKeys(invited, [
        'id',
        'project_id',
        'user',
        'role',
        'status',
        'invited_at',
        'invited_by',
      ]);
      const user = invited.user as { id: string; email: string; name: string };
      assertKeys(user, ['id', 'email', 'name'], 'user');
      assert.match(user.id, /^usr_[0-9A-Za-z]{20}$/);
      assert.deepEqual(
        { email: user.email, name: user.name },
        { email, name: email.split('@')[0] },
      );
      assert.equal(invited.status, 'pending');
      assert.equal(invited.role, 'developer');
      assert.equal(invited.project_id, project.id);
      assert.equal(invited.invited_by, admin.id);
      assert.match(String(invited.invited_at), ISO_MS);

      const stored = await db()
        .selectFrom('members')
        .selectAll()
        .where('id', '=', String(invited.id))
        .executeTakeFirstOrThrow();
      assert.ok(stored.invitation_token_hash, 'a token is stored (hashed)');
      assert.equal(
        Date.parse(stored.invitation_expires_at!) - Date.parse(String(invited.invited_at)),
        7 * DAY,
      );
      const account = await db()
        .selectFrom('users')
        .select(['status', 'email'])
        .where('id', '=', user.id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(account, { status: 'invited', email });

      const mail = await mailTo(email);
      assert.match(mail.subject, /Launchpad/);
      assert.match(mail.text, /Ada Admin/);
      const link = /(https:\/\/\S+\/invite\?token=([A-Za-z0-9_-]{43}))/.exec(mail.text);
      assert.ok(link, `the e-mail carries an invitation link: ${mail.text}`);
      assert.ok(link[1]!.startsWith(`${t.config.publicUrl}/invite?token=`));
      const token = link[2]!;
      assert.ok(
        mail.text.includes(`coffer invitations accept ${String(invited.id)}`),
        'the e-mail names the invitation',
      );
      assert.equal(hashToken(token), stored.invitation_token_hash);

      const newcomer = await signUp(t, { email, invitationToken: token });
      assert.equal(newcomer.id, user.id, 'sign-up keeps the id the invitation created');

      const list = await as(t, newcomer, 'GET', '/v1/invitations');
      const invitations = dataOf<Record<string, unknown>[]>(list, 200);
      assert.deepEqual((list.data as { pagination: unknown }).pagination, {
        page: 1,
        per_page: 20,
        total: 1,
        total_pages: 1,
      });
      assert.equal(invitations.length, 1);
      const item = invitations[0]!;
      assertKeys(item, INVITATION_KEYS, 'invitation');
      assert.deepEqual(item.project, { id: project.id, name: 'Launchpad' });
      assert.deepEqual(item.invited_by, { id: admin.id, email: admin.email, name: 'Ada Admin' });
      assert.equal(item.id, invited.id);
      assert.equal(item.role, 'developer');
      assert.equal(item.invited_at, invited.invited_at);
      assert.equal(item.expires_at, stored.invitation_expires_at);

      const accepted = dataOf<Record<string, unknown>>(
        await as(t, newcomer, 'POST', `/v1/invitations/${String(invited.id)}/accept`),
        200,
      );
      assertKeys(accepted, ACCEPTED_KEYS, 'accepted member');
      assert.equal(accepted.status, 'active');
      assert.equal(accepted.project_id, project.id);
      assert.deepEqual(accepted.user, { id: user.id, email, name: newcomer.name });
      assert.match(String(accepted.joined_at), ISO_MS);

      const members = dataOf<Record<string, unknown>[]>(
        await as(t, admin, 'GET', `/v1/projects/${project.id}/members?status=active`),
        200,
      );
      const row = members.find((m) => m.id === invited.id);
      assert.ok(row);
      assertKeys(row, ['id', 'user', 'role', 'status', 'joined_at'], 'list item');
      const projects = dataOf<{ id: string; role: string }[]>(
        await as(t, newcomer, 'GET', '/v1/projects'),
        200,
      );
      assert.deepEqual(
        projects.map((p) => [p.id, p.role]),
        [[project.id, 'developer']],
      );
      assert.deepEqual(
        dataOf(await as(t, newcomer, 'GET', '/v1/invitations'), 200),
        [],
        'an accepted invitation is no longer listed',
      );

      const events = await db()
        .selectFrom('audit_events')
        .selectAll()
        .where('target_id', '=', String(invited.id))
        .orderBy('created_at')
        .orderBy('chain_seq')
        .execute();
      const byAction = Object.fromEntries(events.map((e) => [e.action, e]));
      assert.equal(byAction['member.invited']?.actor_id, admin.id);
      assert.equal(byAction['member.invited']?.credential_kind, 'session');
      assert.equal(byAction['invitation.accepted']?.actor_id, newcomer.id);
      assert.ok(byAction['invitation.accepted']?.request_id);
      const acceptedData = JSON.parse(byAction['invitation.accepted']!.data);
      assert.deepEqual(acceptedData.after, { status: 'active' });
      assert.equal(acceptedData.email_verified_by_token, false, 'sign-up already proved it');

      const outbox = await eventually(
        async () =>
          (await db().selectFrom('outbox').selectAll().where('status', '=', 'sent').execute()).find(
            (m) => m.payload.includes(email),
          ),
        'the outbox row marked sent',
      );
      assert.ok(!outbox.payload.includes(token), 'the delivered body (with its token) is dropped');
    });

    it('an existing user’s e-mail also carries a one-time token for this invitation, and the CLI command', async () => {
      const admin = await signUp(t);
      const bob = await signUp(t, { name: 'Bob' });
      const project = await createProject(t, admin);
      const invited = await invite(t, admin, project.id, bob.email.toUpperCase(), 'viewer');
      assert.deepEqual(invited.user, { id: bob.id, email: bob.email, name: 'Bob' });
      const stored = await db()
        .selectFrom('members')
        .select('invitation_token_hash')
        .where('id', '=', invited.id)
        .executeTakeFirstOrThrow();
      const mail = await mailTo(bob.email);
      const token = invitationTokenIn([mail], invited.id);
      assert.ok(token, `the e-mail names the invitation and carries its link: ${mail.text}`);
      assert.ok(mail.text.includes(`${t.config.publicUrl}/invite?token=${token}`), mail.text);
      assert.ok(
        mail.text.includes(`coffer invitations accept ${invited.id} --token ${token}`),
        mail.text,
      );
      assert.equal(hashToken(token), stored.invitation_token_hash, 'only the hash is stored');
      const events = await db()
        .selectFrom('audit_events')
        .select('data')
        .where('action', '=', 'member.invited')
        .where('target_id', '=', invited.id)
        .execute();
      assert.equal(JSON.parse(events[0]!.data).new_account, false);
    });

    it('only the invited user can accept or decline; others get 404, tokens 403', async () => {
      const admin = await signUp(t);
      const invitee = await signUp(t);
      const stranger = await signUp(t);
      const project = await createProject(t, admin);
      const { id } = await invite(t, admin, project.id, invitee.email, 'developer');
      for (const action of ['accept', 'decline']) {
        errorOf(await as(t, stranger, 'POST', `/v1/invitations/${id}/${action}`), 404, 'not_found');
        errorOf(await as(t, admin, 'POST', `/v1/invitations/${id}/${action}`), 404, 'not_found');
        const key = await createApiKey(t, project.id, admin, 'admin');
        errorOf(await as(t, key, 'POST', `/v1/invitations/${id}/${action}`), 403, 'forbidden');
        errorOf(
          await t.request({ method: 'POST', url: `/v1/invitations/${id}/${action}` }),
          401,
          'unauthenticated',
        );
      }
      errorOf(await as(t, invitee, 'POST', `/v1/invitations/mbr_nothing/accept`), 404, 'not_found');
      const key = await createApiKey(t, project.id, admin, 'viewer');
      errorOf(await as(t, key, 'GET', '/v1/invitations'), 403, 'forbidden');
      errorOf(await t.request({ method: 'GET', url: '/v1/invitations' }), 401, 'unauthenticated');
      // Still pending for the invitee after all of that.
      const mine = dataOf<{ id: string }[]>(await as(t, invitee, 'GET', '/v1/invitations'), 200);
      assert.deepEqual(
        mine.map((i) => i.id),
        [id],
      );
      errorOf(
        await as(t, invitee, 'POST', `/v1/invitations/${id}/accept`, { extra: true }),
        400,
        'validation_error',
      );
      dataOf(await as(t, invitee, 'POST', `/v1/invitations/${id}/accept`), 200);
      errorOf(await as(t, invitee, 'POST', `/v1/invitations/${id}/accept`), 404, 'not_found');
      errorOf(await as(t, invitee, 'POST', `/v1/invitations/${id}/decline`), 404, 'not_found');
    });

    it('declining makes the invitation revoked; inviting again gives a fresh pending one (201)', async () => {
      const admin = await signUp(t);
      const invitee = await signUp(t);
      const project = await createProject(t, admin);
      const first = await invite(t, admin, project.id, invitee.email, 'admin');

      const declined = await as(t, invitee, 'POST', `/v1/invitations/${first.id}/decline`);
      assert.equal(declined.statusCode, 204);
      assert.equal(declined.body, '');
      const revoked = dataOf<Record<string, unknown>[]>(
        await as(t, admin, 'GET', `/v1/projects/${project.id}/members?status=revoked`),
        200,
      );
      assert.equal(revoked.length, 1);
      assertKeys(revoked[0], ['id', 'user', 'role', 'status', 'invited_at'], 'revoked item');
      assert.equal(revoked[0]!.status, 'revoked');
      assert.deepEqual(dataOf(await as(t, invitee, 'GET', '/v1/invitations'), 200), []);
      errorOf(await as(t, invitee, 'POST', `/v1/invitations/${first.id}/accept`), 404, 'not_found');
      errorOf(await as(t, invitee, 'GET', `/v1/projects/${project.id}`), 404, 'not_found');

      const again = await as(t, admin, 'POST', `/v1/projects/${project.id}/members`, {
        email: invitee.email,
        role: 'viewer',
      });
      const second = dataOf<{ id: string; status: string; role: string }>(again, 201);
      assert.notEqual(second.id, first.id);
      assert.equal(second.status, 'pending');
      assert.equal(second.role, 'viewer');
      errorOf(
        await as(t, admin, 'DELETE', `/v1/projects/${project.id}/members/${first.id}`),
        404,
        'not_found',
      );
      const actions = (
        await db()
          .selectFrom('audit_events')
          .select('action')
          .where('project_id', '=', project.id)
          .orderBy('created_at')
          .orderBy('chain_seq')
          .orderBy('id')
          .execute()
      ).map((e) => e.action);
      assert.ok(actions.includes('invitation.declined'));
      assert.equal(actions.filter((a) => a === 'member.invited').length, 2);
    });

    it('an invitation expires after INVITATION_TTL_DAYS into revoked, and can be renewed', async () => {
      const admin = await signUp(t);
      const invitee = await signUp(t);
      const project = await createProject(t, admin);
      const { id } = await invite(t, admin, project.id, invitee.email, 'developer');
      const newcomerEmail = uniqueEmail('late');
      const forNewcomer = await invite(t, admin, project.id, newcomerEmail, 'viewer');
      const token = /token=([A-Za-z0-9_-]{43})/.exec((await mailTo(newcomerEmail)).text)![1]!;

      t.clock.advance(7 * DAY - 60_000);
      const pendingIds = async () =>
        dataOf<{ id: string }[]>(
          await as(t, admin, 'GET', `/v1/projects/${project.id}/members?status=pending`),
          200,
        ).map((m) => m.id);
      assert.deepEqual((await pendingIds()).sort(), [id, forNewcomer.id].sort());
      assert.equal(
        dataOf<unknown[]>(await as(t, invitee, 'GET', '/v1/invitations'), 200).length,
        1,
      );

      t.clock.advance(60_000);
      assert.deepEqual(dataOf(await as(t, invitee, 'GET', '/v1/invitations'), 200), []);
      assert.deepEqual(await pendingIds(), []);
      const revoked = dataOf<{ id: string; status: string }[]>(
        await as(t, admin, 'GET', `/v1/projects/${project.id}/members?status=revoked`),
        200,
      );
      assert.deepEqual(revoked.map((m) => m.id).sort(), [id, forNewcomer.id].sort());
      errorOf(await as(t, invitee, 'POST', `/v1/invitations/${id}/accept`), 404, 'not_found');
      await assert.rejects(
        signUp(t, { email: newcomerEmail, invitationToken: token }),
        'an expired link no longer signs anyone up',
      );

      const expiries = await db()
        .selectFrom('audit_events')
        .select(['target_id', 'actor_id'])
        .where('action', '=', 'invitation.expired')
        .where('project_id', '=', project.id)
        .execute();
      assert.deepEqual(expiries.map((e) => e.target_id).sort(), [id, forNewcomer.id].sort());
      assert.ok(
        expiries.every((e) => e.actor_id === null),
        'expiry is the server’s doing',
      );

      const renewed = await invite(t, admin, project.id, invitee.email, 'developer');
      assert.notEqual(renewed.id, id);
      dataOf(await as(t, invitee, 'POST', `/v1/invitations/${renewed.id}/accept`), 200);
    });

    it('the periodic sweep revokes lapsed invitations of every project', async () => {
      const admin = await signUp(t);
      const p1 = await createProject(t, admin);
      const p2 = await createProject(t, admin);
      const a = await invite(t, admin, p1.id, uniqueEmail(), 'viewer');
      const b = await invite(t, admin, p2.id, uniqueEmail(), 'developer');
      t.clock.advance(8 * DAY);
      assert.ok((await expireLapsedInvitations(db(), {}, t.clock.now())) >= 2);
      const statuses = await db()
        .selectFrom('members')
        .select('status')
        .where('id', 'in', [a.id, b.id])
        .execute();
      assert.deepEqual(
        statuses.map((s) => s.status),
        ['revoked', 'revoked'],
      );
    });

    it('lists your invitations sorted by created_at, invited_at or expires_at, ties on id, paginated', async () => {
      const admin = await signUp(t);
      const invitee = await signUp(t);
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        const project = await createProject(t, admin);
        ids.push((await invite(t, admin, project.id, invitee.email, 'viewer')).id);
        if (i !== 1) t.clock.advance(1000); // the second and third share their timestamps
      }
      const rows = await db()
        .selectFrom('members')
        .select(['id', 'created_at', 'invited_at', 'invitation_expires_at'])
        .where('id', 'in', ids)
        .execute();
      const keyOf: Record<string, (r: (typeof rows)[number]) => string> = {
        created_at: (r) => r.created_at,
        invited_at: (r) => r.invited_at!,
        expires_at: (r) => r.invitation_expires_at!,
      };
      await assertSortOrders(rows, keyOf, async (sort, order) =>
        dataOf<{ id: string }[]>(
          await as(t, invitee, 'GET', `/v1/invitations?sort=${sort}&order=${order}`),
          200,
        ).map((i) => i.id),
      );
      const page = await as(t, invitee, 'GET', '/v1/invitations?per_page=3&page=2');
      assert.equal(dataOf<unknown[]>(page, 200).length, 1);
      assert.deepEqual((page.data as { pagination: unknown }).pagination, {
        page: 2,
        per_page: 3,
        total: 4,
        total_pages: 2,
      });
      await assertRejectedQueries(t, invitee, (query) => `/v1/invitations?${query}`, [
        ['per_page=101', 'per_page', 'maximum'],
        ['page=0', 'page', 'minimum'],
        ['sort=role', 'sort', 'invalid'],
        ['status=pending', 'status', 'unknown'],
      ]);
    });

    it('a member or invitee of the project who is invited again is refused with 409 already_member, in words that say which', async () => {
      const admin = await signUp(t);
      const project = await createProject(t, admin);
      const { user } = await addMember(t, admin, project.id, 'viewer');
      const pendingEmail = uniqueEmail();
      await invite(t, admin, project.id, pendingEmail, 'viewer');
      for (const email of [user.email, pendingEmail, pendingEmail.toUpperCase(), admin.email]) {
        const error = errorOf(
          await as(t, admin, 'POST', `/v1/projects/${project.id}/members`, {
            email,
            role: 'developer',
          }),
          409,
          'already_member',
        );
        assert.deepEqual(error.details, [{ field: 'email', issue: 'already_member' }]);
        // A pending invitee is not a member yet: the words say which.
        assert.match(
          error.message,
          email.toLowerCase() === pendingEmail.toLowerCase()
            ? /is already invited \(pending\)$/
            : /is already a member of this project \(active\)$/,
        );
      }
    });
  });
}
