import { generateBearer, TOKEN_PREFIXES } from '@coffer/sdk';
import type { Kysely, Selectable } from 'kysely';
import type { SharedDeps } from '../../shared-deps.js';
import type { ApiKeyTable, CiTokenTable, Database } from '../../db/schema.js';
import { AppError, validation, type ErrorDetail } from '../../errors.js';
import type { ListParams } from '../../http/pagination.js';
import type { Principal, Role, Scope, Scopes } from '../../http/principal.js';
import { audit, type Actor } from '../audit/audit.js';
import { hashToken, type CredentialForgetting } from '../identity/credentials.js';
import {
  lockedProjectAccess,
  projectAccess,
  requireRole,
  roleAtLeast,
  type ProjectAccess,
} from '../../access/project-access.js';
import { tokenGrantRows, type EnvironmentGrantInput } from '../vault/grants.js';
import type { VaultService } from '../vault/vault.service.js';
import * as repo from './tokens.repo.js';
import { MAX_CI_TOKEN_TTL_SECONDS } from './tokens.schemas.js';

type TokensDeps = Pick<SharedDeps, 'db' | 'clock'> & {
  credentials: CredentialForgetting;
  vault: Pick<VaultService, 'environmentsOf' | 'stateOf' | 'insertGrants' | 'deleteGrantsOf'>;
};

interface NewTokenInput {
  id: string;
  name?: string;
  scopes: Record<string, Scope>;
  public_key: string;
  signing_public_key: string;
  grants: readonly EnvironmentGrantInput[];
}

interface CreateApiKeyInput extends NewTokenInput {
  name: string;
  role: Role;
  expires_at?: string;
}

interface CreateCiTokenInput extends NewTokenInput {
  ttl_seconds?: number;
}

/**
 * Who is creating a credential, and the bounds it sets: a new token never gets
 * a broader role, more environments, `read_write` where the minter only reads,
 * or a later expiry than its minter.
 */
interface Minter {
  /** Signs the new token's grants: a user id, or the minting API key's id. */
  granterId: string;
  signingPublicKey: string;
  role: Role;
  /** `null`: every environment (a member). */
  scopes: Scopes | null;
  expiresAt: string | null;
  apiKeyId: string | null;
}

async function minterOf(trx: Kysely<Database>, access: ProjectAccess): Promise<Minter> {
  const p = access.principal;
  if (p.kind === 'ci_token') {
    throw new AppError('forbidden', 'A CI token cannot create API keys or CI tokens');
  }
  if (p.kind === 'session') {
    const signingPublicKey = await repo.signingKeyOfUser(trx, p.userId);
    if (!signingPublicKey) throw new AppError('forbidden', 'Your account has no signing key');
    return {
      granterId: p.userId,
      signingPublicKey,
      role: access.role,
      scopes: null,
      expiresAt: null,
      apiKeyId: null,
    };
  }
  const key = await repo.apiKeyMinter(trx, p.id);
  if (!key?.signing_public_key) {
    throw new AppError(
      'forbidden',
      'This API key has no signing key (it predates them), so it cannot sign grants for new tokens',
    );
  }
  return {
    granterId: p.id,
    signingPublicKey: key.signing_public_key,
    role: access.role,
    scopes: access.scopes,
    expiresAt: key.expires_at,
    apiKeyId: p.id,
  };
}

/** Maps requested scopes (environment id or slug) to environment ids; unknown ones are a 422. */
function resolveScopes(
  environments: readonly { id: string; slug: string }[],
  requested: Record<string, Scope>,
): Record<string, Scope> {
  const byRef = new Map<string, string>();
  for (const e of environments) {
    byRef.set(e.id, e.id);
    byRef.set(e.slug, e.id);
  }
  const scopes: Record<string, Scope> = {};
  const unknown: ErrorDetail[] = [];
  for (const [ref, scope] of Object.entries(requested)) {
    const id = byRef.get(ref);
    if (!id) unknown.push({ field: `scopes.${ref}`, issue: 'not_found' });
    else if (id in scopes) throw validation(`scopes.${ref}`, 'duplicate');
    else scopes[id] = scope;
  }
  if (unknown.length) {
    throw new AppError('unprocessable', 'No such environment in this project', unknown);
  }
  return scopes;
}

function checkWithinMinter(minter: Minter, role: Role, scopes: Record<string, Scope>): void {
  if (!roleAtLeast(minter.role, role)) {
    throw new AppError(
      'forbidden',
      `You cannot create a credential with role ${role}: yours is ${minter.role}`,
    );
  }
  if (minter.scopes === null) return;
  const beyond = Object.entries(scopes).flatMap(([env, scope]): ErrorDetail[] => {
    const own = minter.scopes![env];
    if (!own) return [{ field: `scopes.${env}`, issue: 'outside_scope' }];
    if (scope === 'read_write' && own !== 'read_write')
      return [{ field: `scopes.${env}`, issue: 'read_only' }];
    return [];
  });
  if (beyond.length) {
    throw new AppError(
      'forbidden',
      'A new credential cannot reach beyond the scopes of the API key that creates it',
      beyond,
    );
  }
}

const earlierOf = (a: string | null, b: string | null) =>
  a === null ? b : b === null ? a : a < b ? a : b;

const parseScopes = (json: string) => JSON.parse(json) as Record<string, Scope>;

function apiKeyView(
  row: Omit<
    Selectable<ApiKeyTable>,
    'project_id' | 'token_hash' | 'public_key' | 'signing_public_key'
  >,
) {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    scopes: parseScopes(row.scopes),
    created_by: row.created_by,
    created_at: row.created_at,
    expires_at: row.expires_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
  };
}

function ciTokenView(
  row: Omit<
    Selectable<CiTokenTable>,
    'project_id' | 'token_hash' | 'public_key' | 'signing_public_key'
  >,
) {
  return {
    id: row.id,
    name: row.name,
    scopes: parseScopes(row.scopes),
    created_by: row.created_by,
    created_by_api_key: row.created_by_api_key,
    created_at: row.created_at,
    expires_at: row.expires_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
  };
}

/** CI tokens: admins see and revoke all of them; others only those they minted. */
function ciTokenOwner(access: ProjectAccess): repo.CiTokenOwner {
  if (access.role === 'admin') return { all: true };
  const p = access.principal;
  return { all: false, userId: access.userId, apiKeyId: p.kind === 'api_key' ? p.id : null };
}

export function tokensService(deps: TokensDeps) {
  const { db, clock, credentials, vault } = deps;
  const kysely = db.kysely;

  /**
   * The part API keys and CI tokens share: inside one transaction that holds the
   * project lock (so the epoch cannot move under it), check the id, the scopes
   * against the minter, and the grants against the scopes and the current epoch.
   */
  async function mint<T>(
    principal: Principal | null,
    projectId: string,
    needed: { role: Role; action: string },
    table: repo.TokenTable,
    input: NewTokenInput,
    role: Role,
    write: (
      trx: Kysely<Database>,
      ctx: { minter: Minter; scopes: Record<string, Scope>; bearer: string; now: string },
    ) => Promise<T>,
  ): Promise<T> {
    const now = clock.now().toISOString();
    return kysely.transaction().execute(async (trx) => {
      // Resolved under the project lock, so a minter demoted or removed a moment
      // ago is judged on what has committed.
      const access = await lockedProjectAccess(trx, db.dialect, principal, projectId);
      requireRole(access, needed.role, needed.action);
      const minter = await minterOf(trx, access);
      if (await repo.idTaken(trx, table, input.id)) {
        throw new AppError('already_exists', 'A credential with this id already exists', [
          { field: 'id', issue: 'taken' },
        ]);
      }
      const scopes = resolveScopes(await vault.environmentsOf(trx, access.projectId), input.scopes);
      if (role === 'viewer' && Object.keys(scopes).length > 0) {
        throw new AppError(
          'unprocessable',
          'A viewer credential reads no values, so it has no scopes',
          [{ field: 'scopes', issue: 'viewer_has_no_scopes' }],
        );
      }
      checkWithinMinter(minter, role, scopes);
      const state = await vault.stateOf(trx, access.projectId);
      const grants = tokenGrantRows({
        projectId: access.projectId,
        epoch: state?.vault_epoch ?? 0,
        recipientType: table === 'api_keys' ? 'api_key' : 'ci_token',
        recipientId: input.id,
        recipientPublicKey: input.public_key,
        granterId: minter.granterId,
        granterSigningPublicKey: minter.signingPublicKey,
        environmentIds: Object.keys(scopes),
        grants: input.grants,
        at: now,
      });
      const bearer = generateBearer(
        table === 'api_keys' ? TOKEN_PREFIXES.apiKey : TOKEN_PREFIXES.ci,
      );
      const result = await write(trx, { minter, scopes, bearer, now });
      await vault.insertGrants(trx, grants);
      return result;
    });
  }

  return {
    // For the members domain, on its transaction; no access check: the caller made it.
    /**
     * Revokes the API keys and CI tokens a departing member created in the
     * project, and deletes their grants as revoking each one would. Returns
     * their ids, for the caller to forget once it has committed.
     */
    async revokeAccountableTo(
      trx: Kysely<Database>,
      projectId: string,
      userId: string,
      at: string,
    ): Promise<string[]> {
      const revoked = await repo.revokeCreatedBy(trx, projectId, userId, at);
      await vault.deleteGrantsOf(trx, projectId, revoked);
      return revoked;
    },

    async createApiKey(actor: Actor, projectId: string, input: CreateApiKeyInput) {
      const access = await projectAccess(kysely, actor.principal, projectId);
      requireRole(access, 'admin', 'create API keys');
      const requestedExpiry = input.expires_at ? new Date(input.expires_at).toISOString() : null;
      if (requestedExpiry !== null && requestedExpiry <= clock.now().toISOString()) {
        throw validation('expires_at', 'in_past', 'expires_at must be in the future');
      }
      const at = clock.now();
      return mint(
        actor.principal,
        projectId,
        { role: 'admin', action: 'create API keys' },
        'api_keys',
        input,
        input.role,
        async (trx, { minter, scopes, bearer, now }) => {
          const row = {
            id: input.id,
            project_id: projectId,
            name: input.name,
            token_hash: hashToken(bearer),
            role: input.role,
            scopes: JSON.stringify(scopes),
            public_key: input.public_key,
            signing_public_key: input.signing_public_key,
            created_by: access.userId,
            created_at: now,
            expires_at: earlierOf(requestedExpiry, minter.expiresAt),
            last_used_at: null,
            revoked_at: null,
          };
          await repo.insertApiKey(trx, row);
          await audit(trx, { actor, projectId, at }, 'api_key.created', ['api_key', row.id], {
            name: row.name,
            role: row.role,
            scopes,
            expires_at: row.expires_at,
          });
          return { ...apiKeyView(row), bearer };
        },
      );
    },

    async listApiKeys(principal: Principal | null, projectId: string, params: ListParams) {
      const access = await projectAccess(kysely, principal, projectId);
      requireRole(access, 'admin', 'list API keys');
      const { rows, total } = await repo.listApiKeys(kysely, db.dialect, projectId, params);
      return { items: rows.map(apiKeyView), total };
    },

    /** Revokes at once: its grants go, the CI tokens it minted are revoked with it. */
    async revokeApiKey(actor: Actor, projectId: string, id: string): Promise<void> {
      const access = await projectAccess(kysely, actor.principal, projectId);
      requireRole(access, 'admin', 'revoke API keys');
      const at = clock.now();
      const revoked = await kysely.transaction().execute(async (trx) => {
        const key = await repo.findApiKey(trx, projectId, id);
        if (!key) throw new AppError('not_found', 'API key not found');
        if (key.revoked_at) return [];
        await repo.revoke(trx, 'api_keys', id, at.toISOString());
        const children = await repo.revokeCiTokensMintedBy(trx, id, at.toISOString());
        const ids = [id, ...children.map((c) => c.id)];
        await vault.deleteGrantsOf(trx, projectId, ids);
        await audit(trx, { actor, projectId, at }, 'api_key.revoked', ['api_key', id], {
          ci_tokens_revoked: children.map((c) => c.id),
        });
        return ids;
      });
      for (const credentialId of revoked) credentials.forgetCredential(credentialId);
    },

    async createCiToken(actor: Actor, projectId: string, input: CreateCiTokenInput) {
      const access = await projectAccess(kysely, actor.principal, projectId);
      requireRole(access, 'developer', 'create CI tokens');
      const at = clock.now();
      const ttl = Math.min(input.ttl_seconds ?? MAX_CI_TOKEN_TTL_SECONDS, MAX_CI_TOKEN_TTL_SECONDS);
      // CI tokens act as developers within their scopes (see projects/access.ts).
      return mint(
        actor.principal,
        projectId,
        { role: 'developer', action: 'create CI tokens' },
        'ci_tokens',
        input,
        'developer',
        async (trx, { minter, scopes, bearer, now }) => {
          const expiresAt = new Date(at.getTime() + ttl * 1000).toISOString();
          const row = {
            id: input.id,
            project_id: projectId,
            name: input.name ?? 'CI token',
            token_hash: hashToken(bearer),
            scopes: JSON.stringify(scopes),
            public_key: input.public_key,
            signing_public_key: input.signing_public_key,
            created_by: access.userId,
            created_by_api_key: minter.apiKeyId,
            created_at: now,
            expires_at: earlierOf(expiresAt, minter.expiresAt)!,
            last_used_at: null,
            revoked_at: null,
          };
          await repo.insertCiToken(trx, row);
          await audit(trx, { actor, projectId, at }, 'ci_token.created', ['ci_token', row.id], {
            name: row.name,
            scopes,
            expires_at: row.expires_at,
          });
          return { ...ciTokenView(row), bearer };
        },
      );
    },

    async listCiTokens(principal: Principal | null, projectId: string, params: ListParams) {
      const access = await projectAccess(kysely, principal, projectId);
      requireRole(access, 'developer', 'list CI tokens');
      if (access.principal.kind === 'ci_token')
        throw new AppError('forbidden', 'A CI token cannot list CI tokens');
      const { rows, total } = await repo.listCiTokens(
        kysely,
        db.dialect,
        projectId,
        ciTokenOwner(access),
        params,
      );
      return { items: rows.map(ciTokenView), total };
    },

    async revokeCiToken(actor: Actor, projectId: string, id: string): Promise<void> {
      const access = await projectAccess(kysely, actor.principal, projectId);
      requireRole(access, 'developer', 'revoke CI tokens');
      const p = access.principal;
      // A token may revoke itself (a pipeline cleaning up after its run); nothing else.
      const owner: repo.CiTokenOwner | null = p.kind === 'ci_token' ? null : ciTokenOwner(access);
      if (p.kind === 'ci_token' && p.id !== id)
        throw new AppError('forbidden', 'A CI token can only revoke itself');
      const at = clock.now();
      const revoked = await kysely.transaction().execute(async (trx) => {
        const token = owner
          ? await repo.findOwnedCiToken(trx, projectId, owner, id)
          : await repo.findCiToken(trx, projectId, id);
        if (!token) throw new AppError('not_found', 'CI token not found');
        if (token.revoked_at) return false;
        await repo.revoke(trx, 'ci_tokens', id, at.toISOString());
        await vault.deleteGrantsOf(trx, projectId, [id]);
        await audit(trx, { actor, projectId, at }, 'ci_token.revoked', ['ci_token', id]);
        return true;
      });
      if (revoked) credentials.forgetCredential(id);
    },
  };
}

export type TokensService = ReturnType<typeof tokensService>;
