import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, uniqueEmail, type TestUser } from '../support/users.js';
import { as, dataOf, errorOf } from '../support/http.js';
import { addMember, createProject, invite } from '../support/projects.js';
import {
  assertKeys,
  assertRejectedQueries,
  assertSortOrders,
  createApiKey,
  createCiToken,
  grantCount,
  insertTokenGrant,
  insertUserGrant,
  ISO_MS,
} from './fixtures.js';

const UPDATED_KEYS = ['id', 'project_id', 'user', 'role', 'status', 'updated_at'];

interface ListItem {
  id: string;
  user: { id: string; email: string; name: string };
  role: string;
  status: string;
  joined_at?: string;
  invited_at?: string;
}

for (const dialect of DIALECTS) {
  describe(`members (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(async () => t.close());

    const db = () => t.testDb.db.kysely;
    const membersUrl = (projectId: string, query = '') =>
      `/v1/projects/${projectId}/members${query ? `?${query}` : ''}`;
    const list = async (caller: TestUser, projectId: string, query = '') => {
      const res = await as(t, caller, 'GET', membersUrl(projectId, query));
      assert.equal(res.statusCode, 200, res.body);
      return res.data as {
        data: ListItem[];
        pagination: { page: number; per_page: number; total: number; total_pages: number };
      };
    };

    /** A project with an active admin and developer, a pending viewer and a revoked developer. */
    async function populated() {
      const admin = await signUp(t, { name: 'Ada' });
      const project = await createProject(t, admin);
      const dev = await addMember(t, admin, project.id, 'developer', 'Bob');
      const pendingEmail = uniqueEmail('pending');
      const pending = await invite(t, admin, project.id, pendingEmail, 'viewer');
      const decliner = await signUp(t, { name: 'carol' });
      const declined = await invite(t, admin, project.id, decliner.email, 'developer');
      assert.equal(
        (await as(t, decliner, 'POST', `/v1/invitations/${declined.id}/decline`)).statusCode,
        204,
      );
      return { admin, project, dev, pending, pendingEmail, decliner, declined };
    }

    it('list items carry exactly id, user, role, status and joined_at (active) or invited_at (pending, revoked)', async () => {
      const { admin, project, dev, pending, pendingEmail, decliner, declined } = await populated();
      const body = await list(admin, project.id);
      assertKeys(body, ['data', 'pagination'], 'list body');
      assert.deepEqual(body.pagination, { page: 1, per_page: 20, total: 4, total_pages: 1 });
      const byId = new Map(body.data.map((m) => [m.id, m]));
      for (const item of body.data) {
        assertKeys(
          item,
          ['id', 'user', 'role', 'status', item.status === 'active' ? 'joined_at' : 'invited_at'],
          `${item.status} item`,
        );
        assertKeys(item.user, ['id', 'email', 'name'], 'user');
        assert.match(item.id, /^mbr_[0-9A-Za-z]{20}$/);
        assert.match(item.joined_at ?? item.invited_at ?? '', ISO_MS);
      }
      assert.deepEqual(byId.get(dev.memberId), {
        id: dev.memberId,
        user: { id: dev.user.id, email: dev.user.email, name: 'Bob' },
        role: 'developer',
        status: 'active',
        joined_at: byId.get(dev.memberId)!.joined_at,
      });
      assert.deepEqual(byId.get(pending.id)?.user, {
        id: pending.user.id,
        email: pendingEmail,
        name: pendingEmail.split('@')[0],
      });
      assert.equal(byId.get(pending.id)?.status, 'pending');
      assert.equal(byId.get(declined.id)?.status, 'revoked');
      assert.equal(byId.get(declined.id)?.user.id, decliner.id);
      const self = body.data.find((m) => m.user.id === admin.id);
      assert.equal(self?.role, 'admin');
      assert.equal(self?.status, 'active');
    });

    it('filters by role and by status, alone and together', async () => {
      const { admin, project, dev, pending, declined } = await populated();
      const ids = async (query: string) => {
        const body = await list(admin, project.id, query);
        assert.equal(body.pagination.total, body.data.length);
        return body.data.map((m) => m.id).sort();
      };
      const adminMember = (await list(admin, project.id, 'role=admin')).data[0]!.id;
      assert.deepEqual(await ids('role=admin'), [adminMember]);
      assert.deepEqual(await ids('role=developer'), [dev.memberId, declined.id].sort());
      assert.deepEqual(await ids('role=viewer'), [pending.id]);
      assert.deepEqual(await ids('status=active'), [adminMember, dev.memberId].sort());
      assert.deepEqual(await ids('status=pending'), [pending.id]);
      assert.deepEqual(await ids('status=revoked'), [declined.id]);
      assert.deepEqual(await ids('role=developer&status=active'), [dev.memberId]);
      assert.deepEqual(await ids('role=viewer&status=active'), []);
      for (const [query, field] of [
        ['role=owner', 'role'],
        ['status=gone', 'status'],
      ] as const) {
        const error = errorOf(
          await as(t, admin, 'GET', membersUrl(project.id, query)),
          400,
          'validation_error',
        );
        assert.deepEqual(error.details, [{ field, issue: 'invalid' }]);
      }
    });

    it('sorts by every allowed field in both orders, ties broken by id in the same order', async () => {
      const admin = await signUp(t, { name: 'Mallory' });
      const project = await createProject(t, admin);
      // Names that differ only by case sort together; two invitations share a timestamp.
      await addMember(t, admin, project.id, 'developer', 'bob');
      t.clock.advance(1000);
      await addMember(t, admin, project.id, 'viewer', 'Alice');
      await invite(t, admin, project.id, uniqueEmail('zed'), 'developer');
      await invite(t, admin, project.id, uniqueEmail('amy'), 'developer');
      t.clock.advance(1000);
      await addMember(t, admin, project.id, 'admin', 'BOB');

      const rows = await db()
        .selectFrom('members')
        .innerJoin('users', 'users.id', 'members.user_id')
        .select([
          'members.id',
          'members.created_at',
          'members.joined_at',
          'members.invited_at',
          'members.role',
          'members.status',
          'users.email',
          'users.name',
        ])
        .where('members.project_id', '=', project.id)
        .execute();
      type Row = (typeof rows)[number];
      const keyOf: Record<string, (r: Row) => string | null> = {
        created_at: (r) => r.created_at,
        joined_at: (r) => r.joined_at,
        invited_at: (r) => r.invited_at,
        role: (r) => r.role,
        status: (r) => r.status,
        email: (r) => r.email.toLowerCase(),
        name: (r) => r.name.toLowerCase(),
      };
      await assertSortOrders(rows, keyOf, async (sort, order) =>
        (await list(admin, project.id, `sort=${sort}&order=${order}`)).data.map((m) => m.id),
      );
      const byDefault = await list(admin, project.id);
      const createdDesc = await list(admin, project.id, 'sort=created_at&order=desc');
      assert.deepEqual(byDefault.data, createdDesc.data, 'default: created_at desc');
      const names = (await list(admin, project.id, 'sort=name&order=asc')).data.map(
        (m) => m.user.name,
      );
      assert.deepEqual(
        names.filter((n) => /^(alice|bob)$/i.test(n)).map((n) => n.toLowerCase()),
        ['alice', 'bob', 'bob'],
        'names compare case-insensitively',
      );
    });

    it('paginates exactly and refuses out-of-bounds parameters naming them', async () => {
      const { admin, project } = await populated();
      const pages = [1, 2, 3].map(async (page) =>
        list(admin, project.id, `per_page=3&page=${page}`),
      );
      const [p1, p2, p3] = await Promise.all(pages);
      assert.deepEqual(p1!.pagination, { page: 1, per_page: 3, total: 4, total_pages: 2 });
      assert.deepEqual(p2!.pagination, { page: 2, per_page: 3, total: 4, total_pages: 2 });
      assert.deepEqual(p3!.pagination, { page: 3, per_page: 3, total: 4, total_pages: 2 });
      assert.equal(p1!.data.length, 3);
      assert.equal(p2!.data.length, 1);
      assert.deepEqual(p3!.data, []);
      const all = (await list(admin, project.id, 'per_page=100')).data.map((m) => m.id);
      assert.deepEqual(
        [...p1!.data, ...p2!.data].map((m) => m.id),
        all,
      );

      await assertRejectedQueries(t, admin, (query) => membersUrl(project.id, query), [
        ['per_page=101', 'per_page', 'maximum'],
        ['per_page=0', 'per_page', 'minimum'],
        ['page=0', 'page', 'minimum'],
        ['page=abc', 'page', 'invalid'],
        ['sort=password', 'sort', 'invalid'],
        ['order=sideways', 'order', 'invalid'],
        ['colour=blue', 'colour', 'unknown'],
      ]);
    });

    it('PATCH changes the role and answers exactly id, project_id, user, role, status, updated_at', async () => {
      const { admin, project, dev, pending } = await populated();
      t.clock.advance(5000);
      const res = await as(t, admin, 'PATCH', membersUrl(project.id) + `/${dev.memberId}`, {
        role: 'admin',
      });
      const updated = dataOf<Record<string, unknown>>(res, 200);
      assertKeys(updated, UPDATED_KEYS, 'updated member');
      assert.deepEqual(
        { ...updated, updated_at: undefined },
        {
          id: dev.memberId,
          project_id: project.id,
          user: { id: dev.user.id, email: dev.user.email, name: 'Bob' },
          role: 'admin',
          status: 'active',
          updated_at: undefined,
        },
      );
      assert.equal(updated.updated_at, t.clock.now().toISOString());

      const event = await db()
        .selectFrom('audit_events')
        .selectAll()
        .where('action', '=', 'member.role_changed')
        .where('target_id', '=', dev.memberId)
        .executeTakeFirstOrThrow();
      assert.equal(event.actor_id, admin.id);
      assert.equal(event.credential_kind, 'session');
      assert.equal(event.credential_id, admin.sessionId);
      assert.equal(event.request_id, res.headers['x-request-id']);
      assert.ok(event.ip);
      const data = JSON.parse(event.data);
      assert.deepEqual(data.before, { role: 'developer' });
      assert.deepEqual(data.after, { role: 'admin' });

      // A pending invitation's role can be changed too; the status stays pending.
      const changed = dataOf<{ role: string; status: string }>(
        await as(t, admin, 'PATCH', membersUrl(project.id) + `/${pending.id}`, {
          role: 'developer',
        }),
        200,
      );
      assert.deepEqual([changed.role, changed.status], ['developer', 'pending']);

      for (const [body, field, issue] of [
        [{}, 'role', 'required'],
        [{ role: 'owner' }, 'role', 'invalid'],
        [{ role: 'viewer', status: 'active' }, 'status', 'unknown'],
      ] as const) {
        const error = errorOf(
          await as(t, admin, 'PATCH', membersUrl(project.id) + `/${dev.memberId}`, body),
          400,
          'validation_error',
        );
        assert.deepEqual(error.details, [{ field, issue }], JSON.stringify(body));
      }
    });

    it('invite validates its body: e-mail format, role, unknown fields', async () => {
      const admin = await signUp(t);
      const project = await createProject(t, admin);
      for (const [body, field, issue] of [
        [{ role: 'viewer' }, 'email', 'required'],
        [{ email: uniqueEmail() }, 'role', 'required'],
        [{ email: 'not-an-address', role: 'viewer' }, 'email', 'invalid'],
        [{ email: uniqueEmail(), role: 'owner' }, 'role', 'invalid'],
        [{ email: uniqueEmail(), role: 'viewer', status: 'active' }, 'status', 'unknown'],
      ] as const) {
        const error = errorOf(
          await as(t, admin, 'POST', membersUrl(project.id), body),
          400,
          'validation_error',
        );
        assert.deepEqual(error.details, [{ field, issue }], JSON.stringify(body));
      }
      assert.equal((await list(admin, project.id)).pagination.total, 1, 'nothing was created');
    });

    it('a viewer holds no vault grant: demotion to viewer deletes grants, to developer keeps them', async () => {
      const admin = await signUp(t);
      const project = await createProject(t, admin);
      const a = await addMember(t, admin, project.id, 'admin');
      const b = await addMember(t, admin, project.id, 'developer');
      for (const userId of [a.user.id, b.user.id, admin.id])
        await insertUserGrant(t, project.id, userId, admin.id);
      const grantsOf = (userId: string) => grantCount(t, userId);

      dataOf(
        await as(t, admin, 'PATCH', membersUrl(project.id) + `/${a.memberId}`, {
          role: 'developer',
        }),
        200,
      );
      assert.equal(await grantsOf(a.user.id), 1, 'a developer keeps the grant');
      dataOf(
        await as(t, admin, 'PATCH', membersUrl(project.id) + `/${b.memberId}`, { role: 'viewer' }),
        200,
      );
      assert.equal(await grantsOf(b.user.id), 0, 'a viewer has none');
      assert.equal(await grantsOf(admin.id), 1, 'others keep theirs');
    });

    it('DELETE removes any member (204, empty body); a second DELETE is 404; the user may be invited again', async () => {
      const { admin, project, dev, pending, declined } = await populated();
      for (const id of [dev.memberId, pending.id, declined.id]) {
        const res = await as(t, admin, 'DELETE', membersUrl(project.id) + `/${id}`);
        assert.equal(res.statusCode, 204, res.body);
        assert.equal(res.body, '');
        errorOf(await as(t, admin, 'DELETE', membersUrl(project.id) + `/${id}`), 404, 'not_found');
      }
      assert.equal((await list(admin, project.id)).pagination.total, 1);
      errorOf(await as(t, dev.user, 'GET', `/v1/projects/${project.id}`), 404, 'not_found');
      errorOf(await as(t, dev.user, 'GET', membersUrl(project.id)), 404, 'not_found');
      const again = await invite(t, admin, project.id, dev.user.email, 'viewer');
      assert.equal(again.user.id, dev.user.id);

      const removed = await db()
        .selectFrom('audit_events')
        .select(['target_id', 'data', 'actor_id'])
        .where('action', '=', 'member.removed')
        .where('project_id', '=', project.id)
        .execute();
      assert.equal(removed.length, 3);
      const devEvent = removed.find((e) => e.target_id === dev.memberId)!;
      assert.deepEqual(JSON.parse(devEvent.data).before, { role: 'developer', status: 'active' });
      assert.equal(devEvent.actor_id, admin.id);
    });

    it('removing a member who could read secrets recommends a re-key and ends their grants and tokens', async () => {
      const rekey = async (projectId: string) =>
        (
          await db()
            .selectFrom('projects')
            .select('rekey_recommended')
            .where('id', '=', projectId)
            .executeTakeFirstOrThrow()
        ).rekey_recommended;

      const admin = await signUp(t);
      const viewerOnly = await createProject(t, admin);
      const viewer = await addMember(t, admin, viewerOnly.id, 'viewer');
      await as(t, admin, 'DELETE', membersUrl(viewerOnly.id) + `/${viewer.memberId}`);
      assert.equal(await rekey(viewerOnly.id), 0, 'a viewer never held the key');

      const project = await createProject(t, admin);
      const dev = await addMember(t, admin, project.id, 'admin');
      await insertUserGrant(t, project.id, dev.user.id, admin.id);
      const key = await createApiKey(t, project.id, dev.user, 'developer');
      assert.equal((await as(t, key, 'GET', `/v1/projects/${project.id}`)).statusCode, 200);

      const res = await as(t, admin, 'DELETE', membersUrl(project.id) + `/${dev.memberId}`);
      assert.equal(res.statusCode, 204);
      assert.equal(await rekey(project.id), 1);
      assert.equal(await grantCount(t, dev.user.id), 0);
      const stored = await db()
        .selectFrom('api_keys')
        .select('revoked_at')
        .where('id', '=', key.id)
        .executeTakeFirstOrThrow();
      assert.ok(stored.revoked_at, 'their API key is revoked');
      assert.equal((await as(t, key, 'GET', `/v1/projects/${project.id}`)).statusCode, 401);

      const pendingProject = await createProject(t, admin);
      const pending = await invite(t, admin, pendingProject.id, uniqueEmail(), 'developer');
      await as(t, admin, 'DELETE', membersUrl(pendingProject.id) + `/${pending.id}`);
      assert.equal(await rekey(pendingProject.id), 1, 'a pending developer was to receive it');
    });

    it('removing a member deletes the grants of the API keys and CI tokens it revokes, as revoking each one does', async () => {
      const admin = await signUp(t);
      const project = await createProject(t, admin);
      const dev = await addMember(t, admin, project.id, 'developer');
      const environment = await db()
        .selectFrom('environments')
        .select('id')
        .where('project_id', '=', project.id)
        .executeTakeFirstOrThrow();
      const key = await createApiKey(t, project.id, dev.user, 'developer');
      const ci = await createCiToken(t, project.id, dev.user);
      const others = await createApiKey(t, project.id, admin, 'developer');
      for (const token of [
        { type: 'api_key' as const, id: key.id },
        { type: 'ci_token' as const, id: ci.id },
        { type: 'api_key' as const, id: others.id },
      ]) {
        await insertTokenGrant(t, project.id, token, environment.id, dev.user.id);
      }
      assert.equal(await grantCount(t, key.id), 1);
      assert.equal(await grantCount(t, ci.id), 1);

      const res = await as(t, admin, 'DELETE', membersUrl(project.id) + `/${dev.memberId}`);
      assert.equal(res.statusCode, 204, res.body);
      for (const [table, id] of [
        ['api_keys', key.id],
        ['ci_tokens', ci.id],
      ] as const) {
        const stored = await db()
          .selectFrom(table)
          .select('revoked_at')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        assert.ok(stored.revoked_at, `${id} is revoked`);
        assert.equal(await grantCount(t, id), 0, `${id} keeps no grant`);
      }
      assert.equal(await grantCount(t, others.id), 1, "another member's API key keeps its grant");
    });

    it('the last active admin can be neither demoted nor removed: 422 last_admin', async () => {
      const admin = await signUp(t);
      const project = await createProject(t, admin);
      const own = (await list(admin, project.id, 'role=admin')).data[0]!.id;
      const tryDemote = () =>
        as(t, admin, 'PATCH', membersUrl(project.id) + `/${own}`, { role: 'developer' });
      const tryRemove = () => as(t, admin, 'DELETE', membersUrl(project.id) + `/${own}`);

      errorOf(await tryDemote(), 422, 'last_admin');
      errorOf(await tryRemove(), 422, 'last_admin');
      // A pending admin does not count: they may never accept.
      const second = await signUp(t);
      const { id } = await invite(t, admin, project.id, second.email, 'admin');
      errorOf(await tryDemote(), 422, 'last_admin');
      errorOf(await tryRemove(), 422, 'last_admin');
      dataOf(await as(t, second, 'POST', `/v1/invitations/${id}/accept`), 200);

      assert.equal(dataOf<{ role: string }>(await tryDemote(), 200).role, 'developer');
      errorOf(
        await as(t, second, 'PATCH', membersUrl(project.id) + `/${id}`, { role: 'viewer' }),
        422,
        'last_admin',
      );
      errorOf(await as(t, second, 'DELETE', membersUrl(project.id) + `/${id}`), 422, 'last_admin');
      const actives = (await list(second, project.id, 'role=admin&status=active')).data;
      assert.deepEqual(
        actives.map((m) => m.id),
        [id],
      );
    });

    it('a member id from another project is 404, whoever administers both', async () => {
      const admin = await signUp(t);
      const p1 = await createProject(t, admin);
      const p2 = await createProject(t, admin);
      const inP2 = await addMember(t, admin, p2.id, 'developer');
      for (const [method, body] of [
        ['PATCH', { role: 'viewer' }],
        ['DELETE', undefined],
      ] as const) {
        errorOf(
          await as(t, admin, method, membersUrl(p1.id) + `/${inP2.memberId}`, body),
          404,
          'not_found',
        );
        errorOf(
          await as(t, admin, method, membersUrl(p1.id) + `/mbr_doesnotexist0000000`, body),
          404,
          'not_found',
        );
      }
      const stillThere = (await list(admin, p2.id)).data.find((m) => m.id === inP2.memberId);
      assert.equal(stillThere?.role, 'developer');
      errorOf(
        await as(t, admin, 'DELETE', membersUrl(p1.id) + `/${inP2.memberId}`, { force: true }),
        400,
        'validation_error',
      );
    });
  });
}
