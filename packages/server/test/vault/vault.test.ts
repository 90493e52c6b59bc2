import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createGrant,
  deriveEnvironmentKey,
  encryptSecretValue,
  fingerprint,
  generateProjectKey,
  openGrant,
  ready,
  toBase64url,
  tokenKeysFromKeyPart,
} from '@coffer/sdk';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';
import { dataOf, errorOf, expectStatus } from '../support/http.js';
import { addMember } from '../support/projects.js';
import {
  grantBody,
  grantMember,
  memberGrant,
  projectWithVault,
  type VaultProject,
} from '../support/vault.js';
import { createApiKey, decryptStored, putSecret } from './support.js';

interface VaultStatus {
  project_id: string;
  epoch: number;
  initialized: boolean;
  rekey_recommended: boolean;
  recipient: { type: string; id: string };
  grants: {
    id: string;
    kind: 'project_key' | 'environment_key';
    project_id: string;
    epoch: number;
    environment_id: string | null;
    recipient_type: string;
    recipient_id: string;
    sealed_key: string;
    granter_id: string;
    granter_signing_public_key: string | null;
    signature: string;
    created_at: string;
  }[];
  pending_grants?: { user_id: string; fingerprint: string; public_key: string }[];
}

interface Snapshot {
  epoch: number;
  environments: { id: string; slug: string }[];
  versions: {
    id: string;
    secret_id: string;
    environment_id: string;
    name: string;
    version: number;
    epoch: number;
    value: string;
  }[];
  members: { user_id: string; public_key: string }[];
  api_keys: { id: string; public_key: string; scopes: Record<string, string> }[];
  ci_tokens: { id: string; public_key: string; scopes: Record<string, string> }[];
}

for (const dialect of DIALECTS) {
  describe(`vault (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      await ready();
      t = await startTestApp(dialect);
    });
    after(async () => t.close());

    const status = async (project: { id: string }, headers: Record<string, string>) => {
      const res = await t.request({
        method: 'GET',
        url: `/v1/projects/${project.id}/vault`,
        headers,
      });
      expectStatus(res, 200);
      return dataOf<VaultStatus>(res);
    };

    const snapshot = async (project: VaultProject) => {
      const res = await t.request({
        method: 'GET',
        url: `/v1/projects/${project.id}/vault/snapshot`,
        headers: project.admin.headers,
      });
      expectStatus(res, 200);
      return dataOf<Snapshot>(res);
    };

    /** What a re-keying client uploads, built from a snapshot with a new project key. */
    const rekeyBody = (
      project: VaultProject,
      snap: Snapshot,
      newPmk: Uint8Array,
      decrypt: (v: Snapshot['versions'][number]) => string,
    ) => {
      const to = snap.epoch + 1;
      return {
        from_epoch: snap.epoch,
        versions: snap.versions.map((v) => ({
          id: v.id,
          value: encryptSecretValue({
            environmentKey: deriveEnvironmentKey(newPmk, project.id, v.environment_id, to),
            projectId: project.id,
            environmentId: v.environment_id,
            name: v.name,
            epoch: to,
            value: decrypt(v),
          }),
        })),
        grants: snap.members.map((m) =>
          grantBody(
            memberGrant(newPmk, project.id, to, project.admin, {
              id: m.user_id,
              publicKey: m.public_key,
            }),
          ),
        ),
        token_grants: [] as unknown[],
      };
    };

    describe('initialisation and grants', () => {
      let project: VaultProject;
      let developer: TestUser;
      let viewer: TestUser;

      before(async () => {
        project = await projectWithVault(t);
        developer = (await addMember(t, project.admin, project.id, 'developer')).user;
        viewer = (await addMember(t, project.admin, project.id, 'viewer')).user;
      });

      it('the first self-grant initialises the vault at epoch 1, and the admin can open it', async () => {
        const s = await status(project, project.admin.headers);
        assert.equal(s.epoch, 1);
        assert.equal(s.initialized, true);
        assert.equal(s.rekey_recommended, false);
        assert.deepEqual(s.recipient, { type: 'user', id: project.admin.id });
        assert.equal(s.grants.length, 1);
        const g = s.grants[0]!;
        assert.equal(g.kind, 'project_key');
        assert.equal(
          g.granter_signing_public_key,
          toBase64url(project.admin.keys.signing.publicKey),
        );
        const pmk = openGrant(g, {
          recipientPublicKey: project.admin.keys.encryption.publicKey,
          recipientSecretKey: project.admin.keys.encryption.secretKey,
          granterSigningPublicKey: g.granter_signing_public_key!,
          expected: {
            projectId: project.id,
            epoch: 1,
            kind: 'project_key',
            recipientId: project.admin.id,
          },
        });
        assert.deepEqual(pmk, project.pmk);
      });

      it('a new project starts uninitialised, and its first grant must be the admin’s own', async () => {
        const other = await signUp(t);
        const created = await t.request({
          method: 'POST',
          url: '/v1/projects',
          headers: other.headers,
          body: { name: 'fresh' },
        });
        const id = dataOf<{ id: string }>(created).id;
        const s = await status({ id }, other.headers);
        assert.equal(s.epoch, 0);
        assert.equal(s.initialized, false);
        assert.deepEqual(s.grants, []);
        // A grant to someone else cannot initialise it.
        const pmk = generateProjectKey();
        const res = await t.request({
          method: 'POST',
          url: `/v1/projects/${id}/vault/grants`,
          headers: other.headers,
          body: {
            grants: [
              grantBody(
                memberGrant(pmk, id, 2, other, {
                  id: other.id,
                  publicKey: other.keys.encryption.publicKey,
                }),
              ),
            ],
          },
        });
        expectStatus(res, 409);
        assert.equal(errorOf(res).code, 'version_conflict');
      });

      it('admins see members awaiting a grant with their fingerprint; granting clears it', async () => {
        let s = await status(project, project.admin.headers);
        const pending = s.pending_grants!;
        assert.deepEqual(
          pending.map((p) => p.user_id),
          [developer.id],
          'the viewer holds no grant and awaits none',
        );
        assert.equal(
          pending[0]!.fingerprint,
          fingerprint(developer.keys.encryption.publicKey, developer.keys.signing.publicKey),
        );
        await grantMember(t, project, developer);
        s = await status(project, project.admin.headers);
        assert.deepEqual(s.pending_grants, []);

        const mine = await status(project, developer.headers);
        assert.equal(mine.pending_grants, undefined, 'only admins see pending grants');
        assert.equal(mine.grants.length, 1);
        const pmk = openGrant(mine.grants[0]!, {
          recipientPublicKey: developer.keys.encryption.publicKey,
          recipientSecretKey: developer.keys.encryption.secretKey,
          granterSigningPublicKey: project.admin.keys.signing.publicKey,
          expected: {
            projectId: project.id,
            epoch: 1,
            kind: 'project_key',
            recipientId: developer.id,
          },
        });
        assert.deepEqual(pmk, project.pmk);
      });

      it('a viewer gets the epoch but no grant, and cannot be granted one (422)', async () => {
        const s = await status(project, viewer.headers);
        assert.equal(s.epoch, 1);
        assert.deepEqual(s.grants, []);
        const grant = memberGrant(project.pmk, project.id, 1, project.admin, {
          id: viewer.id,
          publicKey: viewer.keys.encryption.publicKey,
        });
        const res = await t.request({
          method: 'POST',
          url: `/v1/projects/${project.id}/vault/grants`,
          headers: project.admin.headers,
          body: { grants: [grantBody(grant)] },
        });
        expectStatus(res, 422);
        assert.deepEqual(errorOf(res).details, [
          { field: 'grants.0.recipient_id', issue: 'not_vault_member' },
        ]);
        const rows = await t.testDb.db.kysely
          .selectFrom('vault_grants')
          .select('id')
          .where('recipient_id', '=', viewer.id)
          .execute();
        assert.equal(rows.length, 0);
      });

      it('a grant at another epoch is a 409 stale_epoch with the current epoch', async () => {
        const grant = memberGrant(project.pmk, project.id, 2, project.admin, {
          id: developer.id,
          publicKey: developer.keys.encryption.publicKey,
        });
        const res = await t.request({
          method: 'POST',
          url: `/v1/projects/${project.id}/vault/grants`,
          headers: project.admin.headers,
          body: { grants: [grantBody(grant)] },
        });
        expectStatus(res, 409);
        assert.deepEqual(errorOf(res).details, [
          { field: 'grants.0.epoch', issue: 'stale_epoch', current_epoch: 1 },
        ]);
      });

      it('a grant not signed by the caller for this recipient is refused (422)', async () => {
        // Signed for the admin, uploaded as addressed to the developer.
        const grant = memberGrant(project.pmk, project.id, 1, project.admin, {
          id: project.admin.id,
          publicKey: project.admin.keys.encryption.publicKey,
        });
        const res = await t.request({
          method: 'POST',
          url: `/v1/projects/${project.id}/vault/grants`,
          headers: project.admin.headers,
          body: { grants: [{ ...grantBody(grant), recipient_id: developer.id }] },
        });
        expectStatus(res, 422);
        assert.deepEqual(errorOf(res).details, [
          { field: 'grants.0.signature', issue: 'invalid_signature' },
        ]);
      });

      it('developers, viewers and API keys cannot grant (403)', async () => {
        const apiKey = await createApiKey(t, project, 'admin', {});
        for (const headers of [developer.headers, viewer.headers, apiKey.headers]) {
          const res = await t.request({
            method: 'POST',
            url: `/v1/projects/${project.id}/vault/grants`,
            headers,
            body: {
              grants: [
                grantBody(
                  memberGrant(project.pmk, project.id, 1, project.admin, {
                    id: developer.id,
                    publicKey: developer.keys.encryption.publicKey,
                  }),
                ),
              ],
            },
          });
          expectStatus(res, 403);
        }
      });

      it('a non-member gets 404 for the vault and its snapshot', async () => {
        const stranger = await signUp(t);
        for (const url of [
          `/v1/projects/${project.id}/vault`,
          `/v1/projects/${project.id}/vault/snapshot`,
        ]) {
          const res = await t.request({ method: 'GET', url, headers: stranger.headers });
          expectStatus(res, 404);
        }
      });
    });

    describe('snapshot and re-key', () => {
      let project: VaultProject;
      let developer: TestUser;
      const plain = new Map<string, string>();

      before(async () => {
        project = await projectWithVault(t);
        developer = (await addMember(t, project.admin, project.id, 'developer')).user;
        await grantMember(t, project, developer);
        const { staging, production } = project.env;
        for (const [env, name, value] of [
          [staging!, 'DATABASE_URL', 'postgres://staging'],
          [staging!, 'DATABASE_URL', 'postgres://staging-v2'],
          [production!, 'API_TOKEN', 'tok-production'],
        ] as const) {
          const expected = plain.has(`${env.id}/${name}`) ? 200 : 201;
          expectStatus(await putSecret(t, project, developer.headers, env, name, value), expected);
          plain.set(`${env.id}/${name}`, value);
        }
      });

      const decryptWith = (pmk: Uint8Array, epoch: number) => (v: Snapshot['versions'][number]) =>
        decryptStored(project.id, pmk, epoch, v);

      it('the snapshot holds every version, history included, and who must be re-granted', async () => {
        const snap = await snapshot(project);
        assert.equal(snap.epoch, 1);
        assert.equal(snap.versions.length, 3);
        const names = snap.versions.map((v) => `${v.name}@${v.version}`).sort();
        assert.deepEqual(names, ['API_TOKEN@1', 'DATABASE_URL@1', 'DATABASE_URL@2']);
        const values = snap.versions.map(decryptWith(project.pmk, 1)).sort();
        assert.deepEqual(values, ['postgres://staging', 'postgres://staging-v2', 'tok-production']);
        assert.deepEqual(
          snap.members.map((m) => m.user_id).sort(),
          [project.admin.id, developer.id].sort(),
        );
        assert.equal(snap.environments.length, 3);
      });

      it('developers cannot read the snapshot or re-key (403)', async () => {
        const res = await t.request({
          method: 'GET',
          url: `/v1/projects/${project.id}/vault/snapshot`,
          headers: developer.headers,
        });
        expectStatus(res, 403);
      });

      it('refuses a stale epoch, a missing version and a missing member grant with 409', async () => {
        const snap = await snapshot(project);
        const newPmk = generateProjectKey();
        const body = rekeyBody(project, snap, newPmk, decryptWith(project.pmk, 1));
        const attempt = (b: object) =>
          t.request({
            method: 'POST',
            url: `/v1/projects/${project.id}/vault/re-key`,
            headers: project.admin.headers,
            body: b,
          });

        const stale = await attempt({ ...body, from_epoch: 2 });
        expectStatus(stale, 409);
        assert.deepEqual(errorOf(stale).details, [
          { field: 'from_epoch', issue: 'stale_epoch', current_epoch: 1 },
        ]);

        const missingVersion = await attempt({ ...body, versions: body.versions.slice(1) });
        expectStatus(missingVersion, 409);
        assert.deepEqual(errorOf(missingVersion).details, [
          { field: 'versions', issue: 'missing', count: 1, ids: [body.versions[0]!.id] },
        ]);

        const missingMember = await attempt({
          ...body,
          grants: body.grants.filter((g) => g.recipient_id !== developer.id),
        });
        expectStatus(missingMember, 409);
        assert.deepEqual(errorOf(missingMember).details, [
          { field: 'grants', issue: 'missing', count: 1, ids: [developer.id] },
        ]);

        const oldEpochEnvelope = await attempt({
          ...body,
          versions: body.versions.map((v, i) =>
            i === 0 ? { id: v.id, value: snap.versions[0]!.value } : v,
          ),
        });
        expectStatus(oldEpochEnvelope, 409);
        assert.equal(errorOf(oldEpochEnvelope).details![0]!.issue, 'wrong_epoch');

        // Nothing changed.
        const after = await status(project, project.admin.headers);
        assert.equal(after.epoch, 1);
      });

      it('re-keys atomically: new epoch, new values, old grants gone, listings change, old-epoch writes refused', async () => {
        const { staging } = project.env;
        const revisionsBefore = await t.testDb.db.kysely
          .selectFrom('environments')
          .select(['id', 'revision'])
          .where('project_id', '=', project.id)
          .execute();
        const snap = await snapshot(project);
        const newPmk = generateProjectKey();
        const body = rekeyBody(project, snap, newPmk, decryptWith(project.pmk, 1));
        const res = await t.request({
          method: 'POST',
          url: `/v1/projects/${project.id}/vault/re-key`,
          headers: project.admin.headers,
          body,
        });
        expectStatus(res, 200);
        assert.deepEqual(dataOf(res), { epoch: 2, versions: 3, grants: 2, token_grants: 0 });

        // Every stored version and current value is under epoch 2 and decrypts with the new key only.
        const versions = await t.testDb.db.kysely
          .selectFrom('secret_versions as v')
          .innerJoin('secrets as s', 's.id', 'v.secret_id')
          .select([
            'v.id',
            'v.secret_id',
            'v.environment_id',
            's.name',
            'v.version',
            'v.epoch',
            'v.value',
          ])
          .where('v.project_id', '=', project.id)
          .execute();
        assert.equal(versions.length, 3);
        const before = new Map(
          snap.versions.map((v) => [v.id, decryptStored(project.id, project.pmk, 1, v)]),
        );
        for (const v of versions) {
          assert.equal(v.epoch, 2);
          assert.equal(decryptStored(project.id, newPmk, 2, v), before.get(v.id));
          assert.throws(() => decryptStored(project.id, project.pmk, 2, v));
        }
        const current = await t.testDb.db.kysely
          .selectFrom('secrets')
          .select(['id', 'environment_id', 'name', 'version', 'epoch', 'value'])
          .where('project_id', '=', project.id)
          .execute();
        for (const s of current) {
          assert.equal(s.epoch, 2);
          assert.equal(
            decryptStored(project.id, newPmk, 2, s),
            plain.get(`${s.environment_id}/${s.name}`),
          );
        }
        const grants = await t.testDb.db.kysely
          .selectFrom('vault_grants')
          .select(['epoch', 'recipient_id'])
          .where('project_id', '=', project.id)
          .execute();
        assert.deepEqual(new Set(grants.map((g) => g.epoch)), new Set([2]));
        assert.equal(grants.length, 2);
        const revisionsAfter = await t.testDb.db.kysely
          .selectFrom('environments')
          .select(['id', 'revision'])
          .where('project_id', '=', project.id)
          .execute();
        for (const before of revisionsBefore) {
          const now = revisionsAfter.find((r) => r.id === before.id)!;
          assert.ok(now.revision > before.revision, 'every environment listing changes');
        }

        // The developer's new grant opens the new key.
        const dev = await status(project, developer.headers);
        assert.equal(dev.epoch, 2);
        assert.deepEqual(
          openGrant(dev.grants[0]!, {
            recipientPublicKey: developer.keys.encryption.publicKey,
            recipientSecretKey: developer.keys.encryption.secretKey,
            granterSigningPublicKey: project.admin.keys.signing.publicKey,
            expected: {
              projectId: project.id,
              epoch: 2,
              kind: 'project_key',
              recipientId: developer.id,
            },
          }),
          newPmk,
        );

        // A write still encrypted under epoch 1 is refused; under epoch 2 it succeeds.
        const stale = await putSecret(
          t,
          project,
          developer.headers,
          staging!,
          'DATABASE_URL',
          'late',
          1,
        );
        expectStatus(stale, 409);
        assert.deepEqual(errorOf(stale).details, [
          { field: 'value', issue: 'stale_epoch', current_epoch: 2 },
        ]);
        const rekeyed = { ...project, pmk: newPmk, epoch: 2 };
        expectStatus(
          await putSecret(t, rekeyed, developer.headers, staging!, 'DATABASE_URL', 'late'),
          200,
        );
        project.pmk = newPmk;
        project.epoch = 2;
        plain.set(`${staging!.id}/DATABASE_URL`, 'late');
      });

      it('removing a developer recommends a re-key, which clears the recommendation', async () => {
        const { user: gone, memberId } = await addMember(t, project.admin, project.id, 'developer');
        await grantMember(t, project, gone);
        const removed = await t.request({
          method: 'DELETE',
          url: `/v1/projects/${project.id}/members/${memberId}`,
          headers: project.admin.headers,
        });
        expectStatus(removed, 204);
        assert.equal((await status(project, project.admin.headers)).rekey_recommended, true);

        const snap = await snapshot(project);
        assert.ok(!snap.members.some((m) => m.user_id === gone.id));
        const newPmk = generateProjectKey();
        const res = await t.request({
          method: 'POST',
          url: `/v1/projects/${project.id}/vault/re-key`,
          headers: project.admin.headers,
          body: rekeyBody(project, snap, newPmk, decryptWith(project.pmk, project.epoch)),
        });
        expectStatus(res, 200);
        const s = await status(project, project.admin.headers);
        assert.equal(s.rekey_recommended, false);
        assert.equal(s.epoch, project.epoch + 1);
      });
    });

    describe('re-key with tokens', () => {
      it('every live token must be re-granted each scoped environment (409 otherwise), then still opens its key', async () => {
        const project = await projectWithVault(t);
        const { staging, production } = project.env;
        const token = await createApiKey(t, project, 'developer', {
          [staging!.id]: 'read',
          [production!.id]: 'read',
        });
        const revoked = await createApiKey(t, project, 'developer', { [staging!.id]: 'read' });
        expectStatus(
          await t.request({
            method: 'DELETE',
            url: `/v1/projects/${project.id}/api-keys/${revoked.id}`,
            headers: project.admin.headers,
          }),
          204,
        );
        const snap = await snapshot(project);
        assert.deepEqual(
          snap.api_keys.map((k) => k.id),
          [token.id],
          'revoked keys need no grant',
        );
        const newPmk = generateProjectKey();
        const body = rekeyBody(project, snap, newPmk, () => '');
        const tokenKeys = tokenKeysFromKeyPart(token.keyPart);
        const tokenGrant = (environmentId: string) => {
          const g = createGrant({
            key: deriveEnvironmentKey(newPmk, project.id, environmentId, 2),
            kind: 'environment_key',
            projectId: project.id,
            epoch: 2,
            environmentId,
            recipientId: token.id,
            recipientPublicKey: snap.api_keys[0]!.public_key,
            granterId: project.admin.id,
            granterSigningSecretKey: project.admin.keys.signing.secretKey,
          });
          return { ...grantBody(g), environment_id: environmentId };
        };
        const attempt = (tokenGrants: object[]) =>
          t.request({
            method: 'POST',
            url: `/v1/projects/${project.id}/vault/re-key`,
            headers: project.admin.headers,
            body: { ...body, token_grants: tokenGrants },
          });

        const partial = await attempt([tokenGrant(staging!.id)]);
        expectStatus(partial, 409);
        assert.deepEqual(errorOf(partial).details, [
          {
            field: 'token_grants',
            issue: 'missing',
            count: 1,
            ids: [`${token.id}/${production!.id}`],
          },
        ]);
        const done = await attempt([tokenGrant(staging!.id), tokenGrant(production!.id)]);
        expectStatus(done, 200);
        assert.equal(dataOf<{ token_grants: number }>(done).token_grants, 2);

        const status = await t.request({
          method: 'GET',
          url: `/v1/projects/${project.id}/vault`,
          headers: token.headers,
        });
        const grants = dataOf<VaultStatus>(status).grants;
        assert.equal(grants.length, 2);
        for (const g of grants) {
          const ek = openGrant(g, {
            recipientPublicKey: tokenKeys.encryption.publicKey,
            recipientSecretKey: tokenKeys.encryption.secretKey,
            granterSigningPublicKey: project.admin.keys.signing.publicKey,
            expected: {
              projectId: project.id,
              epoch: 2,
              kind: 'environment_key',
              environmentId: g.environment_id,
              recipientId: token.id,
            },
          });
          assert.deepEqual(ek, deriveEnvironmentKey(newPmk, project.id, g.environment_id!, 2));
        }
      });
    });
  });
}
