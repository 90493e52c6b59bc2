import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  CofferApiError,
  apiPath,
  createApiKey,
  createCiToken,
  createProjectWithVault,
  decryptSecretValue,
  deriveEnvironmentKey,
  encryptSecretValue,
  fromCredential,
  getVault,
  grantMember,
  isStaleEpoch,
  openVault,
  ready,
  rekey,
  setSecret,
  toBase64url,
  type RekeyProgress,
  type VaultSession,
} from '../src/index.js';
import { DIALECTS } from '../../server/test/support/db.js';
import {
  environmentIds,
  join,
  newUser,
  ownFingerprint,
  readSecret,
  startServer,
  writeSecret,
  type Member,
  type Server,
} from './vault-support.js';

/** Every plaintext this test stores carries this marker, so a scan of the database can look for it. */
const MARKER = 'PLAINTEXT-7f3a';
const SECRETS = 2_000;
const VERSIONS_EACH = 5; // 10,000 stored versions

function id(prefix: string): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let out = '';
  for (const byte of randomBytes(40)) if (byte < 248 && out.length < 20) out += alphabet[byte % 62];
  return `${prefix}_${out}`;
}

for (const dialect of DIALECTS) {
  describe(`re-key after removing a member, 10,000 versions (${dialect})`, () => {
    let server: Server;
    let admin: Member;
    let developer: Member;
    let leaver: Member;
    let leaverMemberId: string;
    let leaverProjectKey: Uint8Array;
    let projectId: string;
    let env: Record<string, string>;
    let apiKeyCredential: string;
    let ciCredential: string;
    let developerVault: VaultSession;

    before(async () => {
      await ready();
      server = await startServer(dialect);
      [admin, developer, leaver] = [
        await newUser(server),
        await newUser(server),
        await newUser(server),
      ];
      projectId = (await createProjectWithVault(admin.client, admin.keys, { name: 'Big' })).id;
      env = await environmentIds(admin.client, projectId);
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      for (const member of [developer, leaver]) {
        const memberId = await join(admin, member, projectId, 'developer');
        if (member === leaver) leaverMemberId = memberId;
        await grantMember(adminVault, member.id, { expectedFingerprint: ownFingerprint(member) });
      }
      developerVault = await openVault(developer.client, projectId, developer.keys);
      const leaverVault = await openVault(leaver.client, projectId, leaver.keys);
      // What a departing member could have copied: the project key itself.
      leaverProjectKey = Uint8Array.from(leaverVault.projectKey().key);

      apiKeyCredential = (
        await createApiKey(adminVault, {
          name: 'staging',
          role: 'developer',
          scopes: { staging: 'read' },
        })
      ).credential;
      ciCredential = (await createCiToken(adminVault, { scopes: { production: 'read' } }))
        .credential;

      // Real envelopes written straight into the tables: 2,000 secrets × 5 versions.
      const { key: pmk, epoch } = adminVault.projectKey();
      const environments = [env.development!, env.staging!, env.production!]; // BULK_1 is in staging
      const ek = new Map(
        environments.map((e) => [e, deriveEnvironmentKey(pmk, projectId, e, epoch)]),
      );
      const now = new Date().toISOString();
      const secrets = [];
      const versions = [];
      for (let i = 0; i < SECRETS; i++) {
        const environmentId = environments[i % environments.length]!;
        const name = `BULK_${i}`;
        const secretId = id('sec');
        let value = '';
        for (let v = 1; v <= VERSIONS_EACH; v++) {
          value = encryptSecretValue({
            environmentKey: ek.get(environmentId)!,
            projectId,
            environmentId,
            name,
            epoch,
            value: `${MARKER}-${i}-${v}`,
          });
          versions.push({
            id: id('ver'),
            secret_id: secretId,
            project_id: projectId,
            environment_id: environmentId,
            version: v,
            value,
            epoch,
            created_at: now,
            created_by: admin.id,
          });
        }
        secrets.push({
          id: secretId,
          project_id: projectId,
          environment_id: environmentId,
          name,
          version: VERSIONS_EACH,
          value,
          epoch,
          comment: '',
          created_at: now,
          updated_at: now,
          updated_by: admin.id,
        });
      }
      const db = server.t.testDb.db.kysely;
      for (let i = 0; i < secrets.length; i += 500)
        await db
          .insertInto('secrets')
          .values(secrets.slice(i, i + 500))
          .execute();
      for (let i = 0; i < versions.length; i += 500)
        await db
          .insertInto('secret_versions')
          .values(versions.slice(i, i + 500))
          .execute();

      await writeSecret(adminVault, env.staging!, 'DATABASE_URL', `${MARKER}-staging-db`);
      await writeSecret(adminVault, env.production!, 'API_TOKEN', `${MARKER}-production-token`);
      adminVault.forget();
    });
    after(async () => server.close());

    it('removing a developer recommends a re-key', async () => {
      await admin.client.request(
        'DELETE',
        apiPath`/v1/projects/${projectId}/members/${leaverMemberId}`,
      );
      const status = await getVault(admin.client, projectId);
      assert.equal(status.rekey_recommended, true);
    });

    it('re-keys every version with progress; members and tokens still decrypt', async () => {
      const progress: RekeyProgress[] = [];
      const result = await rekey(admin.client, projectId, admin.keys, {
        onProgress: (p) => progress.push(p),
      });
      assert.deepEqual(result, {
        epoch: 2,
        versions: SECRETS * VERSIONS_EACH + 2,
        grants: 2,
        token_grants: 2,
      });
      const phases = [...new Set(progress.map((p) => p.phase))];
      assert.deepEqual(phases, ['snapshot', 'reencrypt', 'grants', 'commit', 'done']);
      const last = progress.filter((p) => p.phase === 'reencrypt').at(-1)!;
      assert.equal(last.done, SECRETS * VERSIONS_EACH + 2);

      const status = await getVault(admin.client, projectId);
      assert.equal(status.epoch, 2);
      assert.equal(status.rekey_recommended, false);

      const adminVault = await openVault(admin.client, projectId, admin.keys);
      assert.equal(
        await readSecret(adminVault, env.staging!, 'BULK_1'),
        `${MARKER}-1-${VERSIONS_EACH}`,
      );
      await developerVault.refresh();
      assert.equal(
        await readSecret(developerVault, env.staging!, 'DATABASE_URL'),
        `${MARKER}-staging-db`,
      );
      const apiKey = await fromCredential(server.baseUrl, apiKeyCredential);
      assert.equal(
        await readSecret(apiKey.vault, env.staging!, 'DATABASE_URL'),
        `${MARKER}-staging-db`,
      );
      const ci = await fromCredential(server.baseUrl, ciCredential);
      assert.equal(
        await readSecret(ci.vault, env.production!, 'API_TOKEN'),
        `${MARKER}-production-token`,
      );

      // History was re-encrypted too.
      const history = await adminVault.client.requestPage<{ version: number; value: string }>(
        'GET',
        apiPath`/v1/projects/${projectId}/environments/${env.staging!}/secrets/BULK_1/versions`,
      );
      const { key, epoch } = await adminVault.environmentKey(env.staging!);
      const values = history.data.map((v) =>
        decryptSecretValue({
          environmentKey: key,
          projectId,
          environmentId: env.staging!,
          name: 'BULK_1',
          epoch,
          envelope: v.value,
        }),
      );
      assert.deepEqual(
        values.sort(),
        Array.from({ length: VERSIONS_EACH }, (_, i) => `${MARKER}-1-${i + 1}`),
      );
    });

    it('the removed member’s copy of the old project key decrypts nothing now stored', async () => {
      const db = server.t.testDb.db.kysely;
      const stored = [
        ...(await db
          .selectFrom('secret_versions as v')
          .innerJoin('secrets as s', 's.id', 'v.secret_id')
          .select(['v.environment_id', 's.name', 'v.epoch', 'v.value'])
          .where('v.project_id', '=', projectId)
          .execute()),
        ...(await db
          .selectFrom('secrets')
          .select(['environment_id', 'name', 'epoch', 'value'])
          .where('project_id', '=', projectId)
          .execute()),
      ];
      assert.ok(stored.length > SECRETS * VERSIONS_EACH);
      let opened = 0;
      for (const row of stored) {
        assert.equal(row.epoch, 2);
        for (const epoch of [1, 2]) {
          try {
            decryptSecretValue({
              environmentKey: deriveEnvironmentKey(
                leaverProjectKey,
                projectId,
                row.environment_id,
                epoch,
              ),
              projectId,
              environmentId: row.environment_id,
              name: row.name,
              epoch,
              envelope: row.value,
            });
            opened++;
          } catch {
            // expected: the old key opens nothing
          }
        }
      }
      assert.equal(opened, 0);
      // And the leaver's session no longer reaches the project at all.
      await assert.rejects(openVault(leaver.client, projectId, leaver.keys), (e: unknown) => {
        assert.ok(e instanceof CofferApiError);
        assert.equal(e.status, 404);
        return true;
      });
    });

    it('a write under the old epoch gets 409 stale_epoch and succeeds after refreshing the key', async () => {
      const stale = await openVault(developer.client, projectId, developer.keys);
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      await rekey(admin.client, projectId, admin.keys);
      await assert.rejects(writeSecret(stale, env.staging!, 'RACE', `${MARKER}-race`), (e) =>
        isStaleEpoch(e),
      );
      await stale.refresh();
      assert.equal(stale.epoch, 3);
      await writeSecret(stale, env.staging!, 'RACE', `${MARKER}-race`);
      // The secrets client does the same by itself: refresh once, write again.
      const behind = await openVault(developer.client, projectId, developer.keys);
      await rekey(admin.client, projectId, admin.keys);
      const written = await setSecret(behind.scope, 'staging', 'RACE', `${MARKER}-race`);
      assert.equal(written.version, 2);
      assert.equal(behind.epoch, 4);
      await adminVault.refresh();
      assert.equal(await readSecret(adminVault, env.staging!, 'RACE'), `${MARKER}-race`);
    });

    it('writes racing a re-key either land before it (re-encrypted) or retry under the new epoch', async () => {
      const writer = await openVault(developer.client, projectId, developer.keys);
      const write = async (name: string) => {
        for (let attempt = 0; attempt < 5; attempt++) {
          try {
            return await writeSecret(writer, env.production!, name, `${MARKER}-${name}`);
          } catch (error) {
            if (!isStaleEpoch(error)) throw error;
            await writer.refresh();
          }
        }
        throw new Error('write never succeeded');
      };
      const [result] = await Promise.all([
        rekey(admin.client, projectId, admin.keys),
        write('CONCURRENT_A'),
        write('CONCURRENT_B'),
      ]);
      assert.equal(result.epoch, 5);
      const reader = await openVault(admin.client, projectId, admin.keys);
      for (const name of ['CONCURRENT_A', 'CONCURRENT_B'])
        assert.equal(await readSecret(reader, env.production!, name), `${MARKER}-${name}`);
    });

    it('the database holds no plaintext value and no project or environment key', async () => {
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      const keys: Uint8Array[] = [leaverProjectKey, adminVault.projectKey().key];
      for (const e of Object.values(env)) {
        keys.push((await adminVault.environmentKey(e)).key);
        for (const epoch of [1, 2, 3, 4, 5])
          keys.push(deriveEnvironmentKey(leaverProjectKey, projectId, e, epoch));
      }
      const needles = [
        MARKER,
        ...keys.flatMap((k) => [
          toBase64url(k),
          Buffer.from(k).toString('hex'),
          Buffer.from(k).toString('base64'),
        ]),
      ];
      const db = server.t.testDb.db;
      const tables =
        db.dialect === 'sqlite'
          ? (
              await db.kysely
                .selectFrom('sqlite_master' as never)
                .select('name' as never)
                .where('type' as never, '=', 'table' as never)
                .execute()
            ).map((r) => (r as { name: string }).name)
          : (
              await db.kysely
                .selectFrom('information_schema.tables' as never)
                .select('table_name as name' as never)
                .where('table_schema' as never, '=', 'public' as never)
                .execute()
            ).map((r) => (r as { name: string }).name);
      let cells = 0;
      for (const table of tables) {
        const rows = (await db.kysely
          .selectFrom(table as never)
          .selectAll()
          .execute()) as Record<string, unknown>[];
        for (const row of rows) {
          for (const [column, value] of Object.entries(row)) {
            if (typeof value !== 'string') continue;
            cells++;
            for (const needle of needles) {
              assert.ok(!value.includes(needle), `${table}.${column} contains a plaintext or key`);
            }
          }
        }
      }
      assert.ok(cells > 20_000, 'the scan saw the stored envelopes');
    });
  });
}
