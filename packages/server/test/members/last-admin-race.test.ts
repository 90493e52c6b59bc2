import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';
import { as, dataOf, type Caller } from '../support/http.js';
import { createProject, invite } from '../support/projects.js';

const ROUNDS = 4;

/**
 * The last-admin rule under real concurrency: two admins act at the same
 * moment (both requests in flight before either answers). On PostgreSQL the
 * transactions genuinely overlap (a pool of connections, or PGlite's single
 * backend); the project lock must serialise them so a project never ends up
 * without an active admin.
 */
for (const dialect of DIALECTS) {
  describe(`last admin under concurrent requests (${dialect})`, () => {
    let t: TestApp;
    let ada: TestUser;
    let bob: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      ada = await signUp(t, { name: 'Ada' });
      bob = await signUp(t, { name: 'Bob' });
    });
    after(async () => t.close());

    /** A fresh project where Ada and Bob are the only two active admins. */
    async function twoAdmins() {
      const project = await createProject(t, ada);
      const list = await as(t, ada, 'GET', `/v1/projects/${project.id}/members`);
      const adaMember = dataOf<{ id: string }[]>(list, 200)[0]!.id;
      const bobMember = (await invite(t, ada, project.id, bob.email, 'admin')).id;
      dataOf(await as(t, bob, 'POST', `/v1/invitations/${bobMember}/accept`), 200);
      const url = (memberId: string) => `/v1/projects/${project.id}/members/${memberId}`;
      return { projectId: project.id, url, ada: adaMember, bob: bobMember };
    }

    async function activeAdmins(projectId: string): Promise<string[]> {
      const rows = await t.testDb.db.kysely
        .selectFrom('members')
        .select('user_id')
        .where('project_id', '=', projectId)
        .where('role', '=', 'admin')
        .where('status', '=', 'active')
        .execute();
      return rows.map((r) => r.user_id);
    }

    /** Both requests are sent before either is awaited. */
    const race = (
      ...requests: [Caller, 'PATCH' | 'DELETE', string, unknown?][]
    ): Promise<number[]> =>
      Promise.all(
        requests.map(([caller, method, url, body]) => as(t, caller, method, url, body)),
      ).then((responses) => responses.map((r) => r.statusCode));

    it('two admins demote each other: exactly one succeeds, one admin remains', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const p = await twoAdmins();
        const statuses = await race(
          [ada, 'PATCH', p.url(p.bob), { role: 'developer' }],
          [bob, 'PATCH', p.url(p.ada), { role: 'developer' }],
        );
        assert.equal(statuses.filter((s) => s === 200).length, 1, `round ${round}: ${statuses}`);
        // The loser was demoted first (403) or saw the other as the last admin (422).
        assert.ok(
          statuses.every((s) => [200, 403, 422].includes(s)),
          `round ${round}: ${statuses}`,
        );
        const admins = await activeAdmins(p.projectId);
        assert.equal(admins.length, 1, `round ${round}`);
        assert.equal(admins[0], statuses[0] === 200 ? ada.id : bob.id);
      }
    });

    it('two admins each step down at once: one succeeds, the other gets 422 last_admin', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const p = await twoAdmins();
        const statuses = await race(
          [ada, 'PATCH', p.url(p.ada), { role: 'viewer' }],
          [bob, 'PATCH', p.url(p.bob), { role: 'viewer' }],
        );
        assert.deepEqual([...statuses].sort(), [200, 422], `round ${round}`);
        assert.equal((await activeAdmins(p.projectId)).length, 1, `round ${round}`);
      }
    });

    it('two admins remove each other: exactly one succeeds, one admin remains', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const p = await twoAdmins();
        const statuses = await race([ada, 'DELETE', p.url(p.bob)], [bob, 'DELETE', p.url(p.ada)]);
        assert.equal(statuses.filter((s) => s === 204).length, 1, `round ${round}: ${statuses}`);
        // The loser was removed first (404: no longer a member) or saw the last admin (422).
        assert.ok(
          statuses.every((s) => [204, 404, 422].includes(s)),
          `round ${round}: ${statuses}`,
        );
        const admins = await activeAdmins(p.projectId);
        assert.deepEqual(admins, [statuses[0] === 204 ? ada.id : bob.id], `round ${round}`);
      }
    });

    it('two admins each leave at once: one succeeds, the other gets 422 last_admin', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const p = await twoAdmins();
        const statuses = await race([ada, 'DELETE', p.url(p.ada)], [bob, 'DELETE', p.url(p.bob)]);
        assert.deepEqual([...statuses].sort(), [204, 422], `round ${round}`);
        assert.equal((await activeAdmins(p.projectId)).length, 1, `round ${round}`);
      }
    });

    it('one admin demotes the other while that one leaves: a single admin remains', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const p = await twoAdmins();
        const statuses = await race(
          [ada, 'PATCH', p.url(p.bob), { role: 'viewer' }],
          [bob, 'DELETE', p.url(p.bob)],
        );
        assert.equal(
          statuses.filter((s) => s === 200 || s === 204).length,
          1,
          `round ${round}: ${statuses}`,
        );
        assert.deepEqual(await activeAdmins(p.projectId), [ada.id], `round ${round}`);
      }
    });
  });
}
