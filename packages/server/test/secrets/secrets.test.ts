import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decryptSecretValue, deriveEnvironmentKey } from '@coffer/sdk';
import { sql } from 'kysely';
import { startTestApp, type TestApp } from '../support/app.js';
import { inSharedProjectTransaction, lockProject } from '../../src/db/database.js';
import { DIALECTS, POSTGRES_URL } from '../support/db.js';
import { revisionBumpStatement } from '../../src/db/environment-write.js';
import { serviceMissing } from '../foundation/server-process.js';
import { dataOf, errorOf, expectStatus } from '../support/http.js';
import { addMember } from '../support/projects.js';
import { envelope, projectWithVault, type VaultProject } from '../support/vault.js';
import { putSecret, secretsUrl } from './fixtures.js';
import type { TestUser } from '../support/users.js';

const SECRET_KEYS = [
  'comment',
  'created_at',
  'environment_id',
  'id',
  'name',
  'updated_at',
  'updated_by',
  'value',
  'version',
];
const VERSION_KEYS = ['created_at', 'created_by', 'id', 'secret_id', 'value', 'version'];
const keysOf = (o: object) => Object.keys(o).sort();

for (const dialect of DIALECTS) {
  describe(`secrets (${dialect})`, () => {
    let t: TestApp;
    let project: VaultProject;
    let dev: TestUser;

    before(async () => {
      t = await startTestApp(dialect);
      project = await projectWithVault(t);
      dev = (await addMember(t, project.admin, project.id, 'developer')).user;
    });
    after(async () => t.close());

    /** Ids of stored secrets called `name`, in any environment. */
    const storedNamed = (name: string) =>
      t.testDb.db.kysely.selectFrom('secrets').select('id').where('name', '=', name).execute();

    const decrypt = (envId: string, name: string, value: string, epoch = project.epoch) =>
      decryptSecretValue({
        environmentKey: deriveEnvironmentKey(project.pmk, project.id, envId, epoch),
        projectId: project.id,
        environmentId: envId,
        name,
        epoch,
        envelope: value,
      });

    it('a developer writes a secret (201) and another member reads it back and decrypts it', async () => {
      const staging = project.env.staging;
      const res = await putSecret(
        t,
        project,
        staging,
        'DATABASE_URL',
        'postgres://db/app',
        dev.headers,
        {
          comment: 'primary database',
        },
      );
      expectStatus(res, 201);
      const secret = dataOf(res);
      assert.deepEqual(keysOf(secret), SECRET_KEYS);
      assert.match(secret.id, /^sec_[0-9A-Za-z]{20}$/);
      assert.equal(secret.environment_id, staging.id);
      assert.equal(secret.name, 'DATABASE_URL');
      assert.equal(secret.version, 1);
      assert.equal(secret.comment, 'primary database');
      assert.equal(secret.updated_by, dev.id);
      assert.equal(secret.created_at, secret.updated_at);

      // Read by the admin, by id of the environment rather than slug.
      const read = await t.request({
        method: 'GET',
        url: secretsUrl(project, staging.id, '/DATABASE_URL'),
        headers: project.admin.headers,
      });
      expectStatus(read, 200);
      assert.deepEqual(keysOf(dataOf(read)), SECRET_KEYS);
      assert.equal(decrypt(staging.id, 'DATABASE_URL', dataOf(read).value), 'postgres://db/app');
    });

    it('PUT on an existing secret is 200 with a new version; an omitted comment is kept', async () => {
      const env = project.env.development;
      expectStatus(
        await putSecret(t, project, env, 'API_TOKEN', 'one', dev.headers, { comment: 'c1' }),
        201,
      );
      const res = await putSecret(t, project, env, 'API_TOKEN', 'two', dev.headers);
      expectStatus(res, 200);
      assert.equal(dataOf(res).version, 2);
      assert.equal(dataOf(res).comment, 'c1');
      const cleared = await putSecret(t, project, env, 'API_TOKEN', 'three', dev.headers, {
        comment: '',
      });
      assert.equal(dataOf(cleared).version, 3);
      assert.equal(dataOf(cleared).comment, '');
    });

    it('a stale expected_version is 409 version_conflict naming the current version', async () => {
      const env = project.env.development;
      expectStatus(
        await putSecret(t, project, env, 'GUARDED', 'v1', dev.headers, { expected_version: 0 }),
        201,
      );
      const stale = await putSecret(t, project, env, 'GUARDED', 'v2', dev.headers, {
        expected_version: 0,
      });
      assert.equal(stale.statusCode, 409);
      const error = errorOf(stale);
      assert.equal(error.code, 'version_conflict');
      assert.deepEqual(error.details, [
        { field: 'expected_version', issue: 'stale', current_version: 1 },
      ]);
      const ok = await putSecret(t, project, env, 'GUARDED', 'v2', dev.headers, {
        expected_version: 1,
      });
      expectStatus(ok, 200);
      // expected_version on a secret that does not exist: current_version 0.
      const missing = await putSecret(t, project, env, 'NOT_THERE', 'x', dev.headers, {
        expected_version: 3,
      });
      assert.equal(missing.statusCode, 409);
      assert.deepEqual(errorOf(missing).details, [
        { field: 'expected_version', issue: 'stale', current_version: 0 },
      ]);
    });

    it('concurrent writers: exactly one creates with expected_version 0, and versions never collide', async () => {
      const env = project.env.development;
      const racers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          putSecret(t, project, env, 'RACED', `r${i}`, dev.headers, { expected_version: 0 }),
        ),
      );
      assert.deepEqual(
        racers.map((r) => r.statusCode).sort(),
        [201, 409, 409, 409, 409, 409, 409, 409],
      );
      const writers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          putSecret(t, project, env, 'RACED', `w${i}`, dev.headers),
        ),
      );
      assert.ok(writers.every((r) => r.statusCode === 200));
      assert.deepEqual(
        writers.map((r) => dataOf(r).version as number).sort((a, b) => a - b),
        [2, 3, 4, 5, 6, 7, 8, 9],
      );
    });

    it('concurrent writers creating the same new name all succeed, one version each', async () => {
      const env = project.env.development;
      const writers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          putSecret(t, project, env, 'RACED_NEW', `n${i}`, dev.headers),
        ),
      );
      assert.deepEqual(
        writers.map((r) => r.statusCode).sort(),
        [200, 200, 200, 200, 200, 200, 200, 201],
      );
      assert.deepEqual(
        writers.map((r) => dataOf(r).version as number).sort((a, b) => a - b),
        [1, 2, 3, 4, 5, 6, 7, 8],
      );
      const stored = await t.testDb.db.kysely
        .selectFrom('secret_versions as v')
        .innerJoin('secrets as s', 's.id', 'v.secret_id')
        .select('v.version')
        .where('s.environment_id', '=', env.id)
        .where('s.name', '=', 'RACED_NEW')
        .execute();
      assert.equal(stored.length, 8);
    });

    it('a value encrypted under another epoch is 409 stale_epoch with the current epoch', async () => {
      const env = project.env.development;
      const res = await t.request({
        method: 'PUT',
        url: secretsUrl(project, env.slug, '/OLD_EPOCH'),
        headers: dev.headers,
        body: { value: envelope(project, env.id, 'OLD_EPOCH', 'x', project.epoch + 1) },
      });
      assert.equal(res.statusCode, 409);
      assert.equal(errorOf(res).code, 'version_conflict');
      assert.deepEqual(errorOf(res).details, [
        { field: 'value', issue: 'stale_epoch', current_epoch: project.epoch },
      ]);
      assert.deepEqual(await storedNamed('OLD_EPOCH'), []);
    });

    it('a write to a project id that is not well-formed is 404 not_found, and nothing is written', async () => {
      const env = project.env.development;
      for (const bad of ["proj_x'); select 1; --", 'proj_short', `${project.id}x`]) {
        const res = await t.request({
          method: 'PUT',
          url: `/v1/projects/${encodeURIComponent(bad)}/environments/${env.slug}/secrets/MALFORMED`,
          headers: dev.headers,
          body: { value: envelope(project, env.id, 'MALFORMED', 'x') },
        });
        assert.equal(res.statusCode, 404, bad);
        assert.equal(errorOf(res).code, 'not_found');
      }
      assert.deepEqual(await storedNamed('MALFORMED'), []);
    });

    if (dialect === 'postgres') {
      it('the shared project lock refuses a malformed project id before any SQL is sent', async () => {
        let ran = false;
        await assert.rejects(
          inSharedProjectTransaction(t.testDb.db.kysely, "proj_aaaaaaaaaaaaaaaaaaa'", async () => {
            ran = true;
          }),
          /not a project id/,
        );
        assert.equal(ran, false);
      });
    }

    it("every write bumps its environment's revision once, with its commit; a refused write leaves it", async () => {
      // A project of its own: the listing tests count the shared project's secrets.
      const own = await projectWithVault(t);
      const env = own.env.production;
      const revision = async () =>
        Number(
          (
            await t.testDb.db.kysely
              .selectFrom('environments')
              .select('revision')
              .where('id', '=', env.id)
              .executeTakeFirstOrThrow()
          ).revision,
        );
      const start = await revision();
      expectStatus(await putSecret(t, own, env, 'REVISION_A', 'one', own.admin.headers), 201);
      assert.equal(await revision(), start + 1, 'a created secret');
      expectStatus(await putSecret(t, own, env, 'REVISION_A', 'two', own.admin.headers), 200);
      assert.equal(await revision(), start + 2, 'an updated secret');
      const stale = await putSecret(t, own, env, 'REVISION_A', 'three', own.admin.headers, {
        expected_version: 1,
      });
      assert.equal(stale.statusCode, 409);
      assert.equal(await revision(), start + 2, 'a refused write changes nothing');
      const batch = await t.request({
        method: 'POST',
        url: secretsUrl(own, env.slug, '/batch'),
        headers: own.admin.headers,
        body: {
          secrets: ['REVISION_B', 'REVISION_C'].map((name) => ({
            name,
            value: envelope(own, env.id, name, 'b'),
          })),
        },
      });
      assert.ok(batch.statusCode < 300, batch.body);
      assert.equal(await revision(), start + 3, 'a batch is one change');
      const removed = await t.request({
        method: 'DELETE',
        url: secretsUrl(own, env.slug, '/REVISION_A'),
        headers: own.admin.headers,
      });
      assert.equal(removed.statusCode, 204);
      assert.equal(await revision(), start + 4, 'a deleted secret');
    });

    if (dialect === 'postgres') {
      it('a failure of the statement sent with the commit rolls the whole transaction back', async () => {
        const db = t.testDb.db.kysely;
        const nameOf = async () =>
          (
            await db
              .selectFrom('projects')
              .select('name')
              .where('id', '=', project.id)
              .executeTakeFirstOrThrow()
          ).name;
        const before = await nameOf();
        await assert.rejects(
          inSharedProjectTransaction(
            db,
            project.id,
            (trx) =>
              trx
                .updateTable('projects')
                .set({ name: 'never committed' })
                .where('id', '=', project.id)
                .execute(),
            () => 'select 1 / 0',
          ),
          /division by zero/,
        );
        assert.equal(await nameOf(), before);
        // The connection went back to the pool outside any transaction.
        const after = await inSharedProjectTransaction(
          db,
          project.id,
          async (trx) => (await sql<{ one: number }>`select 1 as one`.execute(trx)).rows[0]!.one,
          () => 'select 2',
        );
        assert.equal(after, 1);
      });

      it('the revision bump sent with the commit takes only a well-formed environment id', () => {
        for (const bad of [
          "env_aaaaaaaaaaaaaaaaaaaa'; --",
          'env_short',
          'proj_aaaaaaaaaaaaaaaaaaaa',
        ])
          assert.throws(() => revisionBumpStatement(bad), /not an environment id/);
        assert.match(revisionBumpStatement(project.env.production.id), /^update environments /);
      });
    }

    // Only a real server shows a write waiting on the lock itself (PGlite and
    // SQLite hand their one connection to one transaction at a time anyway).
    if (dialect === 'postgres') {
      it('a write waits for a holder of the project lock (a re-key) and then reads what it committed', async (context) => {
        if (!POSTGRES_URL)
          return serviceMissing(context, 'A real PostgreSQL server (COFFER_TEST_DATABASE_URL)');
        const own = await projectWithVault(t);
        const env = own.env.development;
        const db = t.testDb.db.kysely;
        const rekey = await db.startTransaction().execute();
        await lockProject(rekey, 'postgres', own.id);
        await rekey
          .updateTable('projects')
          .set((eb) => ({ vault_epoch: eb('vault_epoch', '+', 1) }))
          .where('id', '=', own.id)
          .execute();
        let answered = false;
        const write = putSecret(t, own, env, 'DURING_REKEY', 'v', own.admin.headers).finally(
          () => (answered = true),
        );
        // The write is waiting on a lock before the "re-key" commits.
        for (;;) {
          assert.equal(answered, false, 'the write was answered while the project was locked');
          const { rows } = await sql<{ waiting: string }>`
            select count(*) as waiting from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'
          `.execute(db);
          if (Number(rows[0]!.waiting) > 0) break;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        await rekey.commit().execute();
        const res = await write;
        assert.equal(res.statusCode, 409);
        assert.deepEqual(errorOf(res).details, [
          { field: 'value', issue: 'stale_epoch', current_epoch: own.epoch + 1 },
        ]);
      });
    }

    it('rejects bad names, values, comments and unknown fields with 400 naming the field', async () => {
      const env = project.env.development;
      const cases: Array<[string, object, string, string]> = [
        ['1BAD', { value: envelope(project, env.id, 'X', 'v') }, 'name', 'invalid'],
        ['BAD-NAME', { value: envelope(project, env.id, 'X', 'v') }, 'name', 'invalid'],
        ['A'.repeat(257), { value: envelope(project, env.id, 'X', 'v') }, 'name', 'too_long'],
        ['PLAIN', { value: 'plaintext' }, 'value', 'invalid'],
        ['NOVALUE', {}, 'value', 'required'],
        [
          'LONG_COMMENT',
          { value: envelope(project, env.id, 'LONG_COMMENT', 'v'), comment: 'c'.repeat(501) },
          'comment',
          'too_long',
        ],
        [
          'EXTRA',
          { value: envelope(project, env.id, 'EXTRA', 'v'), owner: 'me' },
          'owner',
          'unknown',
        ],
      ];
      for (const [name, body, field, issue] of cases) {
        const res = await t.request({
          method: 'PUT',
          url: secretsUrl(project, env.slug, `/${name}`),
          headers: dev.headers,
          body,
        });
        assert.equal(res.statusCode, 400, `${name}: ${res.body}`);
        assert.equal(errorOf(res).code, 'validation_error');
        assert.ok(
          errorOf(res).details.some(
            (d: { field: string; issue: string }) => d.field === field && d.issue === issue,
          ),
          `${name}: ${JSON.stringify(errorOf(res).details)}`,
        );
      }
      // A name of exactly 256 characters is fine.
      const longName = `A${'_'.repeat(255)}`;
      expectStatus(await putSecret(t, project, env, longName, 'v', dev.headers), 201);
    });

    it('GET of a missing secret or environment is 404; a non-member gets 404 for the project', async () => {
      const missing = await t.request({
        method: 'GET',
        url: secretsUrl(project, 'staging', '/NOPE'),
        headers: dev.headers,
      });
      assert.equal(missing.statusCode, 404);
      assert.equal(errorOf(missing).code, 'not_found');
      assert.match(errorOf(missing).message, /Secret/);
      const noEnv = await t.request({
        method: 'GET',
        url: secretsUrl(project, 'qa', ''),
        headers: dev.headers,
      });
      assert.equal(noEnv.statusCode, 404);
      assert.match(errorOf(noEnv).message, /Environment/);
      const stranger = await (await import('../support/users.js')).signUp(t);
      for (const env of ['staging', 'qa']) {
        const res = await t.request({
          method: 'GET',
          url: secretsUrl(project, env, ''),
          headers: stranger.headers,
        });
        assert.equal(res.statusCode, 404);
        assert.match(errorOf(res).message, /Project/);
      }
      const anonymous = await t.request({ method: 'GET', url: secretsUrl(project, 'staging', '') });
      assert.equal(anonymous.statusCode, 401);
    });

    it('lists secrets with pagination and sort, values included for readers', async () => {
      const env = project.env.production;
      for (const name of ['C_KEY', 'A_KEY', 'B_KEY']) {
        t.clock.advance(1000);
        expectStatus(await putSecret(t, project, env, name, `value of ${name}`, dev.headers), 201);
      }
      const res = await t.request({
        method: 'GET',
        url: secretsUrl(project, 'production', '?sort=name&order=asc&per_page=2'),
        headers: dev.headers,
      });
      expectStatus(res, 200);
      const body = res.data as { data: Array<Record<string, string>>; pagination: unknown };
      assert.deepEqual(keysOf(body), ['data', 'pagination']);
      assert.deepEqual(body.pagination, { page: 1, per_page: 2, total: 3, total_pages: 2 });
      assert.deepEqual(
        body.data.map((s) => s.name),
        ['A_KEY', 'B_KEY'],
      );
      for (const s of body.data) {
        assert.deepEqual(keysOf(s), SECRET_KEYS);
        assert.equal(decrypt(env.id, s.name!, s.value!), `value of ${s.name}`);
      }
      // Default: created_at desc.
      const byDefault = await t.request({
        method: 'GET',
        url: secretsUrl(project, 'production'),
        headers: dev.headers,
      });
      assert.deepEqual(
        (dataOf(byDefault) as Array<{ name: string }>).map((s) => s.name),
        ['B_KEY', 'A_KEY', 'C_KEY'],
      );
      const page2 = await t.request({
        method: 'GET',
        url: secretsUrl(project, 'production', '?sort=name&order=asc&per_page=2&page=2'),
        headers: dev.headers,
      });
      assert.deepEqual(
        (dataOf(page2) as Array<{ name: string }>).map((s) => s.name),
        ['C_KEY'],
      );
      for (const [query, field, issue] of [
        ['per_page=101', 'per_page', 'maximum'],
        ['sort=value', 'sort', 'invalid'],
        ['order=up', 'order', 'invalid'],
        ['page=0', 'page', 'minimum'],
      ] as const) {
        const bad = await t.request({
          method: 'GET',
          url: secretsUrl(project, 'production', `?${query}`),
          headers: dev.headers,
        });
        assert.equal(bad.statusCode, 400, query);
        assert.deepEqual(
          errorOf(bad).details.map((d: { field: string; issue: string }) => [d.field, d.issue]),
          [[field, issue]],
        );
      }
    });

    it('keeps every version, lists them newest first, and rolls back by writing a new version', async () => {
      const env = project.env.staging;
      for (const v of ['first', 'second', 'third']) {
        await putSecret(t, project, env, 'ROTATING', v, dev.headers);
      }
      const versions = await t.request({
        method: 'GET',
        url: secretsUrl(project, 'staging', '/ROTATING/versions?sort=version'),
        headers: dev.headers,
      });
      expectStatus(versions, 200);
      const list = dataOf(versions) as Array<{ version: number; value: string; secret_id: string }>;
      assert.deepEqual(
        list.map((v) => v.version),
        [3, 2, 1],
      );
      for (const v of list) assert.deepEqual(keysOf(v), VERSION_KEYS);
      assert.deepEqual(
        list.map((v) => decrypt(env.id, 'ROTATING', v.value)),
        ['third', 'second', 'first'],
      );
      assert.deepEqual((versions.data as { pagination: unknown }).pagination, {
        page: 1,
        per_page: 20,
        total: 3,
        total_pages: 1,
      });

      const rolled = await t.request({
        method: 'POST',
        url: secretsUrl(project, 'staging', '/ROTATING/rollback'),
        headers: dev.headers,
        body: { version: 1 },
      });
      expectStatus(rolled, 200);
      assert.deepEqual(keysOf(dataOf(rolled)), SECRET_KEYS);
      assert.equal(dataOf(rolled).version, 4);
      assert.equal(decrypt(env.id, 'ROTATING', dataOf(rolled).value), 'first');

      const missingVersion = await t.request({
        method: 'POST',
        url: secretsUrl(project, 'staging', '/ROTATING/rollback'),
        headers: dev.headers,
        body: { version: 99 },
      });
      assert.equal(missingVersion.statusCode, 404);
      assert.deepEqual(errorOf(missingVersion).details, [{ field: 'version', issue: 'not_found' }]);

      const stale = await t.request({
        method: 'POST',
        url: secretsUrl(project, 'staging', '/ROTATING/rollback'),
        headers: dev.headers,
        body: { version: 2, expected_version: 3 },
      });
      assert.equal(stale.statusCode, 409);
      assert.deepEqual(errorOf(stale).details, [
        { field: 'expected_version', issue: 'stale', current_version: 4 },
      ]);
    });

    it('rollback to a version under an older epoch is 409 stale_epoch', async () => {
      const env = project.env.staging;
      const db = t.testDb.db.kysely;
      expectStatus(await putSecret(t, project, env, 'EPOCHAL', 'old', dev.headers), 201);
      // Simulate a re-key: the project moves to the next epoch (test-only shortcut).
      await db
        .updateTable('projects')
        .set({ vault_epoch: 2 })
        .where('id', '=', project.id)
        .execute();
      project.epoch = 2;
      expectStatus(await putSecret(t, project, env, 'EPOCHAL', 'new', dev.headers), 200);
      const res = await t.request({
        method: 'POST',
        url: secretsUrl(project, 'staging', '/EPOCHAL/rollback'),
        headers: dev.headers,
        body: { version: 1 },
      });
      assert.equal(res.statusCode, 409);
      assert.deepEqual(errorOf(res).details, [
        { field: 'version', issue: 'stale_epoch', current_epoch: 2 },
      ]);
      // A write under the old epoch is refused the same way.
      const oldEpochWrite = await t.request({
        method: 'PUT',
        url: secretsUrl(project, 'staging', '/EPOCHAL'),
        headers: dev.headers,
        body: { value: envelope(project, env.id, 'EPOCHAL', 'x', 1) },
      });
      assert.equal(oldEpochWrite.statusCode, 409);
      assert.deepEqual(errorOf(oldEpochWrite).details, [
        { field: 'value', issue: 'stale_epoch', current_epoch: 2 },
      ]);
    });

    it('DELETE removes the secret with all its versions (204, then 404)', async () => {
      const env = project.env.development;
      await putSecret(t, project, env, 'TEMPORARY', 'a', dev.headers);
      await putSecret(t, project, env, 'TEMPORARY', 'b', dev.headers);
      const del = await t.request({
        method: 'DELETE',
        url: secretsUrl(project, 'development', '/TEMPORARY'),
        headers: dev.headers,
      });
      assert.equal(del.statusCode, 204);
      assert.equal(del.body, '');
      const again = await t.request({
        method: 'DELETE',
        url: secretsUrl(project, 'development', '/TEMPORARY'),
        headers: dev.headers,
      });
      assert.equal(again.statusCode, 404);
      const versions = await t.testDb.db.kysely
        .selectFrom('secret_versions')
        .innerJoin('secrets', 'secrets.id', 'secret_versions.secret_id')
        .select('secret_versions.id')
        .where('secrets.name', '=', 'TEMPORARY')
        .execute();
      assert.equal(versions.length, 0);
      const orphans = await t.testDb.db.kysely
        .selectFrom('secret_versions')
        .select('id')
        .where('secret_id', 'not in', (eb) => eb.selectFrom('secrets').select('id'))
        .execute();
      assert.equal(orphans.length, 0);
    });

    describe('batch', () => {
      const batchUrl = () => secretsUrl(project, 'development', '/batch');
      const item = (name: string, value: string, extra: Record<string, unknown> = {}) => ({
        name,
        value: envelope(project, project.env.development.id, name, value),
        ...extra,
      });
      const names = async () =>
        (
          await t.testDb.db.kysely
            .selectFrom('secrets')
            .select('name')
            .where('environment_id', '=', project.env.development.id)
            .where('name', 'like', 'BATCH_%')
            .orderBy('name')
            .execute()
        ).map((r) => r.name);

      it('concurrent batches creating the same new names in opposite orders all succeed', async () => {
        const names = ['RACE_BATCH_A', 'RACE_BATCH_B', 'RACE_BATCH_C'];
        const batches = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            t.request({
              method: 'POST',
              url: batchUrl(),
              headers: dev.headers,
              body: {
                secrets: (i % 2 ? [...names].reverse() : names).map((n) => item(n, `v${i}`)),
              },
            }),
          ),
        );
        for (const res of batches) expectStatus(res, 200);
        const versions = await t.testDb.db.kysely
          .selectFrom('secrets')
          .select(['name', 'version'])
          .where('environment_id', '=', project.env.development.id)
          .where('name', 'in', names)
          .orderBy('name')
          .execute();
        assert.deepEqual(
          versions.map((r) => [r.name, r.version]),
          names.map((n) => [n, 6]),
        );
      });

      it('writes and deletes many secrets at once', async () => {
        expectStatus(
          await putSecret(t, project, project.env.development, 'BATCH_OLD', 'x', dev.headers),
          201,
        );
        expectStatus(
          await putSecret(t, project, project.env.development, 'BATCH_KEEP', 'x', dev.headers),
          201,
        );
        const res = await t.request({
          method: 'POST',
          url: batchUrl(),
          headers: dev.headers,
          body: {
            secrets: [
              item('BATCH_A', 'a', { comment: 'from .env' }),
              item('BATCH_KEEP', 'kept', { expected_version: 1 }),
            ],
            delete: ['BATCH_OLD'],
          },
        });
        expectStatus(res, 200);
        const result = dataOf(res);
        assert.deepEqual(keysOf(result), ['deleted', 'secrets']);
        assert.deepEqual(result.deleted, ['BATCH_OLD']);
        assert.deepEqual(
          result.secrets.map((s: { name: string; version: number }) => [s.name, s.version]),
          [
            ['BATCH_A', 1],
            ['BATCH_KEEP', 2],
          ],
        );
        for (const s of result.secrets) assert.deepEqual(keysOf(s), SECRET_KEYS);
        assert.deepEqual(await names(), ['BATCH_A', 'BATCH_KEEP']);
      });

      it('is all or nothing: one bad item writes nothing and names the item', async () => {
        const before = await names();
        const cases: Array<[object, number, string, string]> = [
          [
            {
              secrets: [
                item('BATCH_X1', 'x'),
                item('BATCH_X2', 'x'),
                { name: 'BATCH_X3', value: 'not-an-envelope' },
              ],
            },
            400,
            'secrets.2.value',
            'invalid',
          ],
          [
            { secrets: [item('BATCH_X1', 'x'), item('BATCH_A', 'x', { expected_version: 7 })] },
            409,
            'secrets.1.expected_version',
            'stale',
          ],
          [
            {
              secrets: [
                item('BATCH_X1', 'x'),
                {
                  name: 'BATCH_X2',
                  value: envelope(
                    project,
                    project.env.development.id,
                    'BATCH_X2',
                    'x',
                    project.epoch + 1,
                  ),
                },
              ],
            },
            409,
            'secrets.1.value',
            'stale_epoch',
          ],
          [
            { secrets: [item('BATCH_X1', 'x')], delete: ['BATCH_MISSING'] },
            404,
            'delete.0',
            'not_found',
          ],
          [
            { secrets: [item('BATCH_X1', 'x'), item('BATCH_X1', 'y')] },
            400,
            'secrets.1.name',
            'duplicate',
          ],
          [
            { secrets: [item('BATCH_X1', 'x')], delete: ['BATCH_X1'] },
            400,
            'delete.0',
            'duplicate',
          ],
          [{ secrets: [] }, 400, 'secrets', 'too_few'],
          [{ secrets: [item('BATCH_X1', 'x')], extra: true }, 400, 'extra', 'unknown'],
        ];
        for (const [body, status, field, issue] of cases) {
          const res = await t.request({
            method: 'POST',
            url: batchUrl(),
            headers: dev.headers,
            body,
          });
          assert.equal(res.statusCode, status, `${field}: ${res.body}`);
          assert.ok(
            errorOf(res).details.some(
              (d: { field: string; issue: string }) => d.field === field && d.issue === issue,
            ),
            `${field}: ${JSON.stringify(errorOf(res).details)}`,
          );
          assert.deepEqual(await names(), before);
        }
      });

      it('accepts up to 1000 items and refuses 1001', async () => {
        const many = Array.from({ length: 1001 }, (_, i) => `BATCH_N${i}`);
        const tooMany = await t.request({
          method: 'POST',
          url: batchUrl(),
          headers: dev.headers,
          body: { secrets: [], delete: many },
        });
        assert.equal(tooMany.statusCode, 400);
        assert.equal(errorOf(tooMany).details[0].issue, 'too_many');
        // 1000 small secrets fit within the default body limit.
        const secrets = many.slice(0, 1000).map((name) => item(name, 'v'));
        const res = await t.request({
          method: 'POST',
          url: batchUrl(),
          headers: dev.headers,
          body: { secrets },
        });
        expectStatus(res, 200);
        assert.equal(dataOf(res).secrets.length, 1000);
        const count = await t.request({
          method: 'GET',
          url: secretsUrl(project, 'development', '?per_page=1'),
          headers: dev.headers,
        });
        assert.ok((count.data as { pagination: { total: number } }).pagination.total >= 1000);
      });
    });
  });
}
