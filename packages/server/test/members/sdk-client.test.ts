import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  CofferClient,
  acceptInvitation,
  createProject,
  declineInvitation,
  deleteProject,
  getProject,
  inviteMember,
  isCofferApiError,
  listInvitations,
  listMembers,
  listProjects,
  removeMember,
  updateMemberRole,
  updateProject,
} from '@coffer/sdk';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, uniqueEmail, type TestUser } from '../support/users.js';
import { eventually } from '../support/http.js';
import { invitationTokenIn } from './fixtures.js';
import { outboxMails } from './smtp.js';

/**
 * The SDK's projects and members calls against the real server over HTTP
 * (plain HTTP on localhost, which the client allows; the server runs as if
 * behind a TLS-terminating proxy so cookie sessions pass the Origin check).
 */
for (const dialect of DIALECTS) {
  describe(`SDK projects and members client (${dialect})`, () => {
    let t: TestApp;
    let baseUrl: string;
    before(async () => {
      t = await startTestApp(dialect, { env: { TLS: 'off', TRUST_PROXY: 'true' } });
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    });
    after(async () => t.close());

    const clientOf = (user: TestUser) =>
      new CofferClient({ baseUrl, credential: { session: user.cookie.split('=')[1]! } });

    it('manages a project and its members end to end through the SDK', async () => {
      const ada = await signUp(t, { name: 'Ada' });
      // Bob's address is unproven until he accepts with the e-mailed token.
      const bob = await signUp(t, { name: 'Bob', emailVerified: false });
      const admin = clientOf(ada);
      const invitee = clientOf(bob);

      const project = await createProject(admin, { name: 'SDK project' });
      assert.equal(project.role, 'admin');
      assert.deepEqual(await getProject(admin, project.id), project);
      const renamed = await updateProject(admin, project.id, { description: 'via the SDK' });
      assert.equal(renamed.description, 'via the SDK');
      const page = await listProjects(admin, { sort: 'name', order: 'asc', per_page: 5 });
      assert.deepEqual(page.pagination, { page: 1, per_page: 5, total: 1, total_pages: 1 });
      assert.equal(page.data[0]?.id, project.id);

      const invited = await inviteMember(admin, project.id, { email: bob.email, role: 'admin' });
      assert.equal(invited.status, 'pending');
      assert.equal(invited.invited_by, ada.id);
      const declinedInvitation = await inviteMember(admin, project.id, {
        email: uniqueEmail(),
        role: 'viewer',
      });
      await assert.rejects(
        inviteMember(admin, project.id, { email: bob.email.toUpperCase(), role: 'viewer' }),
        (err: unknown) => isCofferApiError(err, 'already_member') && err.status === 409,
      );

      const invitations = await listInvitations(invitee);
      assert.deepEqual(
        invitations.data.map((i) => [i.id, i.project.name, i.invited_by.id]),
        [[invited.id, 'SDK project', ada.id]],
      );
      await assert.rejects(
        acceptInvitation(invitee, invited.id),
        (err: unknown) =>
          isCofferApiError(err, 'forbidden') &&
          err.details.some((d) => d.field === 'token' && d.issue === 'required'),
      );
      const token = await eventually(
        async () => invitationTokenIn(await outboxMails(t.config.dataDir), invited.id),
        'the invitation e-mail in the outbox',
      );
      const accepted = await acceptInvitation(invitee, invited.id, token);
      assert.equal(accepted.status, 'active');

      const pending = await listMembers(admin, project.id, { status: 'pending' });
      assert.deepEqual(
        pending.data.map((m) => m.id),
        [declinedInvitation.id],
      );
      const admins = await listMembers(admin, project.id, {
        role: 'admin',
        sort: 'name',
        order: 'asc',
      });
      assert.deepEqual(
        admins.data.map((m) => m.user.name),
        ['Ada', 'Bob'],
      );

      const own = admins.data.find((m) => m.user.id === ada.id)!;
      const demoted = await updateMemberRole(invitee, project.id, own.id, 'developer');
      assert.equal(demoted.role, 'developer');
      await assert.rejects(
        updateMemberRole(invitee, project.id, invited.id, 'viewer'),
        (err: unknown) => isCofferApiError(err, 'last_admin') && err.status === 422,
      );
      await assert.rejects(
        updateMemberRole(admin, project.id, invited.id, 'viewer'),
        (err: unknown) => isCofferApiError(err, 'forbidden') && err.status === 403,
      );

      await removeMember(invitee, project.id, declinedInvitation.id);
      await assert.rejects(
        removeMember(invitee, project.id, declinedInvitation.id),
        (err: unknown) => isCofferApiError(err, 'not_found'),
      );

      const third = await inviteMember(invitee, project.id, {
        email: ada.email,
        role: 'viewer',
      }).catch((err: unknown) => err);
      assert.ok(isCofferApiError(third, 'already_member'));
      const other = await signUp(t);
      const otherInvitation = await inviteMember(invitee, project.id, {
        email: other.email,
        role: 'viewer',
      });
      await declineInvitation(clientOf(other), otherInvitation.id);
      assert.equal((await listInvitations(clientOf(other))).pagination.total, 0);

      await deleteProject(invitee, project.id);
      await assert.rejects(getProject(invitee, project.id), (err: unknown) =>
        isCofferApiError(err, 'not_found'),
      );
    });
  });
}
