import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { DIALECTS } from '../support/db.js';
import type { TestUser } from '../support/users.js';
import { dataOf, errorOf, eventually, expectStatus } from '../support/http.js';
import { addMember } from '../support/projects.js';
import {
  envelope,
  projectWithVault,
  type Environment,
  type VaultProject,
} from '../support/vault.js';
import { createToken, putSecret, secretsUrl } from './fixtures.js';

type Headers = Record<string, string>;
const PLAINTEXT = 'plaintext-that-must-never-be-logged';

for (const dialect of DIALECTS) {
  describe(`secret permissions by role and token scope (${dialect})`, () => {
    let t: TestApp;
    let project: VaultProject;
    let dev: TestUser;
    let viewer: TestUser;

    before(async () => {
      t = await startTestApp(dialect);
      project = await projectWithVault(t);
      dev = (await addMember(t, project.admin, project.id, 'developer')).user;
      viewer = (await addMember(t, project.admin, project.id, 'viewer')).user;
      for (const env of [project.env.staging, project.env.production]) {
        expectStatus(await putSecret(t, project, env, 'SHARED_KEY', PLAINTEXT, dev.headers), 201);
      }
    });
    after(async () => t.close());

    const get = (env: string, headers: Headers, rest = '/SHARED_KEY') =>
      t.request({ method: 'GET', url: secretsUrl(project, env, rest), headers });
    const list = (env: string, headers: Headers) => get(env, headers, '');
    const put = (env: Environment, headers: Headers, name = 'WRITTEN') =>
      putSecret(t, project, env, name, 'x', headers);
    /** Whether every listed secret carries its value (true) or none does (false). */
    const valuesIn = (res: TestResponse): boolean => {
      expectStatus(res, 200);
      const has = (dataOf(res) as Array<Record<string, unknown>>).map((s) => 'value' in s);
      assert.ok(has.length > 0);
      assert.ok(
        has.every((h) => h === has[0]),
        'all or none carry values',
      );
      return has[0]!;
    };
    const assertForbidden = (res: TestResponse, what: string) => {
      assert.equal(res.statusCode, 403, `${what}: ${res.body}`);
      assert.equal(errorOf(res).code, 'forbidden');
    };

    it('admins and developers read values and write', async () => {
      for (const headers of [project.admin.headers, dev.headers]) {
        assert.equal(valuesIn(await list('staging', headers)), true);
        expectStatus(await get('production', headers), 200);
      }
      expectStatus(await put(project.env.staging, project.admin.headers, 'BY_ADMIN'), 201);
    });

    it('a viewer lists names and metadata but never values, and cannot write', async () => {
      const listed = await list('staging', viewer.headers);
      expectStatus(listed, 200);
      assert.deepEqual(Object.keys((dataOf(listed) as object[])[0]!).sort(), [
        'comment',
        'created_at',
        'environment_id',
        'id',
        'name',
        'updated_at',
        'updated_by',
        'version',
      ]);
      assert.doesNotMatch(listed.body, /v1\.xc20p/);
      assertForbidden(await get('staging', viewer.headers), 'viewer GET');
      const versions = await get('staging', viewer.headers, '/SHARED_KEY/versions');
      expectStatus(versions, 200);
      assert.doesNotMatch(versions.body, /v1\.xc20p/);
      assertForbidden(await put(project.env.staging, viewer.headers), 'viewer PUT');
      for (const [method, rest, body] of [
        ['DELETE', '/SHARED_KEY', undefined],
        ['POST', '/SHARED_KEY/rollback', { version: 1 }],
        ['POST', '/batch', { delete: ['SHARED_KEY'] }],
      ] as const) {
        const res = await t.request({
          method,
          url: secretsUrl(project, 'staging', rest),
          headers: viewer.headers,
          ...(body ? { body } : {}),
        });
        assertForbidden(res, `viewer ${method} ${rest}`);
      }
    });

    it('an API key scoped to staging reads staging; production: names only in the list, 403 on the value and on writes', async () => {
      const key = await createToken(t, project, 'api_key', { [project.env.staging.id]: 'read' });
      assert.equal(valuesIn(await list('staging', key.headers)), true);
      expectStatus(await get('staging', key.headers), 200);
      const prodList = await list('production', key.headers);
      expectStatus(prodList, 200);
      assert.equal(valuesIn(prodList), false);
      assert.doesNotMatch(prodList.body, /v1\.xc20p/);
      assertForbidden(await get('production', key.headers), 'out-of-scope GET');
      assertForbidden(await put(project.env.production, key.headers), 'out-of-scope PUT');
      // `read` is not `read_write`.
      assertForbidden(await put(project.env.staging, key.headers), 'read-only PUT');
    });

    it('API keys write only with read_write and a role of developer or above', async () => {
      const writer = await createToken(t, project, 'api_key', {
        [project.env.staging.id]: 'read_write',
      });
      expectStatus(await put(project.env.staging, writer.headers, 'BY_KEY'), 201);
      const viewerKey = await createToken(
        t,
        project,
        'api_key',
        { [project.env.staging.id]: 'read_write' },
        'viewer',
      );
      assert.equal(valuesIn(await list('staging', viewerKey.headers)), false);
      assertForbidden(await get('staging', viewerKey.headers), 'viewer key GET');
      assertForbidden(await put(project.env.staging, viewerKey.headers), 'viewer key PUT');
      const adminReadOnly = await createToken(
        t,
        project,
        'api_key',
        { [project.env.staging.id]: 'read' },
        'admin',
      );
      expectStatus(await get('staging', adminReadOnly.headers), 200);
      assertForbidden(await put(project.env.staging, adminReadOnly.headers), 'admin key with read');
    });

    it('a CI token acts within its scopes', async () => {
      const ci = await createToken(t, project, 'ci_token', {
        [project.env.staging.id]: 'read_write',
      });
      expectStatus(await get('staging', ci.headers), 200);
      expectStatus(await put(project.env.staging, ci.headers, 'BY_CI'), 201);
      assertForbidden(await get('production', ci.headers), 'CI out of scope');
    });

    it('a token of another project gets 404', async () => {
      const other = await projectWithVault(t);
      const key = await createToken(t, other, 'api_key', { [other.env.staging.id]: 'read' });
      const res = await list('staging', key.headers);
      assert.equal(res.statusCode, 404);
      assert.equal(errorOf(res).code, 'not_found');
    });

    it('reads by tokens are audited with names only; reads by members are not', async () => {
      const db = t.testDb.db.kysely;
      const key = await createToken(t, project, 'api_key', { [project.env.staging.id]: 'read' });
      expectStatus(await get('staging', key.headers), 200);
      expectStatus(await list('staging', key.headers), 200);
      expectStatus(await get('staging', key.headers, '/SHARED_KEY/versions'), 200);
      const events = await eventually(async () => {
        const rows = await db
          .selectFrom('audit_events')
          .selectAll()
          .where('credential_id', '=', key.id)
          .orderBy('created_at')
          .orderBy('chain_seq')
          .execute();
        return rows.length >= 3 ? rows : undefined;
      }, 'the read audit events');
      assert.deepEqual(events.map((e) => e.action).sort(), [
        'secret.read',
        'secret.versions_listed',
        'secrets.listed',
      ]);
      for (const e of events) {
        assert.equal(e.project_id, project.id);
        assert.equal(e.credential_kind, 'api_key');
        assert.equal(e.actor_id, project.admin.id);
        assert.ok(e.request_id);
      }
      const read = events.find((e) => e.action === 'secret.read')!;
      assert.equal(read.target_type, 'secret');
      assert.equal(JSON.parse(read.data).name, 'SHARED_KEY');
      const listed = events.find((e) => e.action === 'secrets.listed')!;
      assert.equal(listed.target_id, project.env.staging.id);
      assert.ok(JSON.parse(listed.data).names.includes('SHARED_KEY'));

      // An out-of-scope (names only) listing is not a read of values: no event.
      expectStatus(await list('production', key.headers), 200);
      // Members' reads are not audited.
      expectStatus(await get('staging', dev.headers), 200);
      await new Promise((resolve) => setTimeout(resolve, 400));
      const later = await db
        .selectFrom('audit_events')
        .select(['action', 'credential_kind', 'target_id'])
        .where('action', 'in', ['secret.read', 'secrets.listed', 'secret.versions_listed'])
        .execute();
      assert.ok(later.every((e) => e.credential_kind !== 'session'));
      assert.ok(!later.some((e) => e.target_id === project.env.production.id));
    });

    it('repeated identical reads are counted: the counts add up to every read', async () => {
      const db = t.testDb.db.kysely;
      const key = await createToken(t, project, 'ci_token', { [project.env.staging.id]: 'read' });
      const reads = 7;
      for (let i = 0; i < reads; i++) expectStatus(await get('staging', key.headers), 200);
      const counted = await eventually(async () => {
        const rows = await db
          .selectFrom('audit_events')
          .select('data')
          .where('credential_id', '=', key.id)
          .where('action', '=', 'secret.read')
          .execute();
        const total = rows.reduce((n, r) => n + (JSON.parse(r.data) as { count: number }).count, 0);
        return total === reads ? rows : undefined;
      }, 'every read to be counted');
      // Usually one event (all within one flush interval); never more than one per read.
      assert.ok(counted.length >= 1 && counted.length <= reads);
      const data = JSON.parse(counted[0]!.data) as Record<string, unknown>;
      assert.equal(data.name, 'SHARED_KEY');
      if ((data.count as number) > 1) assert.match(String(data.last_at), /Z$/);
    });

    it('no audit event ever holds a value, plaintext or ciphertext', async () => {
      const db = t.testDb.db.kysely;
      await t.request({
        method: 'POST',
        url: secretsUrl(project, 'staging', '/batch'),
        headers: dev.headers,
        body: {
          secrets: [
            {
              name: 'BATCHED',
              value: envelope(project, project.env.staging.id, 'BATCHED', PLAINTEXT),
            },
          ],
        },
      });
      await new Promise((resolve) => setTimeout(resolve, 400));
      const rows = await db.selectFrom('audit_events').selectAll().execute();
      assert.ok(rows.length > 10);
      for (const row of rows) {
        const text = JSON.stringify(row);
        assert.doesNotMatch(text, /v1\.xc20p/);
        assert.ok(!text.includes(PLAINTEXT));
      }
      const writes = rows.filter(
        (r) => r.action.startsWith('secret.') && r.action !== 'secret.read',
      );
      assert.ok(
        writes.some((r) => r.action === 'secret.created' && r.credential_kind === 'api_key'),
      );
      assert.ok(
        writes.some((r) => r.action === 'secret.created' && r.credential_kind === 'ci_token'),
      );
      assert.ok(
        writes.some((r) => r.action === 'secret.created' && r.credential_kind === 'session'),
      );
    });
  });
}
