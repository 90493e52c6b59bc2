import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, uniqueEmail } from '../support/users.js';
import { as, dataOf, type Caller } from '../support/http.js';
import { addMember, createProject, invite } from '../support/projects.js';
import { createApiKey, createCiToken } from './fixtures.js';

/**
 * The Form A role table for projects and members, cell by cell: every kind of
 * caller against every operation, on one project. `capped key` is an admin
 * API key whose creator is a developer: it acts as a developer.
 */
const CALLERS = [
  'admin',
  'developer',
  'viewer',
  'pending member',
  'non-member',
  'admin key',
  'developer key',
  'viewer key',
  'capped key',
  'CI token',
  'key of another project',
  'anonymous',
] as const;
type CallerName = (typeof CALLERS)[number];

const table = (...statuses: number[]): Record<CallerName, number> =>
  Object.fromEntries(CALLERS.map((c, i) => [c, statuses[i]!])) as Record<CallerName, number>;

//                                 adm  dev  vwr  pend non  kAdm kDev kVwr kCap  ci  kOth anon
const EXPECTED = {
  'GET project': table(200, 200, 200, 404, 404, 200, 200, 200, 200, 200, 404, 401),
  'list members': table(200, 200, 200, 404, 404, 200, 200, 200, 200, 403, 404, 401),
  'invite member': table(201, 403, 403, 404, 404, 201, 403, 403, 403, 403, 404, 401),
  'change role': table(200, 403, 403, 404, 404, 200, 403, 403, 403, 403, 404, 401),
  'remove member': table(204, 403, 403, 404, 404, 204, 403, 403, 403, 403, 404, 401),
  'PATCH project': table(200, 403, 403, 404, 404, 200, 403, 403, 403, 403, 404, 401),
  'DELETE project': table(0, 403, 403, 404, 404, 403, 403, 403, 403, 403, 404, 401),
  'create project': table(201, 201, 201, 201, 201, 403, 403, 403, 403, 403, 403, 401),
};

for (const dialect of DIALECTS) {
  describe(`project and member permissions (${dialect})`, () => {
    let t: TestApp;
    let projectId: string;
    const callers = new Map<CallerName, Caller | null>();
    let admin: Awaited<ReturnType<typeof signUp>>;

    before(async () => {
      t = await startTestApp(dialect);
      admin = await signUp(t);
      projectId = (await createProject(t, admin)).id;
      const developer = await addMember(t, admin, projectId, 'developer');
      const viewer = await addMember(t, admin, projectId, 'viewer');
      const pending = await signUp(t);
      await invite(t, admin, projectId, pending.email, 'developer');
      const outsider = await signUp(t);
      const other = await createProject(t, outsider);
      callers.set('admin', admin);
      callers.set('developer', developer.user);
      callers.set('viewer', viewer.user);
      callers.set('pending member', pending);
      callers.set('non-member', outsider);
      callers.set('admin key', await createApiKey(t, projectId, admin, 'admin'));
      callers.set('developer key', await createApiKey(t, projectId, admin, 'developer'));
      callers.set('viewer key', await createApiKey(t, projectId, admin, 'viewer'));
      callers.set('capped key', await createApiKey(t, projectId, developer.user, 'admin'));
      callers.set('CI token', await createCiToken(t, projectId, admin));
      callers.set('key of another project', await createApiKey(t, other.id, outsider, 'admin'));
      callers.set('anonymous', null);
    });
    after(async () => t.close());

    const call = (
      caller: Caller | null,
      method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
      url: string,
      body?: unknown,
    ) => as(t, caller, method, url, body);

    /** Runs `operation` for every caller and compares the whole row of statuses at once. */
    async function check(
      name: keyof typeof EXPECTED,
      operation: (caller: Caller | null) => Promise<{ statusCode: number }>,
      only: readonly CallerName[] = CALLERS,
    ) {
      const actual: Partial<Record<CallerName, number>> = {};
      const expected: Partial<Record<CallerName, number>> = {};
      for (const who of only) {
        actual[who] = (await operation(callers.get(who)!)).statusCode;
        expected[who] = EXPECTED[name][who];
      }
      assert.deepEqual(actual, expected, name);
    }

    const project = () => `/v1/projects/${projectId}`;
    /** A fresh pending invitation to change or remove, so successful calls never run out of targets. */
    const target = async () => (await invite(t, admin, projectId, uniqueEmail(), 'viewer')).id;

    it('GET /projects/{id}', () => check('GET project', (c) => call(c, 'GET', project())));

    it('GET /projects/{id}/members', () =>
      check('list members', (c) => call(c, 'GET', `${project()}/members`)));

    it('POST /projects/{id}/members', () =>
      check('invite member', (c) =>
        call(c, 'POST', `${project()}/members`, { email: uniqueEmail(), role: 'viewer' }),
      ));

    it('PATCH /projects/{id}/members/{member_id}', () =>
      check('change role', async (c) =>
        call(c, 'PATCH', `${project()}/members/${await target()}`, { role: 'developer' }),
      ));

    it('DELETE /projects/{id}/members/{member_id}', () =>
      check('remove member', async (c) =>
        call(c, 'DELETE', `${project()}/members/${await target()}`),
      ));

    it('PATCH /projects/{id}', () =>
      check('PATCH project', (c) => call(c, 'PATCH', project(), { description: 'changed' })));

    it('POST /projects: signed-in users only', () =>
      check('create project', (c) => call(c, 'POST', '/v1/projects', { name: 'Mine' })));

    it('GET /projects lists the project exactly for its active members and its own tokens', async () => {
      for (const who of CALLERS) {
        const res = await call(callers.get(who)!, 'GET', '/v1/projects?per_page=100');
        if (who === 'anonymous') {
          assert.equal(res.statusCode, 401);
          continue;
        }
        const ids = dataOf<{ id: string; role: string }[]>(res, 200);
        const sees = ids.some((p) => p.id === projectId);
        const shouldSee = EXPECTED['GET project'][who] === 200;
        assert.equal(sees, shouldSee, `${who} ${shouldSee ? 'sees' : 'does not see'} the project`);
        if (who.endsWith('key') || who === 'CI token') {
          assert.ok(ids.length <= 1, `${who} sees only its own project`);
        }
      }
      const roles = Object.fromEntries(
        await Promise.all(
          (['developer key', 'capped key', 'viewer key', 'CI token'] as const).map(async (who) => {
            const res = await call(callers.get(who)!, 'GET', project());
            return [who, dataOf<{ role: string }>(res, 200).role];
          }),
        ),
      );
      assert.deepEqual(roles, {
        'developer key': 'developer',
        'capped key': 'developer',
        'viewer key': 'viewer',
        'CI token': 'developer',
      });
    });

    it('an invitation made with an API key is invited_by the admin who created the key', async () => {
      const key = callers.get('admin key') as { id: string; authorization: string };
      const res = await call(key, 'POST', `${project()}/members`, {
        email: uniqueEmail(),
        role: 'developer',
      });
      const member = dataOf<{ id: string; invited_by: string }>(res, 201);
      assert.equal(member.invited_by, admin.id);
      const event = await t.testDb.db.kysely
        .selectFrom('audit_events')
        .selectAll()
        .where('action', '=', 'member.invited')
        .where('target_id', '=', member.id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(
        [event.actor_id, event.credential_kind, event.credential_id],
        [admin.id, 'api_key', key.id],
      );
    });

    it('DELETE /projects/{id}: signed-in admins only; the project and everything in it go', async () => {
      await check('DELETE project', (c) => call(c, 'DELETE', project()), CALLERS.slice(1));
      const res = await call(admin, 'DELETE', project());
      assert.equal(res.statusCode, 204);
      assert.equal(res.body, '');
      assert.equal((await call(admin, 'GET', project())).statusCode, 404);
      assert.equal((await call(admin, 'DELETE', project())).statusCode, 404);
    });
  });
}
