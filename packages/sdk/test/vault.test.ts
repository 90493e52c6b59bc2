import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  apiPath,
  createApiKey,
  createCiToken,
  createProjectWithVault,
  decryptSecretValue,
  fingerprint,
  fromCredential,
  getSecret,
  grantMember,
  isCryptoError,
  isVaultError,
  listApiKeys,
  openVault,
  pendingGrants,
  ready,
  revokeApiKey,
  revokeCiToken,
  setSecret,
  type VaultSession,
} from '../src/index.js';
import { DIALECTS } from '../../server/test/support/db.js';
import { TestClock } from '../../server/test/support/app.js';
import {
  environmentIds,
  join,
  newUser,
  readSecret,
  startServer,
  writeSecret,
  type Member,
  type Server,
} from './vault-support.js';
import { rejectsWith } from './support/api-errors.js';

for (const dialect of DIALECTS) {
  describe(`SDK vault operations (${dialect})`, () => {
    let server: Server;
    let clock: TestClock;
    let admin: Member;
    let developer: Member;
    let projectId: string;
    let env: Record<string, string>;
    let adminVault: VaultSession;

    before(async () => {
      await ready();
      clock = new TestClock();
      server = await startServer(dialect, { clock });
      admin = await newUser(server);
      developer = await newUser(server);
      const project = await createProjectWithVault(admin.client, admin.keys, { name: 'Payments' });
      projectId = project.id;
      env = await environmentIds(admin.client, projectId);
      adminVault = await openVault(admin.client, projectId, admin.keys);
    });
    after(async () => server.close());

    it('creates a project whose vault is ready: the admin derives keys and round-trips a secret', async () => {
      assert.equal(adminVault.epoch, 1);
      assert.deepEqual(adminVault.recipient, { type: 'user', id: admin.id });
      await writeSecret(adminVault, env.staging!, 'DATABASE_URL', 'postgres://staging-db');
      assert.equal(
        await readSecret(adminVault, env.staging!, 'DATABASE_URL'),
        'postgres://staging-db',
      );
    });

    it('invite → accept → grant (fingerprint confirmed) → the new developer decrypts', async () => {
      await join(admin, developer, projectId, 'developer');
      const devVault = await openVault(developer.client, projectId, developer.keys);
      await assert.rejects(devVault.environmentKey(env.staging!), (e) =>
        isVaultError(e, 'no_grant'),
      );

      const pending = await pendingGrants(adminVault);
      assert.deepEqual(
        pending.map((p) => p.user_id),
        [developer.id],
      );
      const expected = fingerprint(
        developer.keys.encryption.publicKey,
        developer.keys.signing.publicKey,
      );
      assert.equal(pending[0]!.fingerprint, expected);
      await assert.rejects(
        grantMember(adminVault, developer.id, { expectedFingerprint: '0000 0000 0000 0000 0000' }),
        (e) => isVaultError(e, 'fingerprint_mismatch'),
      );
      const granted = await grantMember(adminVault, developer.id, {
        expectedFingerprint: expected.toLowerCase(),
      });
      assert.deepEqual(granted, { userId: developer.id, fingerprint: expected, epoch: 1 });

      // The vault session is the secrets client's key provider.
      await devVault.refresh();
      const read = await getSecret(devVault.scope, 'staging', 'DATABASE_URL');
      assert.equal(read.value, 'postgres://staging-db');
      await setSecret(devVault.scope, 'production', 'API_TOKEN', 'tok-production');
      const back = await getSecret(adminVault.scope, 'production', 'API_TOKEN');
      assert.equal(back.value, 'tok-production');
      assert.equal(await readSecret(adminVault, env.production!, 'API_TOKEN'), 'tok-production');
    });

    it('a viewer opens the vault but holds no key', async () => {
      const viewer = await newUser(server);
      await join(admin, viewer, projectId, 'viewer');
      const vault = await openVault(viewer.client, projectId, viewer.keys);
      assert.equal(vault.holdsKeys, false);
      assert.deepEqual(vault.status.grants, []);
      await assert.rejects(vault.environmentKey(env.staging!), (e) => isVaultError(e, 'no_grant'));
    });

    it('an API key scoped to staging reads staging and can neither read nor decrypt production', async () => {
      const { apiKey, credential } = await createApiKey(adminVault, {
        name: 'staging reader',
        role: 'developer',
        scopes: { staging: 'read' },
      });
      assert.deepEqual(apiKey.scopes, { [env.staging!]: 'read' });
      // Key part version 3: the seed, the creator's key and the chain's root.
      assert.match(credential, /^cek_[0-9A-Za-z]{36}\.[A-Za-z0-9_-]{130}$/);

      const pipeline = await fromCredential(server.baseUrl, credential);
      assert.equal(pipeline.projectId, projectId);
      assert.deepEqual(pipeline.vault.recipient, { type: 'api_key', id: apiKey.id });
      assert.equal(
        await readSecret(pipeline.vault, env.staging!, 'DATABASE_URL'),
        'postgres://staging-db',
      );

      // The server refuses the production value…
      await rejectsWith(
        pipeline.client.request(
          'GET',
          apiPath`/v1/projects/${projectId}/environments/${env.production!}/secrets/API_TOKEN`,
        ),
        403,
        'forbidden',
      );
      // …and the key holds nothing that decrypts it, even with the ciphertext from the database.
      await assert.rejects(pipeline.vault.environmentKey(env.production!), (e) =>
        isVaultError(e, 'out_of_scope'),
      );
      const stored = await server.t.testDb.db.kysely
        .selectFrom('secrets')
        .select('value')
        .where('environment_id', '=', env.production!)
        .where('name', '=', 'API_TOKEN')
        .executeTakeFirstOrThrow();
      const { key: stagingKey, epoch } = await pipeline.vault.environmentKey(env.staging!);
      assert.throws(
        () =>
          decryptSecretValue({
            environmentKey: stagingKey,
            projectId,
            environmentId: env.production!,
            name: 'API_TOKEN',
            epoch,
            envelope: stored.value,
          }),
        (e) => isCryptoError(e, 'decryption_failed'),
      );
      // A read-only key cannot write (403), and its role bounds it.
      await rejectsWith(writeSecret(pipeline.vault, env.staging!, 'NEW', 'x'), 403, 'forbidden');
    });

    it('an API key mints a CI token within its scopes; the token expires and is refused after revocation', async () => {
      const { credential: keyCredential } = await createApiKey(adminVault, {
        name: 'deployer',
        role: 'developer',
        scopes: { staging: 'read_write', production: 'read' },
      });
      const deployer = await fromCredential(server.baseUrl, keyCredential);

      // Beyond its own scopes: 403.
      await rejectsWith(
        createCiToken(deployer.vault, { scopes: { production: 'read_write' } }),
        403,
        'forbidden',
      );
      // An environment it holds no key for cannot even be granted (the server would refuse too).
      await assert.rejects(
        createCiToken(deployer.vault, { scopes: { development: 'read' } }),
        (e) => isVaultError(e, 'out_of_scope'),
      );

      const { ciToken, credential } = await createCiToken(deployer.vault, {
        name: 'build 42',
        scopes: { staging: 'read_write' },
        ttlSeconds: 600,
      });
      assert.equal(Date.parse(ciToken.expires_at) - Date.parse(ciToken.created_at), 600_000);
      const build = await fromCredential(server.baseUrl, credential);
      assert.equal(build.vault.recipient.type, 'ci_token');
      assert.equal(
        await readSecret(build.vault, env.staging!, 'DATABASE_URL'),
        'postgres://staging-db',
      );
      await writeSecret(build.vault, env.staging!, 'BUILD', '42');
      assert.equal(await readSecret(adminVault, env.staging!, 'BUILD'), '42');

      clock.advance(601_000);
      await rejectsWith(build.vault.refresh(), 401, 'token_expired');

      // A fresh one, revoked by its minter: refused at once.
      const second = await createCiToken(deployer.vault, { scopes: { staging: 'read' } });
      const run = await fromCredential(server.baseUrl, second.credential);
      await revokeCiToken(deployer.client, projectId, second.ciToken.id);
      await rejectsWith(run.vault.refresh(), 401, 'unauthenticated');
    });

    it('a revoked API key is refused at once, and so are the CI tokens it minted', async () => {
      const { apiKey, credential } = await createApiKey(adminVault, {
        name: 'short-lived',
        role: 'developer',
        scopes: { staging: 'read' },
      });
      const key = await fromCredential(server.baseUrl, credential);
      const minted = await createCiToken(key.vault, { scopes: { staging: 'read' } });
      const token = await fromCredential(server.baseUrl, minted.credential);
      await revokeApiKey(admin.client, projectId, apiKey.id);
      await rejectsWith(key.vault.refresh(), 401, 'unauthenticated');
      await rejectsWith(token.vault.refresh(), 401, 'unauthenticated');
      const listed = await listApiKeys(admin.client, projectId, { per_page: 100 });
      assert.ok(listed.data.find((k) => k.id === apiKey.id)!.revoked_at);
    });

    it('a ciphertext moved in the database to another secret or environment fails to decrypt', async () => {
      await writeSecret(adminVault, env.staging!, 'MOVED', 'original');
      await writeSecret(adminVault, env.production!, 'MOVED', 'other');
      await writeSecret(adminVault, env.staging!, 'NEIGHBOUR', 'neighbour');
      const db = server.t.testDb.db.kysely;
      const source = await db
        .selectFrom('secrets')
        .select('value')
        .where('environment_id', '=', env.staging!)
        .where('name', '=', 'MOVED')
        .executeTakeFirstOrThrow();
      for (const [environmentId, name] of [
        [env.production!, 'MOVED'],
        [env.staging!, 'NEIGHBOUR'],
      ] as const) {
        await db
          .updateTable('secrets')
          .set({ value: source.value })
          .where('environment_id', '=', environmentId)
          .where('name', '=', name)
          .execute();
        await assert.rejects(readSecret(adminVault, environmentId, name), (e) =>
          isCryptoError(e, 'decryption_failed'),
        );
      }
    });

    it('a grant re-addressed by the server fails its signature check', async () => {
      const db = server.t.testDb.db.kysely;
      const grant = await db
        .selectFrom('vault_grants')
        .selectAll()
        .where('project_id', '=', projectId)
        .where('recipient_id', '=', admin.id)
        .executeTakeFirstOrThrow();
      // The developer's own grant replaced by the admin's sealed key, re-addressed.
      const original = await db
        .selectFrom('vault_grants')
        .select(['id', 'sealed_key'])
        .where('project_id', '=', projectId)
        .where('recipient_id', '=', developer.id)
        .executeTakeFirstOrThrow();
      await db
        .updateTable('vault_grants')
        .set({ sealed_key: grant.sealed_key })
        .where('id', '=', original.id)
        .execute();
      await assert.rejects(openVault(developer.client, projectId, developer.keys), (e) =>
        isCryptoError(e, 'invalid_signature'),
      );
      await db
        .updateTable('vault_grants')
        .set({ sealed_key: original.sealed_key })
        .where('id', '=', original.id)
        .execute();
    });
  });
}
