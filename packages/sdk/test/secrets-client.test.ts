import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  DotenvSyntaxError,
  createApiKey,
  createEnvironment,
  createProjectWithVault,
  deleteEnvironment,
  deleteSecret,
  exportSecrets,
  fromCredential,
  getEnvironment,
  getSecret,
  grantMember,
  history,
  importSecrets,
  listEnvironments,
  listSecretEnvelopes,
  listSecrets,
  openVault,
  parseDotenv,
  parseJsonSecrets,
  ready,
  rekey,
  rollback,
  setSecret,
  updateEnvironment,
  type SecretScope,
} from '../src/index.js';

/** The stored text: these tests are about what is stored, not about resolving references. */
const RAW = { raw: true } as const;
import { parse as parseYaml } from 'yaml';
import { DIALECTS } from '../../server/test/support/db.js';
import {
  join,
  newUser,
  ownFingerprint,
  startServer,
  type Member,
  type Server,
} from './vault-support.js';
import { rejectsWith } from './support/api-errors.js';

for (const dialect of DIALECTS) {
  describe(`SDK environments and decrypted secrets (${dialect})`, () => {
    let server: Server;
    let admin: Member;
    let developer: Member;
    let projectId: string;
    let adminScope: SecretScope;
    let devScope: SecretScope;

    before(async () => {
      await ready();
      server = await startServer(dialect);
      admin = await newUser(server);
      developer = await newUser(server);
      projectId = (await createProjectWithVault(admin.client, admin.keys, { name: 'Shop' })).id;
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      await join(admin, developer, projectId, 'developer');
      await grantMember(adminVault, developer.id, {
        expectedFingerprint: ownFingerprint(developer),
      });
      adminScope = { client: admin.client, projectId, keys: adminVault };
      devScope = {
        client: developer.client,
        projectId,
        keys: await openVault(developer.client, projectId, developer.keys),
      };
    });
    after(async () => server.close());

    it('manages environments with typed calls', async () => {
      const page = await listEnvironments(admin.client, projectId, { sort: 'name', order: 'asc' });
      assert.deepEqual(
        page.data.map((e) => e.slug),
        ['development', 'production', 'staging'],
      );
      const qa = await createEnvironment(developer.client, projectId, { name: 'QA' });
      assert.equal(qa.slug, 'qa');
      const renamed = await updateEnvironment(developer.client, projectId, 'qa', {
        name: 'Quality',
        slug: 'quality',
      });
      assert.equal(renamed.id, qa.id);
      assert.equal((await getEnvironment(admin.client, projectId, 'quality')).id, qa.id);
      await rejectsWith(
        createEnvironment(admin.client, projectId, { name: 'x', slug: 'quality' }),
        409,
        'already_exists',
      );
      await rejectsWith(
        deleteEnvironment(developer.client, projectId, 'quality'),
        403,
        'forbidden',
      );
      await deleteEnvironment(admin.client, projectId, 'quality');
      await rejectsWith(getEnvironment(admin.client, projectId, qa.id), 404, 'not_found');
    });

    it('a developer sets a secret by slug and another member reads it decrypted', async () => {
      const written = await setSecret(devScope, 'staging', 'DATABASE_URL', 'postgres://db', {
        comment: 'main db',
      });
      assert.equal(written.version, 1);
      assert.equal(written.value, 'postgres://db');
      const read = await getSecret(adminScope, 'staging', 'DATABASE_URL');
      assert.equal(read.value, 'postgres://db');
      assert.equal(read.comment, 'main db');
      assert.equal(read.updated_by, developer.id);
      // What travelled and is stored is an envelope, never the value.
      const raw = await listSecretEnvelopes(admin.client, projectId, 'staging');
      assert.match(raw.data[0]!.value!, /^v1\.xc20p\.1\./);
      assert.ok(!JSON.stringify(raw).includes('postgres://db'));
    });

    it('expectedVersion guards against lost updates', async () => {
      await setSecret(devScope, 'development', 'COUNTER', '1', { expectedVersion: 0 });
      await rejectsWith(
        setSecret(adminScope, 'development', 'COUNTER', '2', { expectedVersion: 0 }),
        409,
        'version_conflict',
      );
      const second = await setSecret(adminScope, 'development', 'COUNTER', '2', {
        expectedVersion: 1,
      });
      assert.equal(second.version, 2);
    });

    it('history is decrypted newest first, and rollback brings an old value back', async () => {
      for (const v of ['a', 'b', 'c']) await setSecret(devScope, 'staging', 'ROTATED', v);
      assert.deepEqual(
        (await history(devScope, 'staging', 'ROTATED')).map((v) => [v.version, v.value]),
        [
          [3, 'c'],
          [2, 'b'],
          [1, 'a'],
        ],
      );
      const restored = await rollback(devScope, 'staging', 'ROTATED', 1);
      assert.equal(restored.version, 4);
      assert.equal(restored.value, 'a');
      assert.equal((await getSecret(adminScope, 'staging', 'ROTATED')).value, 'a');
    });

    it('imports a .env in one batch and exports it in every format', async () => {
      const text = [
        '# imported',
        'export API_URL=https://api.example.com',
        'QUOTED="line one\\nline two"',
        "LITERAL='${NOT_EXPANDED}'",
        'PRIVATE_KEY="-----BEGIN-----',
        'abc',
        '-----END-----"',
      ].join('\n');
      const result = await importSecrets(devScope, 'production', text, 'dotenv');
      assert.deepEqual(result.created.sort(), ['API_URL', 'LITERAL', 'PRIVATE_KEY', 'QUOTED']);
      const expected = {
        API_URL: 'https://api.example.com',
        LITERAL: '${NOT_EXPANDED}',
        PRIVATE_KEY: '-----BEGIN-----\nabc\n-----END-----',
        QUOTED: 'line one\nline two',
      };
      // The text is kept as written; read for use, ${NOT_EXPANDED} is a reference to a
      // secret this environment does not hold, and the read names it.
      assert.deepEqual(await listSecrets(adminScope, 'production', RAW), expected);
      await assert.rejects(
        listSecrets(adminScope, 'production'),
        /^SecretReferenceError: LITERAL: \$\{NOT_EXPANDED\}: this environment has no secret NOT_EXPANDED$/,
      );

      const again = await importSecrets(
        devScope,
        'production',
        '{"API_URL": "https://v2"}',
        'json',
      );
      assert.deepEqual(again, { created: [], updated: ['API_URL'] });
      const current = { ...expected, API_URL: 'https://v2' };

      // python-dotenv would expand ${NOT_EXPANDED}: the file is written for npm dotenv's reading.
      await assert.rejects(exportSecrets(adminScope, 'production', 'dotenv', RAW), /LITERAL/);
      const asEnv = await exportSecrets(adminScope, 'production', 'dotenv', {
        ...RAW,
        dialect: 'node',
      });
      assert.deepEqual(
        Object.fromEntries(parseDotenv(asEnv, { dialect: 'node' }).map((e) => [e.name, e.value])),
        current,
      );
      const asJson = await exportSecrets(adminScope, 'production', 'json', RAW);
      assert.deepEqual(
        Object.fromEntries(parseJsonSecrets(asJson).map((e) => [e.name, e.value])),
        current,
      );
      assert.deepEqual(
        parseYaml(await exportSecrets(adminScope, 'production', 'yaml', RAW)),
        current,
      );
      assert.match(
        await exportSecrets(adminScope, 'production', 'shell', RAW),
        /^export API_URL='https:\/\/v2'$/m,
      );
    });

    it('a malformed import writes nothing and names the lines', async () => {
      await assert.rejects(
        importSecrets(devScope, 'production', 'GOOD=1\nBAD LINE\n2X=3', 'dotenv'),
        (err: unknown) => {
          assert.ok(err instanceof DotenvSyntaxError);
          assert.deepEqual(
            err.issues.map((i) => i.line),
            [2, 3],
          );
          return true;
        },
      );
      assert.ok(!('GOOD' in (await listSecrets(adminScope, 'production', RAW))));
    });

    it('deleteSecret removes a secret', async () => {
      await setSecret(devScope, 'development', 'SHORT_LIVED', 'x');
      await deleteSecret(developer.client, projectId, 'development', 'SHORT_LIVED');
      await rejectsWith(getSecret(devScope, 'development', 'SHORT_LIVED'), 404, 'not_found');
    });

    it('after a re-key, a writer holding the old key gets stale_epoch, refreshes and succeeds', async () => {
      // The developer's session still holds the epoch-1 key.
      assert.equal((await devScope.keys.environmentKey(projectId, 'x')).epoch, 1);
      await rekey(admin.client, projectId, admin.keys);
      const written = await setSecret(devScope, 'staging', 'AFTER_REKEY', 'fresh');
      assert.equal(written.value, 'fresh');
      const raw = await listSecretEnvelopes(admin.client, projectId, 'staging', { sort: 'name' });
      const envelope = raw.data.find((s) => s.name === 'AFTER_REKEY')!.value!;
      assert.match(envelope, /^v1\.xc20p\.2\./);
      // Everything written before the re-key still decrypts under the new key.
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      const scope = { client: admin.client, projectId, keys: adminVault };
      assert.equal((await getSecret(scope, 'staging', 'DATABASE_URL')).value, 'postgres://db');
      assert.equal((await listSecrets(scope, 'staging')).AFTER_REKEY, 'fresh');
    });

    it('a staging-scoped API key reads staging through the same functions, never production', async () => {
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      const { credential } = await createApiKey(adminVault, {
        name: 'ci reader',
        role: 'developer',
        scopes: { staging: 'read' },
      });
      const pipeline = await fromCredential(server.baseUrl, credential);
      const scope = { client: pipeline.client, projectId, keys: pipeline.vault };
      assert.equal((await listSecrets(scope, 'staging')).DATABASE_URL, 'postgres://db');
      await rejectsWith(getSecret(scope, 'production', 'API_URL'), 403, 'forbidden');
      await assert.rejects(listSecrets(scope, 'production'), /not read values/);
    });
  });
}
