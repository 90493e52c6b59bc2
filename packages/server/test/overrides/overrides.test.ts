import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decryptOverride, deriveOverrideKey, encryptOverride, ready } from '@coffer/sdk';
import { startTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/db.js';
import { as, dataOf, errorOf, expectStatus, type Caller } from '../support/http.js';
import { addMember } from '../support/projects.js';
import type { TestUser } from '../support/users.js';
import { projectWithVault, type VaultProject } from '../support/vault.js';
import { createToken } from '../secrets/fixtures.js';

const VALUE = 'postgres://me@localhost/my-own-db';

for (const dialect of DIALECTS) {
  describe(`personal overrides (${dialect})`, () => {
    let t: TestApp;
    let project: VaultProject;
    let dev: TestUser;
    let devMember: string;
    let other: TestUser;
    let viewer: TestUser;

    before(async () => {
      await ready();
      t = await startTestApp(dialect);
      project = await projectWithVault(t);
      ({ user: dev, memberId: devMember } = await addMember(
        t,
        project.admin,
        project.id,
        'developer',
      ));
      other = (await addMember(t, project.admin, project.id, 'developer')).user;
      viewer = (await addMember(t, project.admin, project.id, 'viewer')).user;
    });
    after(async () => t.close());

    const sealed = (user: TestUser, env: { id: string }, name: string, value = VALUE) =>
      encryptOverride({
        overrideKey: deriveOverrideKey(user.keys.encryption.secretKey, user.id),
        userId: user.id,
        projectId: project.id,
        environmentId: env.id,
        name,
        value,
      });
    const url = (env: string, name: string) =>
      `/v1/projects/${project.id}/environments/${env}/overrides/${name}`;
    const put = (caller: Caller, env: string, name: string, value: string) =>
      as(t, caller, 'PUT', url(env, name), { value });
    const mine = (caller: Caller, query = '') =>
      as(t, caller, 'GET', `/v1/projects/${project.id}/overrides${query}`);

    it('a member sets, replaces, lists and removes their own override; only they can open it', async () => {
      const staging = project.env.staging;
      const first = dataOf(
        await put(dev, 'staging', 'DATABASE_URL', sealed(dev, staging, 'DATABASE_URL')),
        201,
      );
      assert.equal(first.name, 'DATABASE_URL');
      assert.equal(first.environment_id, staging.id);
      const second = dataOf(
        await put(
          dev,
          staging.id,
          'DATABASE_URL',
          sealed(dev, staging, 'DATABASE_URL', `${VALUE}-v2`),
        ),
        200,
      );
      assert.equal(second.id, first.id);
      const listed = dataOf(await mine(dev, '?environment=staging'));
      assert.deepEqual(
        listed.map((o: { name: string }) => o.name),
        ['DATABASE_URL'],
      );
      const key = deriveOverrideKey(dev.keys.encryption.secretKey, dev.id);
      const binding = {
        userId: dev.id,
        projectId: project.id,
        environmentId: staging.id,
        name: 'DATABASE_URL',
      };
      assert.equal(
        decryptOverride({ ...binding, overrideKey: key, envelope: listed[0].value }),
        `${VALUE}-v2`,
      );
      // Another member's key, or the envelope moved to another name, opens nothing.
      const otherKey = deriveOverrideKey(other.keys.encryption.secretKey, other.id);
      assert.throws(() =>
        decryptOverride({ ...binding, overrideKey: otherKey, envelope: listed[0].value }),
      );
      assert.throws(() =>
        decryptOverride({ ...binding, name: 'OTHER', overrideKey: key, envelope: listed[0].value }),
      );
      // Nobody else sees it.
      assert.deepEqual(dataOf(await mine(other)), []);
      assert.deepEqual(dataOf(await mine(project.admin)), []);
      // Nowhere in the database, in any table, is the plaintext.
      const tables = await t.testDb.db.kysely.introspection.getTables();
      assert.ok(tables.some((table) => table.name === 'personal_overrides'));
      for (const table of tables) {
        const rows = await t.testDb.db.kysely
          .selectFrom(table.name as never)
          .selectAll()
          .execute();
        const text = JSON.stringify(rows);
        assert.ok(!text.includes('my-own-db'), `plaintext in ${table.name}`);
      }
      expectStatus(await as(t, dev, 'DELETE', url('staging', 'DATABASE_URL')), 204);
      errorOf(await as(t, dev, 'DELETE', url('staging', 'DATABASE_URL')), 404, 'not_found');
      assert.deepEqual(dataOf(await mine(dev)), []);
    });

    it('tokens never see or write overrides; viewers cannot override; outsiders get 404', async () => {
      const staging = project.env.staging;
      const apiKey = await createToken(
        t,
        project,
        'api_key',
        { [staging.id]: 'read_write' },
        'admin',
      );
      const ci = await createToken(t, project, 'ci_token', { [staging.id]: 'read_write' });
      for (const token of [apiKey.headers, ci.headers]) {
        errorOf(await mine(token), 403, 'forbidden');
        errorOf(await put(token, 'staging', 'A', sealed(dev, staging, 'A')), 403, 'forbidden');
        errorOf(await as(t, token, 'DELETE', url('staging', 'A')), 403, 'forbidden');
      }
      const refused = errorOf(
        await put(viewer, 'staging', 'A', sealed(viewer, staging, 'A')),
        403,
        'forbidden',
      );
      assert.match(refused.message, /Viewers/);
      const outsider = (await projectWithVault(t)).admin;
      errorOf(
        await put(outsider, 'staging', 'A', sealed(outsider, staging, 'A')),
        404,
        'not_found',
      );
      errorOf(await mine(outsider), 404, 'not_found');
      errorOf(await put(dev, 'nowhere', 'A', sealed(dev, staging, 'A')), 404, 'not_found');
    });

    it('bad input is a Form A 400 and writes nothing', async () => {
      for (const value of ['plaintext', 'v1.xc20p.1.x.y', '', 'v1.ov.short.x']) {
        errorOf(await put(dev, 'staging', 'A', value), 400, 'validation_error');
      }
      errorOf(
        await put(dev, 'staging', '1BAD', sealed(dev, project.env.staging, 'A')),
        400,
        'validation_error',
      );
      errorOf(
        await as(t, dev, 'PUT', url('staging', 'A'), {
          value: sealed(dev, project.env.staging, 'A'),
          extra: 1,
        }),
        400,
        'validation_error',
      );
      assert.deepEqual(dataOf(await mine(dev)), []);
    });

    it('admins list who overrides what, names only; a developer cannot list another member; removal deletes them', async () => {
      const prod = project.env.production;
      dataOf(await put(dev, 'production', 'API_TOKEN', sealed(dev, prod, 'API_TOKEN')), 201);
      const namesUrl = `/v1/projects/${project.id}/members/${devMember}/overrides`;
      const names = dataOf(await as(t, project.admin, 'GET', namesUrl));
      assert.deepEqual(
        names.map((n: Record<string, unknown>) => Object.keys(n).sort()),
        [['environment_id', 'environment_slug', 'name', 'updated_at']],
      );
      assert.equal(names[0].name, 'API_TOKEN');
      assert.equal(names[0].environment_slug, 'production');
      assert.equal(
        dataOf(await as(t, dev, 'GET', namesUrl)).length,
        1,
        'the member may see their own names',
      );
      errorOf(await as(t, other, 'GET', namesUrl), 403, 'forbidden');
      errorOf(
        await as(t, project.admin, 'GET', `/v1/projects/${project.id}/members/mbr_nope/overrides`),
        404,
        'not_found',
      );

      expectStatus(
        await as(t, project.admin, 'DELETE', `/v1/projects/${project.id}/members/${devMember}`),
        204,
      );
      const left = await t.testDb.db.kysely
        .selectFrom('personal_overrides')
        .select('id')
        .where('user_id', '=', dev.id)
        .execute();
      assert.deepEqual(left, [], 'removed with the member');
      const audit = await t.testDb.db.kysely
        .selectFrom('audit_events')
        .select(['action', 'data'])
        .where('action', 'like', 'override.%')
        .execute();
      assert.ok(audit.length >= 3);
      for (const row of audit)
        assert.doesNotMatch(row.data, /v1\.ov\.|my-own-db/, 'no value in the audit log');
    });
  });
}
