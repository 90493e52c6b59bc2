import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';
import { as, dataOf, errorOf } from '../support/http.js';
import { addMember, createProject, invite } from '../support/projects.js';
import {
  assertKeys,
  assertRejectedQueries,
  assertSortOrders,
  createApiKey,
  createCiToken,
  insertUserGrant,
  ISO_MS,
} from '../members/fixtures.js';

const PROJECT_KEYS = ['id', 'name', 'description', 'created_at', 'updated_at', 'role'];

interface Project {
  id: string;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
  role: string;
}

for (const dialect of DIALECTS) {
  describe(`projects (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(async () => t.close());

    const db = () => t.testDb.db.kysely;
    const listProjects = async (user: TestUser, query = '') => {
      const res = await as(t, user, 'GET', `/v1/projects${query ? `?${query}` : ''}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.data as {
        data: Project[];
        pagination: { page: number; per_page: number; total: number; total_pages: number };
      };
    };

    it('creating a project answers exactly its fields; the creator is its first admin; default environments exist', async () => {
      const owner = await signUp(t);
      const res = await as(t, owner, 'POST', '/v1/projects', {
        name: '  Payments API ',
        description: 'Card processing',
      });
      const project = dataOf<Project>(res, 201);
      assertKeys(project, PROJECT_KEYS, 'project');
      assert.match(project.id, /^proj_[0-9A-Za-z]{20}$/);
      assert.equal(project.name, 'Payments API', 'the name is trimmed');
      assert.equal(project.description, 'Card processing');
      assert.equal(project.role, 'admin');
      assert.match(project.created_at, ISO_MS);
      assert.equal(project.updated_at, project.created_at);
      assert.equal(project.created_at, t.clock.now().toISOString());

      assert.deepEqual(
        dataOf(await as(t, owner, 'GET', `/v1/projects/${project.id}`), 200),
        project,
      );

      const environments = await db()
        .selectFrom('environments')
        .select(['id', 'name', 'slug', 'revision'])
        .where('project_id', '=', project.id)
        .orderBy('name')
        .execute();
      assert.deepEqual(
        environments.map((e) => [e.name, e.slug]),
        [
          ['development', 'development'],
          ['production', 'production'],
          ['staging', 'staging'],
        ],
      );
      assert.ok(environments.every((e) => /^env_[0-9A-Za-z]{20}$/.test(e.id)));

      const member = await db()
        .selectFrom('members')
        .selectAll()
        .where('project_id', '=', project.id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(
        [member.user_id, member.role, member.status, member.joined_at],
        [owner.id, 'admin', 'active', project.created_at],
      );
      const event = await db()
        .selectFrom('audit_events')
        .selectAll()
        .where('project_id', '=', project.id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(
        [event.action, event.actor_id, event.target_id, event.request_id],
        ['project.created', owner.id, project.id, res.headers['x-request-id']],
      );

      const minimal = dataOf<Project>(
        await as(t, owner, 'POST', '/v1/projects', { name: 'X' }),
        201,
      );
      assert.equal(minimal.description, '');
    });

    it('creation validates the body and names each field', async () => {
      const owner = await signUp(t);
      for (const [body, field, issue] of [
        [{}, 'name', 'required'],
        [{ name: '' }, 'name', 'too_short'],
        [{ name: '   ' }, 'name', 'invalid'],
        [{ name: 'x'.repeat(101) }, 'name', 'too_long'],
        [{ name: 42 }, 'name', 'invalid'],
        [{ name: 'ok', description: 'd'.repeat(1001) }, 'description', 'too_long'],
        [{ name: 'ok', vault_epoch: 5 }, 'vault_epoch', 'unknown'],
      ] as const) {
        const error = errorOf(
          await as(t, owner, 'POST', '/v1/projects', body),
          400,
          'validation_error',
        );
        assert.deepEqual(error.details, [{ field, issue }], JSON.stringify(body));
      }
      assert.equal((await listProjects(owner)).pagination.total, 0, 'nothing was created');
      errorOf(
        await t.request({ method: 'POST', url: '/v1/projects', body: { name: 'anon' } }),
        401,
        'unauthenticated',
      );
    });

    it('PATCH changes name and description; the answer is the whole project with updated_at', async () => {
      const owner = await signUp(t);
      const project = await createProject(t, owner, 'Before');
      t.clock.advance(60_000);
      const url = `/v1/projects/${project.id}`;
      const renamed = dataOf<Project>(await as(t, owner, 'PATCH', url, { name: 'After' }), 200);
      assertKeys(renamed, PROJECT_KEYS, 'project');
      assert.equal(renamed.name, 'After');
      assert.equal(renamed.description, '');
      assert.equal(renamed.updated_at, t.clock.now().toISOString());
      assert.notEqual(renamed.updated_at, renamed.created_at);
      const described = dataOf<Project>(
        await as(t, owner, 'PATCH', url, { description: 'Now described' }),
        200,
      );
      assert.deepEqual([described.name, described.description], ['After', 'Now described']);
      assert.deepEqual(dataOf(await as(t, owner, 'GET', url), 200), described);

      errorOf(await as(t, owner, 'PATCH', url, {}), 400, 'validation_error');
      const unknown = errorOf(
        await as(t, owner, 'PATCH', url, { name: 'x', rekey_recommended: 0 }),
        400,
        'validation_error',
      );
      assert.deepEqual(unknown.details, [{ field: 'rekey_recommended', issue: 'unknown' }]);

      const event = await db()
        .selectFrom('audit_events')
        .select('data')
        .where('action', '=', 'project.updated')
        .where('project_id', '=', project.id)
        .orderBy('created_at')
        .executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(event.data), {
        before: { name: 'Before' },
        after: { name: 'After' },
      });
    });

    it('lists only the caller’s active memberships, with their role, sorted and paginated', async () => {
      const me = await signUp(t);
      const other = await signUp(t);
      const mine = [] as Project[];
      for (const name of ['beta', 'Alpha', 'gamma', 'alpha']) {
        mine.push(dataOf<Project>(await as(t, me, 'POST', '/v1/projects', { name }), 201));
        if (name !== 'gamma') t.clock.advance(1000); // two projects share a created_at
      }
      const theirs = await createProject(t, other, 'theirs');
      const asDeveloper = await createProject(t, other, 'shared');
      const { id } = await invite(t, other, asDeveloper.id, me.email, 'developer');
      const pendingOnly = await createProject(t, other, 'pending for me');
      await invite(t, other, pendingOnly.id, me.email, 'viewer');

      assert.deepEqual((await listProjects(me)).pagination, {
        page: 1,
        per_page: 20,
        total: 4,
        total_pages: 1,
      });
      dataOf(await as(t, me, 'POST', `/v1/invitations/${id}/accept`), 200);
      const all = await listProjects(me, 'per_page=100');
      assert.equal(all.pagination.total, 5);
      const ids = all.data.map((p) => p.id);
      assert.ok(!ids.includes(theirs.id) && !ids.includes(pendingOnly.id));
      assert.equal(all.data.find((p) => p.id === asDeveloper.id)?.role, 'developer');
      for (const p of all.data) assertKeys(p, PROJECT_KEYS, 'listed project');

      const keyOf: Record<string, (p: Project) => string> = {
        created_at: (p) => p.created_at,
        updated_at: (p) => p.updated_at,
        name: (p) => p.name.toLowerCase(),
      };
      await assertSortOrders(all.data, keyOf, async (sort, order) =>
        (await listProjects(me, `sort=${sort}&order=${order}`)).data.map((p) => p.id),
      );
      assert.deepEqual(
        (await listProjects(me)).data.map((p) => p.id),
        (await listProjects(me, 'sort=created_at&order=desc')).data.map((p) => p.id),
        'default order: created_at desc',
      );

      const page2 = await listProjects(me, 'per_page=2&page=2&sort=name&order=asc');
      assert.deepEqual(page2.pagination, { page: 2, per_page: 2, total: 5, total_pages: 3 });
      assert.equal(page2.data.length, 2);
      const page4 = await listProjects(me, 'per_page=2&page=4');
      assert.deepEqual(page4.data, []);

      await assertRejectedQueries(t, me, (query) => `/v1/projects?${query}`, [
        ['per_page=101', 'per_page', 'maximum'],
        ['page=0', 'page', 'minimum'],
        ['sort=vault_epoch', 'sort', 'invalid'],
        ['order=up', 'order', 'invalid'],
        ['role=admin', 'role', 'unknown'],
      ]);
    });

    it('a non-member gets 404 for a project, exactly as for one that does not exist', async () => {
      const owner = await signUp(t);
      const stranger = await signUp(t);
      const project = await createProject(t, owner);
      const missing = 'proj_00000000000000000000';
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { name: 'mine now' }],
        ['DELETE', undefined],
      ] as const) {
        const a = errorOf(
          await as(t, stranger, method, `/v1/projects/${project.id}`, body),
          404,
          'not_found',
        );
        const b = errorOf(
          await as(t, stranger, method, `/v1/projects/${missing}`, body),
          404,
          'not_found',
        );
        assert.equal(
          (a as { message?: string }).message,
          (b as { message?: string }).message,
          'no existence leak',
        );
      }
      assert.equal(
        dataOf<Project>(await as(t, owner, 'GET', `/v1/projects/${project.id}`), 200).name,
        project.name,
      );
    });

    it('deleting a project removes its environments, members, grants and tokens; its audit trail stays', async () => {
      const owner = await signUp(t);
      const project = await createProject(t, owner);
      const dev = await addMember(t, owner, project.id, 'developer');
      await insertUserGrant(t, project.id, dev.user.id, owner.id);
      const key = await createApiKey(t, project.id, owner, 'admin');
      const ci = await createCiToken(t, project.id, owner);
      const res = await as(t, owner, 'DELETE', `/v1/projects/${project.id}`);
      assert.equal(res.statusCode, 204);
      assert.equal(res.body, '');

      for (const table of [
        'environments',
        'members',
        'vault_grants',
        'api_keys',
        'ci_tokens',
      ] as const) {
        const rows = await db()
          .selectFrom(table)
          .select('id')
          .where('project_id', '=', project.id)
          .execute();
        assert.deepEqual(rows, [], `${table} of the project are gone`);
      }
      assert.equal((await as(t, key, 'GET', `/v1/projects/${project.id}`)).statusCode, 401);
      assert.equal((await as(t, ci, 'GET', `/v1/projects/${project.id}`)).statusCode, 401);
      errorOf(await as(t, dev.user, 'GET', `/v1/projects/${project.id}`), 404, 'not_found');
      const actions = (
        await db()
          .selectFrom('audit_events')
          .select('action')
          .where('project_id', '=', project.id)
          .execute()
      ).map((e) => e.action);
      assert.ok(actions.includes('project.created') && actions.includes('project.deleted'));
    });
  });
}
