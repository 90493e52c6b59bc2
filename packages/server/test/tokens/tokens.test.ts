import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashBearer, isWellFormedBearer, ready } from '@coffer/sdk';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import type { TestUser } from '../support/users.js';
import { dataOf, errorOf, expectStatus } from '../support/http.js';
import { addMember } from '../support/projects.js';
import { grantMember, projectWithVault, type VaultProject } from '../support/vault.js';
import { createApiKey, putSecret, tokenRequest, type TestToken } from '../vault/support.js';

const API_KEY_FIELDS = [
  'created_at',
  'created_by',
  'expires_at',
  'id',
  'last_used_at',
  'name',
  'revoked_at',
  'role',
  'scopes',
];
const CI_TOKEN_FIELDS = [
  'created_at',
  'created_by',
  'created_by_api_key',
  'expires_at',
  'id',
  'last_used_at',
  'name',
  'revoked_at',
  'scopes',
];

for (const dialect of DIALECTS) {
  describe(`API keys and CI tokens (${dialect})`, () => {
    let t: TestApp;
    let project: VaultProject;
    let developer: TestUser;
    let viewer: TestUser;
    let staging: string;
    let production: string;

    before(async () => {
      await ready();
      t = await startTestApp(dialect);
      project = await projectWithVault(t);
      developer = (await addMember(t, project.admin, project.id, 'developer')).user;
      await grantMember(t, project, developer);
      viewer = (await addMember(t, project.admin, project.id, 'viewer')).user;
      staging = project.env.staging.id;
      production = project.env.production.id;
      await putSecret(t, project, developer.headers, project.env.staging, 'DB', 'staging-db');
      await putSecret(t, project, developer.headers, project.env.production, 'DB', 'prod-db');
    });
    after(async () => t.close());

    const post = (url: string, headers: Record<string, string>, body: object) =>
      t.request({ method: 'POST', url: `/v1/projects/${project.id}${url}`, headers, body });
    const get = (url: string, headers: Record<string, string>) =>
      t.request({ method: 'GET', url: `/v1/projects/${project.id}${url}`, headers });
    const del = (url: string, headers: Record<string, string>) =>
      t.request({ method: 'DELETE', url: `/v1/projects/${project.id}${url}`, headers });

    describe('API keys', () => {
      it('creates a key (slugs become ids), shows the bearer once and stores only its hash', async () => {
        const req = tokenRequest(project, 'key', { [staging]: 'read' });
        const res = await post('/api-keys', project.admin.headers, {
          ...req.body,
          scopes: { staging: 'read' },
          name: 'reader',
          role: 'developer',
        });
        expectStatus(res, 201);
        const key = dataOf<Record<string, unknown>>(res);
        assert.deepEqual(Object.keys(key).sort(), [...API_KEY_FIELDS, 'bearer'].sort());
        assert.equal(key.id, req.id);
        assert.deepEqual(key.scopes, { [staging]: 'read' });
        assert.equal(key.created_by, project.admin.id);
        assert.equal(key.revoked_at, null);
        const bearer = key.bearer as string;
        assert.ok(isWellFormedBearer(bearer) && bearer.startsWith('cek_'));

        const row = await t.testDb.db.kysely
          .selectFrom('api_keys')
          .selectAll()
          .where('id', '=', req.id)
          .executeTakeFirstOrThrow();
        assert.equal(row.token_hash, hashBearer(bearer));
        assert.ok(!JSON.stringify(row).includes(bearer));
        assert.equal(row.signing_public_key, req.keys.signingPublicKey);
        const grants = await t.testDb.db.kysely
          .selectFrom('vault_grants')
          .select(['kind', 'recipient_type', 'environment_id', 'granter_id', 'epoch'])
          .where('recipient_id', '=', req.id)
          .execute();
        assert.deepEqual(grants, [
          {
            kind: 'environment_key',
            recipient_type: 'api_key',
            environment_id: staging,
            granter_id: project.admin.id,
            epoch: 1,
          },
        ]);

        const list = await get('/api-keys?per_page=100', project.admin.headers);
        expectStatus(list, 200);
        const listed = (list.data as { data: Record<string, unknown>[] }).data;
        const mine = listed.find((k) => k.id === req.id)!;
        assert.deepEqual(Object.keys(mine).sort(), API_KEY_FIELDS);
        assert.ok(!list.body.includes(bearer) && !list.body.includes(row.token_hash));
      });

      it('grants must cover exactly the scoped environments, at the current epoch, signed by the creator', async () => {
        const create = (body: object) =>
          post('/api-keys', project.admin.headers, { name: 'k', role: 'developer', ...body });

        const noGrant = tokenRequest(project, 'key', { [staging]: 'read' });
        let res = await create({
          ...noGrant.body,
          scopes: { [staging]: 'read', [production]: 'read' },
        });
        expectStatus(res, 422);
        assert.deepEqual(errorOf(res).details, [
          { field: 'grants', issue: 'missing', environment_ids: [production] },
        ]);

        const stale = tokenRequest({ ...project, epoch: 2 }, 'key', { [staging]: 'read' });
        res = await create(stale.body);
        expectStatus(res, 409);
        assert.deepEqual(errorOf(res).details, [
          { field: 'grants.0.epoch', issue: 'stale_epoch', current_epoch: 1 },
        ]);

        // Signed by the developer, uploaded by the admin.
        const forged = tokenRequest(
          project,
          'key',
          { [staging]: 'read' },
          {
            id: project.admin.id,
            signingSecretKey: developer.keys.signing.secretKey,
          },
        );
        res = await create(forged.body);
        expectStatus(res, 422);
        assert.deepEqual(errorOf(res).details, [
          { field: 'grants.0.signature', issue: 'invalid_signature' },
        ]);

        const unknown = tokenRequest(project, 'key', {});
        res = await create({ ...unknown.body, scopes: { nowhere: 'read' } });
        expectStatus(res, 422);
        assert.deepEqual(errorOf(res).details, [{ field: 'scopes.nowhere', issue: 'not_found' }]);

        res = await create({ ...unknown.body, role: 'viewer', scopes: { [staging]: 'read' } });
        expectStatus(res, 422);

        const taken = await createApiKey(t, project, 'developer', {});
        const again = tokenRequest(project, 'key', {});
        res = await create({ ...again.body, id: taken.id });
        expectStatus(res, 409);
        assert.equal(errorOf(res).code, 'already_exists');

        res = await create({
          ...unknown.body,
          expires_at: new Date(t.clock.now().getTime() - 1000).toISOString(),
        });
        expectStatus(res, 400);

        const rows = await t.testDb.db.kysely
          .selectFrom('api_keys')
          .select('id')
          .where('id', 'in', [noGrant.id, stale.id, forged.id, unknown.id])
          .execute();
        assert.deepEqual(rows, [], 'nothing was stored');
      });

      it('only admins manage API keys (403), and non-members see nothing (404)', async () => {
        const req = tokenRequest(project, 'key', {});
        for (const headers of [developer.headers, viewer.headers]) {
          expectStatus(
            await post('/api-keys', headers, { ...req.body, name: 'x', role: 'viewer' }),
            403,
          );
          expectStatus(await get('/api-keys', headers), 403);
        }
        const devKey = await createApiKey(t, project, 'developer', { [staging]: 'read_write' });
        expectStatus(await get('/api-keys', devKey.headers), 403);
        const other = await projectWithVault(t);
        expectStatus(
          await t.request({
            method: 'GET',
            url: `/v1/projects/${other.id}/api-keys`,
            headers: project.admin.headers,
          }),
          404,
        );
      });

      it('an API key acts within its role and scopes', async () => {
        const reader = await createApiKey(t, project, 'developer', { [staging]: 'read' });
        const secretUrl = (env: string) =>
          `/v1/projects/${project.id}/environments/${env}/secrets/DB`;
        expectStatus(
          await t.request({ method: 'GET', url: secretUrl(staging), headers: reader.headers }),
          200,
        );
        expectStatus(
          await t.request({ method: 'GET', url: secretUrl(production), headers: reader.headers }),
          403,
        );
        expectStatus(
          await putSecret(t, project, reader.headers, project.env.staging, 'DB', 'nope'),
          403,
        );
        const writer = await createApiKey(t, project, 'developer', { [staging]: 'read_write' });
        expectStatus(
          await putSecret(t, project, writer.headers, project.env.staging, 'DB', 'written'),
          200,
        );
        const viewerKey = await createApiKey(t, project, 'viewer', {});
        expectStatus(
          await t.request({ method: 'GET', url: secretUrl(staging), headers: viewerKey.headers }),
          403,
        );
        const status = await get('/vault', viewerKey.headers);
        expectStatus(status, 200);
        assert.deepEqual(dataOf<{ grants: unknown[] }>(status).grants, []);
      });

      it('revocation takes effect at once: 401, grants gone, idempotent, 404 for unknown ids', async () => {
        const key = await createApiKey(t, project, 'developer', { [staging]: 'read' });
        expectStatus(await get('/vault', key.headers), 200); // cached by the resolver now
        expectStatus(await del(`/api-keys/${key.id}`, project.admin.headers), 204);
        const refused = await get('/vault', key.headers);
        expectStatus(refused, 401);
        assert.equal(errorOf(refused).code, 'unauthenticated');
        const grants = await t.testDb.db.kysely
          .selectFrom('vault_grants')
          .select('id')
          .where('recipient_id', '=', key.id)
          .execute();
        assert.equal(grants.length, 0);
        expectStatus(await del(`/api-keys/${key.id}`, project.admin.headers), 204);
        expectStatus(await del('/api-keys/key_00000000000000000000', project.admin.headers), 404);
        const events = await t.testDb.db.kysely
          .selectFrom('audit_events')
          .select(['action', 'data'])
          .where('target_id', '=', key.id)
          // The test clock stands still: both events share a time, the chain orders them.
          .orderBy('created_at')
          .orderBy('chain_seq')
          .execute();
        assert.deepEqual(
          events.map((e) => e.action),
          ['api_key.created', 'api_key.revoked'],
        );
      });

      it('an expired API key gets 401 token_expired', async () => {
        const expiresAt = new Date(t.clock.now().getTime() + 60_000).toISOString();
        const key = await createApiKey(
          t,
          project,
          'developer',
          { [staging]: 'read' },
          { expires_at: expiresAt },
        );
        expectStatus(await get('/vault', key.headers), 200);
        t.clock.advance(61_000);
        const res = await get('/vault', key.headers);
        expectStatus(res, 401);
        assert.equal(errorOf(res).code, 'token_expired');
      });

      it('a bearer with a bad checksum is refused without a database lookup', async () => {
        const key = await createApiKey(t, project, 'developer', {});
        const last = key.bearer.at(-1) === 'A' ? 'B' : 'A';
        const mangled = `${key.bearer.slice(0, -1)}${last}`;
        // With the table gone, any lookup would fail with a 500.
        const scratch = await startTestApp(dialect);
        try {
          await scratch.testDb.db.kysely.schema.dropTable('vault_grants').execute();
          await scratch.testDb.db.kysely.schema.dropTable('api_keys').execute();
          const res = await scratch.request({
            method: 'GET',
            url: '/v1/projects',
            headers: { authorization: `Bearer ${mangled}` },
          });
          expectStatus(res, 401);
          assert.equal(errorOf(res).code, 'unauthenticated');
        } finally {
          await scratch.close();
        }
      });
    });

    describe('CI tokens', () => {
      const mint = (
        headers: Record<string, string>,
        scopes: Record<string, 'read' | 'read_write'>,
        extra: object = {},
        granter?: { id: string; signingSecretKey: Uint8Array },
      ) => {
        const req = tokenRequest(project, 'cit', scopes, granter);
        return { req, res: post('/ci-tokens', headers, { ...req.body, ...extra }) };
      };
      const asDeveloper: { id: string; signingSecretKey: Uint8Array } = {
        id: '',
        signingSecretKey: new Uint8Array(),
      };
      before(() => {
        asDeveloper.id = developer.id;
        asDeveloper.signingSecretKey = developer.keys.signing.secretKey;
      });

      it('a developer mints a token that lives one hour by default; the bounds are 60–3600 s', async () => {
        const { req, res } = mint(developer.headers, { [staging]: 'read' }, {}, asDeveloper);
        const created = await res;
        expectStatus(created, 201);
        const token = dataOf<Record<string, unknown>>(created);
        assert.deepEqual(Object.keys(token).sort(), [...CI_TOKEN_FIELDS, 'bearer'].sort());
        assert.equal(token.id, req.id);
        assert.equal(token.created_by, developer.id);
        assert.equal(token.created_by_api_key, null);
        assert.ok(
          (token.bearer as string).startsWith('ci_') && isWellFormedBearer(token.bearer as string),
        );
        assert.equal(
          Date.parse(token.expires_at as string) - Date.parse(token.created_at as string),
          3_600_000,
        );
        for (const ttl of [59, 3601]) {
          const { res: bad } = mint(
            developer.headers,
            { [staging]: 'read' },
            { ttl_seconds: ttl },
            asDeveloper,
          );
          expectStatus(await bad, 400);
        }
      });

      it('expires on the clock (401 token_expired) and is refused after revocation', async () => {
        const short = mint(
          developer.headers,
          { [staging]: 'read' },
          { ttl_seconds: 120 },
          asDeveloper,
        );
        const shortToken = dataOf<{ bearer: string }>(await short.res);
        const headers = { authorization: `Bearer ${shortToken.bearer}` };
        expectStatus(await get('/vault', headers), 200);
        t.clock.advance(119_000);
        expectStatus(await get('/vault', headers), 200);
        t.clock.advance(2_000);
        const expired = await get('/vault', headers);
        expectStatus(expired, 401);
        assert.equal(errorOf(expired).code, 'token_expired');

        const other = mint(developer.headers, { [staging]: 'read' }, {}, asDeveloper);
        const otherToken = dataOf<{ bearer: string; id: string }>(await other.res);
        const otherHeaders = { authorization: `Bearer ${otherToken.bearer}` };
        expectStatus(await get('/vault', otherHeaders), 200);
        expectStatus(await del(`/ci-tokens/${otherToken.id}`, developer.headers), 204);
        const revoked = await get('/vault', otherHeaders);
        expectStatus(revoked, 401);
        assert.equal(errorOf(revoked).code, 'unauthenticated');
      });

      it('an API key mints only within its scopes, read_write only where it has it, never past its expiry', async () => {
        const expiresAt = new Date(t.clock.now().getTime() + 10 * 60_000).toISOString();
        const keyReq = tokenRequest(project, 'key', {
          [staging]: 'read_write',
          [production]: 'read',
        });
        const keyRes = await post('/api-keys', project.admin.headers, {
          ...keyReq.body,
          name: 'deployer',
          role: 'developer',
          expires_at: expiresAt,
        });
        expectStatus(keyRes, 201);
        const keyHeaders = { authorization: `Bearer ${dataOf<{ bearer: string }>(keyRes).bearer}` };
        const asKey = { id: keyReq.id, signingSecretKey: keyReq.keys.signing.secretKey };

        let { res } = mint(keyHeaders, { [production]: 'read_write' }, {}, asKey);
        let refused = await res;
        expectStatus(refused, 403);
        assert.deepEqual(errorOf(refused).details, [
          { field: `scopes.${production}`, issue: 'read_only' },
        ]);
        ({ res } = mint(keyHeaders, { [project.env.development.id]: 'read' }, {}, asKey));
        refused = await res;
        expectStatus(refused, 403);
        assert.equal(errorOf(refused).details![0]!.issue, 'outside_scope');

        // Grants signed by someone else than the minting key: refused.
        ({ res } = mint(keyHeaders, { [staging]: 'read' }));
        expectStatus(await res, 422);

        ({ res } = mint(keyHeaders, { [staging]: 'read_write', [production]: 'read' }, {}, asKey));
        const created = await res;
        expectStatus(created, 201);
        const token = dataOf<{
          id: string;
          expires_at: string;
          created_by: string;
          created_by_api_key: string;
        }>(created);
        assert.equal(token.expires_at, expiresAt, 'capped by the minting key');
        assert.equal(token.created_by, project.admin.id);
        assert.equal(token.created_by_api_key, keyReq.id);
        const granters = await t.testDb.db.kysely
          .selectFrom('vault_grants')
          .select('granter_id')
          .where('recipient_id', '=', token.id)
          .execute();
        assert.deepEqual(new Set(granters.map((g) => g.granter_id)), new Set([keyReq.id]));

        // The key lists and revokes what it minted; a CI token can do neither for others.
        const listed = await get('/ci-tokens', keyHeaders);
        expectStatus(listed, 200);
        assert.deepEqual(
          (listed.data as { data: { id: string }[] }).data.map((c) => c.id),
          [token.id],
        );
      });

      it('viewers, viewer keys and CI tokens cannot mint; developers see only their own tokens', async () => {
        expectStatus(await mint(viewer.headers, { [staging]: 'read' }).res, 403);
        const viewerKey: TestToken = await createApiKey(t, project, 'viewer', {});
        expectStatus(await mint(viewerKey.headers, { [staging]: 'read' }).res, 403);
        const ci = dataOf<{ bearer: string; id: string }>(
          await mint(developer.headers, { [staging]: 'read' }, {}, asDeveloper).res,
        );
        const ciHeaders = { authorization: `Bearer ${ci.bearer}` };
        expectStatus(await mint(ciHeaders, { [staging]: 'read' }).res, 403);
        expectStatus(await get('/ci-tokens', ciHeaders), 403);

        const adminToken = dataOf<{ id: string }>(
          await mint(project.admin.headers, { [production]: 'read' }).res,
        );
        const mine = await get('/ci-tokens?per_page=100', developer.headers);
        const ids = (mine.data as { data: { id: string; created_by: string }[] }).data;
        assert.ok(ids.every((c) => c.created_by === developer.id));
        assert.ok(!ids.some((c) => c.id === adminToken.id));
        expectStatus(await del(`/ci-tokens/${adminToken.id}`, developer.headers), 404);
        const all = await get('/ci-tokens?per_page=100', project.admin.headers);
        assert.ok(
          (all.data as { data: { id: string }[] }).data.some((c) => c.id === adminToken.id),
        );
        // A CI token may revoke itself.
        expectStatus(await del(`/ci-tokens/${ci.id}`, ciHeaders), 204);
        expectStatus(await get('/vault', ciHeaders), 401);
      });
    });
  });
}
