import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ready } from '@coffer/sdk';
import { SESSION_ONLY, SESSION_OR_BEARER } from '../../http/openapi.js';
import { ok } from '../../http/schemas.js';
import { ProjectIdParams } from '../../http/params.js';
import { actorOf } from '../audit/audit.js';
import {
  GrantsBody,
  GrantsResult,
  RekeyBody,
  RekeyResult,
  Snapshot,
  VaultStatus,
} from './vault.schemas.js';
import type { VaultService } from './vault.service.js';

const tags = ['vault'];

/** `/projects/{project_id}/vault…`: key epoch, grants of the project key, snapshot and re-key. */
export async function vaultRoutes(
  app: FastifyInstance,
  { vault: service, rekeyBodyLimitBytes }: { vault: VaultService; rekeyBodyLimitBytes: number },
): Promise<void> {
  await ready(); // fingerprints and signature checks use libsodium
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/projects/:project_id/vault',
    {
      schema: {
        tags,
        summary: 'The vault as the caller sees it',
        operationId: 'getVault',
        security: SESSION_OR_BEARER,
        description:
          'Any member or token of the project. Returns the key epoch (0 until the vault is initialised), whether a re-key is recommended (after a member with secret access was removed), and the caller’s own grants for the current epoch: a member’s project-key grant, or a token’s environment-key grants, each with the granter’s Ed25519 public key so the SDK can verify it. Viewers hold no grant. For admins, `pending_grants` lists the active admins and developers still waiting for the project key, with their public keys and fingerprints to compare before granting.',
        params: ProjectIdParams,
        response: { 200: VaultStatus },
      },
    },
    async (request) => ok(await service.status(request.principal, request.params.project_id)),
  );

  r.post(
    '/projects/:project_id/vault/grants',
    {
      schema: {
        tags,
        summary: 'Grant the project key to members',
        operationId: 'postVaultGrants',
        security: SESSION_ONLY,
        description:
          'Signed-in admins holding the current key. Each grant is the project key sealed to an active admin’s or developer’s X25519 key and signed with the caller’s Ed25519 key over the grant’s binding; the server verifies the signature (422 `unprocessable` otherwise) and replaces any grant the recipient already has for that epoch. Grants must carry the current epoch (409 `version_conflict`, issue `stale_epoch`). The very first call — the admin’s own grant at epoch 1 — initialises the vault (epoch 0 → 1). Recipients who are not active admins or developers: 422.',
        params: ProjectIdParams,
        body: GrantsBody,
        response: { 200: GrantsResult },
      },
    },
    async (request) =>
      ok(await service.grant(actorOf(request), request.params.project_id, request.body.grants)),
  );

  r.get(
    '/projects/:project_id/vault/snapshot',
    {
      schema: {
        tags,
        summary: 'Everything a re-key must re-encrypt and re-grant',
        operationId: 'getVaultSnapshot',
        security: SESSION_ONLY,
        description:
          'Signed-in admins. The key epoch, the environments, every stored secret version including history (id, secret, environment, name, version, epoch, envelope), the members who must receive the new project key (active admins and developers, with public keys and fingerprints), and the live API keys and CI tokens (not revoked, not expired, creator still a member, role above viewer) with their public keys and scopes, which must receive new environment-key grants. Read in one transaction.',
        params: ProjectIdParams,
        response: { 200: Snapshot },
      },
    },
    async (request) => ok(await service.snapshot(request.principal, request.params.project_id)),
  );

  r.post(
    '/projects/:project_id/vault/re-key',
    {
      bodyLimit: rekeyBodyLimitBytes,
      schema: {
        tags,
        summary: 'Commit a re-key of the vault, atomically',
        operationId: 'postRekey',
        security: SESSION_ONLY,
        description:
          'Signed-in admins. `from_epoch` is the epoch of the snapshot the client started from; `versions` re-encrypts EVERY stored version (history included) under epoch `from_epoch + 1`; `grants` gives the new project key to every active admin and developer; `token_grants` gives each live token the new key of each environment in its scope. All or nothing, in one transaction: a stale `from_epoch`, a missing or unknown version, a missing or extra member or token grant, or an envelope or grant of the wrong epoch is a 409 `version_conflict` whose `details` say what differs (fetch a new snapshot and retry). Afterwards the old grants are gone, writes under the old epoch are refused (409), `rekey_recommended` is cleared and every environment listing changes. This route accepts a larger body (`REKEY_BODY_LIMIT_BYTES`).',
        params: ProjectIdParams,
        body: RekeyBody,
        response: { 200: RekeyResult },
      },
    },
    async (request) =>
      ok(await service.rekey(actorOf(request), request.params.project_id, request.body)),
  );
}
