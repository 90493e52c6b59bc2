import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/ids.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/db.js';
import { signUp, type TestUser } from '../support/users.js';
import { dataOf, errorOf, expectStatus } from '../support/http.js';
import { addMember } from '../support/projects.js';
import { projectWithVault, type VaultProject } from '../support/vault.js';
import { createToken, putSecret } from '../secrets/fixtures.js';

const ENVIRONMENT_KEYS = [
  'created_at',
  'id',
  'name',
  'project_id',
  'secret_count',
  'slug',
  'updated_at',
];
const keysOf = (o: object) => Object.keys(o).sort();

for (const dialect of DIALECTS) {
  describe(`environments (${dialect})`, () => {
    let t: TestApp;
    let project: VaultProject;
    let dev: TestUser;
    let viewer: TestUser;
    let url: string;

    before(async () => {
      t = await startTestApp(dialect);
      project = await projectWithVault(t);
      dev = (await addMember(t, project.admin, project.id, 'developer')).user;
      viewer = (await addMember(t, project.admin, project.id, 'viewer')).user;
      url = `/v1/projects/${project.id}/environments`;
    });
    after(async () => t.close());

    const create = (headers: Record<string, string>, body: object) =>
      t.request({ method: 'POST', url, headers, body });

    it('lists the default environments with exact fields, sortable and paginated', async () => {
      await putSecret(t, project, project.env.staging, 'ONE', '1', dev.headers);
      const res = await t.request({
        method: 'GET',
        url: `${url}?sort=name&order=asc`,
        headers: viewer.headers,
      });
      expectStatus(res, 200);
      const body = res.data as { data: Array<Record<string, unknown>>; pagination: unknown };
      assert.deepEqual(keysOf(body), ['data', 'pagination']);
      assert.deepEqual(
        body.data.map((e) => e.slug),
        ['development', 'production', 'staging'],
      );
      for (const e of body.data) {
        assert.deepEqual(keysOf(e), ENVIRONMENT_KEYS);
        assert.match(String(e.id), /^env_[0-9A-Za-z]{20}$/);
        assert.equal(e.project_id, project.id);
      }
      assert.equal(body.data.find((e) => e.slug === 'staging')!.secret_count, 1);
      assert.deepEqual(body.pagination, { page: 1, per_page: 20, total: 3, total_pages: 1 });
      const page = await t.request({
        method: 'GET',
        url: `${url}?sort=slug&order=desc&per_page=2&page=2`,
        headers: viewer.headers,
      });
      assert.deepEqual(
        (dataOf(page) as Array<{ slug: string }>).map((e) => e.slug),
        ['development'],
      );
      const bad = await t.request({
        method: 'GET',
        url: `${url}?sort=revision`,
        headers: dev.headers,
      });
      assert.equal(bad.statusCode, 400);
      assert.equal(errorOf(bad).details[0].field, 'sort');
    });

    it('creates an environment (201); the slug defaults to the name', async () => {
      const res = await create(dev.headers, { name: '  QA (EU) ' });
      expectStatus(res, 201);
      const env = dataOf(res);
      assert.deepEqual(keysOf(env), ENVIRONMENT_KEYS);
      assert.equal(env.name, 'QA (EU)');
      assert.equal(env.slug, 'qa-eu');
      assert.equal(env.secret_count, 0);
      const explicit = await create(project.admin.headers, { name: 'Preview', slug: 'pr-42' });
      expectStatus(explicit, 201);
      assert.equal(dataOf(explicit).slug, 'pr-42');
      // Reachable by id and by slug.
      for (const ref of [env.id, 'qa-eu']) {
        const got = await t.request({
          method: 'GET',
          url: `${url}/${ref}`,
          headers: viewer.headers,
        });
        expectStatus(got, 200);
        assert.deepEqual(dataOf(got), env);
      }
    });

    it('refuses a slug already used in the project with 409 already_exists', async () => {
      const res = await create(dev.headers, { name: 'Staging again', slug: 'staging' });
      assert.equal(res.statusCode, 409);
      assert.equal(errorOf(res).code, 'already_exists');
      assert.deepEqual(errorOf(res).details, [{ field: 'slug', issue: 'taken' }]);
      const derived = await create(dev.headers, { name: 'Production' });
      assert.equal(derived.statusCode, 409);
      // The same slug in another project is fine.
      const other = await projectWithVault(t);
      expectStatus(
        await t.request({
          method: 'POST',
          url: `/v1/projects/${other.id}/environments`,
          headers: other.admin.headers,
          body: { name: 'QA', slug: 'qa-eu' },
        }),
        201,
      );
    });

    it('validates names and slugs', async () => {
      const cases: Array<[object, string, string]> = [
        [{}, 'name', 'required'],
        [{ name: '' }, 'name', 'too_short'],
        [{ name: 'x'.repeat(101) }, 'name', 'too_long'],
        [{ name: '   ' }, 'name', 'required'],
        [{ name: '!!!' }, 'slug', 'required'],
        [{ name: 'Ok', slug: 'Upper' }, 'slug', 'invalid'],
        [{ name: 'Ok', slug: '-edge' }, 'slug', 'invalid'],
        [{ name: 'Ok', slug: 'edge-' }, 'slug', 'invalid'],
        [{ name: 'Ok', slug: 'under_score' }, 'slug', 'invalid'],
        [{ name: 'Ok', slug: 'a'.repeat(65) }, 'slug', 'invalid'],
        [{ name: 'Ok', color: 'red' }, 'color', 'unknown'],
      ];
      for (const [body, field, issue] of cases) {
        const res = await create(dev.headers, body);
        assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
        assert.ok(
          errorOf(res).details.some(
            (d: { field: string; issue: string }) => d.field === field && d.issue === issue,
          ),
          `${JSON.stringify(body)}: ${JSON.stringify(errorOf(res).details)}`,
        );
      }
      expectStatus(await create(dev.headers, { name: 'Max', slug: `a${'-'.repeat(62)}b` }), 201);
    });

    it('viewers and CI tokens cannot create environments; developer API keys can', async () => {
      const viewerRes = await create(viewer.headers, { name: 'Nope' });
      assert.equal(viewerRes.statusCode, 403);
      assert.equal(errorOf(viewerRes).code, 'forbidden');
      const ci = await createToken(t, project, 'ci_token', {
        [project.env.staging.id]: 'read_write',
      });
      assert.equal((await create(ci.headers, { name: 'From CI' })).statusCode, 403);
      const key = await createToken(t, project, 'api_key', {}, 'developer');
      expectStatus(await create(key.headers, { name: 'From key' }), 201);
    });

    it('renames an environment and changes its slug', async () => {
      const env = dataOf(await create(dev.headers, { name: 'Temp' }));
      t.clock.advance(1000);
      const res = await t.request({
        method: 'PATCH',
        url: `${url}/temp`,
        headers: dev.headers,
        body: { name: 'Temporary', slug: 'temporary' },
      });
      expectStatus(res, 200);
      const updated = dataOf(res);
      assert.deepEqual(keysOf(updated), ENVIRONMENT_KEYS);
      assert.equal(updated.id, env.id);
      assert.equal(updated.name, 'Temporary');
      assert.equal(updated.slug, 'temporary');
      assert.ok(updated.updated_at > env.updated_at);
      assert.equal(
        (await t.request({ method: 'GET', url: `${url}/temp`, headers: dev.headers })).statusCode,
        404,
      );
      const taken = await t.request({
        method: 'PATCH',
        url: `${url}/temporary`,
        headers: dev.headers,
        body: { slug: 'staging' },
      });
      assert.equal(taken.statusCode, 409);
      assert.equal(errorOf(taken).code, 'already_exists');
      // Its own slug again is not a conflict.
      expectStatus(
        await t.request({
          method: 'PATCH',
          url: `${url}/temporary`,
          headers: dev.headers,
          body: { slug: 'temporary' },
        }),
        200,
      );
      const empty = await t.request({
        method: 'PATCH',
        url: `${url}/temporary`,
        headers: dev.headers,
        body: {},
      });
      assert.equal(empty.statusCode, 400);
      const byViewer = await t.request({
        method: 'PATCH',
        url: `${url}/temporary`,
        headers: viewer.headers,
        body: { name: 'x' },
      });
      assert.equal(byViewer.statusCode, 403);
      // An API key needs read_write on the environment it renames.
      const readOnly = await createToken(t, project, 'api_key', { [env.id]: 'read' }, 'admin');
      const byKey = await t.request({
        method: 'PATCH',
        url: `${url}/temporary`,
        headers: readOnly.headers,
        body: { name: 'x' },
      });
      assert.equal(byKey.statusCode, 403);
    });

    it('deleting an environment (admin only) deletes its secrets, their versions and its token grants', async () => {
      const env = dataOf(await create(dev.headers, { name: 'Doomed' }));
      const target = { id: env.id as string, slug: 'doomed' };
      await putSecret(t, project, target, 'GONE_A', 'a', dev.headers);
      await putSecret(t, project, target, 'GONE_A', 'a2', dev.headers);
      await putSecret(t, project, target, 'GONE_B', 'b', dev.headers);
      const db = t.testDb.db.kysely;
      const key = await createToken(t, project, 'api_key', { [env.id]: 'read' });
      await db
        .insertInto('vault_grants')
        .values({
          id: newId('grant'),
          project_id: project.id,
          epoch: project.epoch,
          kind: 'environment_key',
          recipient_type: 'api_key',
          recipient_id: key.id,
          environment_id: env.id,
          sealed_key: randomBytes(80).toString('base64url'),
          granter_id: project.admin.id,
          signature: randomBytes(64).toString('base64url'),
          created_at: new Date().toISOString(),
        })
        .execute();

      const byDev = await t.request({
        method: 'DELETE',
        url: `${url}/doomed`,
        headers: dev.headers,
      });
      assert.equal(byDev.statusCode, 403);
      const res = await t.request({
        method: 'DELETE',
        url: `${url}/${env.id}`,
        headers: project.admin.headers,
      });
      assert.equal(res.statusCode, 204);
      assert.equal(res.body, '');

      const count = async (table: 'secrets' | 'secret_versions' | 'vault_grants') =>
        (await db.selectFrom(table).select('id').where('environment_id', '=', env.id).execute())
          .length;
      assert.equal(await count('secrets'), 0);
      assert.equal(await count('secret_versions'), 0);
      assert.equal(await count('vault_grants'), 0);
      const again = await t.request({
        method: 'DELETE',
        url: `${url}/${env.id}`,
        headers: project.admin.headers,
      });
      assert.equal(again.statusCode, 404);
      // Other environments keep their secrets.
      assert.ok(
        (await db.selectFrom('secrets').select('id').where('project_id', '=', project.id).execute())
          .length > 0,
      );
      const event = await db
        .selectFrom('audit_events')
        .selectAll()
        .where('action', '=', 'environment.deleted')
        .where('target_id', '=', env.id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(event.data), { name: 'Doomed', slug: 'doomed', secret_count: 2 });
      assert.equal(event.actor_id, project.admin.id);
    });

    it('records environment changes in the audit log', async () => {
      const db = t.testDb.db.kysely;
      const env = dataOf(await create(dev.headers, { name: 'Audited' }));
      await t.request({
        method: 'PATCH',
        url: `${url}/audited`,
        headers: dev.headers,
        body: { name: 'Audited 2' },
      });
      const events = await db
        .selectFrom('audit_events')
        .selectAll()
        .where('target_id', '=', env.id)
        .orderBy('created_at')
        .orderBy('chain_seq')
        .execute();
      assert.deepEqual(
        events.map((e) => [e.action, JSON.parse(e.data)]),
        [
          ['environment.created', { name: 'Audited', slug: 'audited' }],
          [
            'environment.updated',
            {
              before: { name: 'Audited', slug: 'audited' },
              after: { name: 'Audited 2', slug: 'audited' },
            },
          ],
        ],
      );
      assert.ok(events.every((e) => e.actor_id === dev.id && e.credential_kind === 'session'));
    });

    it('non-members get 404 for the project; anonymous callers 401', async () => {
      const stranger = await signUp(t);
      for (const [method, path] of [
        ['GET', url],
        ['GET', `${url}/staging`],
        ['POST', url],
        ['DELETE', `${url}/staging`],
      ] as const) {
        const res = await t.request({
          method,
          url: path,
          headers: stranger.headers,
          ...(method === 'POST' ? { body: { name: 'x' } } : {}),
        });
        assert.equal(res.statusCode, 404, `${method} ${path}`);
        assert.equal(errorOf(res).code, 'not_found');
      }
      assert.equal((await t.request({ method: 'GET', url })).statusCode, 401);
      const missing = await t.request({ method: 'GET', url: `${url}/nope`, headers: dev.headers });
      assert.equal(missing.statusCode, 404);
      assert.match(errorOf(missing).message, /Environment/);
    });
  });
}
