import { createGrant, encodeKeyPart, ready } from '../crypto/index.js';
import { randomBytes, sodium } from '../crypto/sodium.js';
import { tokenKeysFromKeyPart } from '../crypto/token-signing.js';
import { allPages, apiPath, type CofferClient } from '../client/http.js';
import {
  postApiKey,
  postCiToken,
  type ApiKey,
  type CiToken,
  type Scope,
} from '../client/tokens.js';
import type { EnvironmentGrantUpload } from '../client/vault.js';
import { VaultError } from './errors.js';
import { isStaleEpoch } from '../client/errors.js';
import type { VaultSession } from './session.js';

const KEY_PART_BYTES = 32;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A fresh `key_…` / `cit_…` id: the client picks it because the grants are signed for it. */
function newTokenId(prefix: 'key' | 'cit'): string {
  const lib = sodium();
  let suffix = '';
  for (let i = 0; i < 20; i++) suffix += BASE62[lib.randombytes_uniform(62)];
  return `${prefix}_${suffix}`;
}

/** Every environment of the project, to turn slugs into ids. */
export async function listEnvironmentRefs(
  client: CofferClient,
  projectId: string,
): Promise<{ id: string; slug: string; name: string }[]> {
  return allPages((page, per_page) =>
    client.requestPage<{ id: string; slug: string; name: string }>(
      'GET',
      apiPath`/v1/projects/${projectId}/environments`,
      { query: { page, per_page, sort: 'created_at', order: 'asc' } },
    ),
  );
}

async function resolveScopes(
  session: VaultSession,
  scopes: Record<string, Scope>,
): Promise<Record<string, Scope>> {
  const environments = await listEnvironmentRefs(session.client, session.projectId);
  const out: Record<string, Scope> = {};
  for (const [ref, scope] of Object.entries(scopes)) {
    const env = environments.find((e) => e.id === ref || e.slug === ref);
    if (!env)
      throw new VaultError('unknown_environment', `No environment "${ref}" in this project`);
    out[env.id] = scope;
  }
  return out;
}

/** The key part, the token's public keys, and its environment-key grants, signed by the session. */
async function prepareToken(
  session: VaultSession,
  prefix: 'key' | 'cit',
  scopes: Record<string, Scope>,
) {
  // The key part names the signing key of this session, which signs the
  // token's grants, and (version 3) the root of the project's membership chain
  // as this session verified it: the token's client accepts grants from the
  // creator or from an admin of that chain, and refuses any other.
  const seed = randomBytes(KEY_PART_BYTES);
  const keyPart = encodeKeyPart(
    seed,
    session.publicKeys.signingPublicKey,
    session.trustedChainRoot,
  );
  sodium().memzero(seed);
  const keys = tokenKeysFromKeyPart(keyPart);
  const id = newTokenId(prefix);
  const grants: EnvironmentGrantUpload[] = [];
  for (const environmentId of Object.keys(scopes)) {
    const { key, epoch } = await session.environmentKey(environmentId);
    const grant = createGrant({
      key,
      kind: 'environment_key',
      projectId: session.projectId,
      epoch,
      environmentId,
      recipientId: id,
      recipientPublicKey: keys.publicKey,
      granterId: session.signer.id,
      granterSigningSecretKey: session.signer.signingSecretKey,
    });
    grants.push({
      environment_id: environmentId,
      epoch,
      sealed_key: grant.sealed_key,
      signature: grant.signature,
    });
  }
  sodium().memzero(keys.encryption.secretKey);
  sodium().memzero(keys.signing.secretKey);
  return {
    keyPart,
    upload: {
      id,
      scopes,
      public_key: keys.publicKey,
      signing_public_key: keys.signingPublicKey,
      grants,
    },
  };
}

/**
 * Prepares and uploads a token, refreshing the vault and redoing the grants if a
 * re-key moved the epoch in between. Returns what the server answered and the
 * full credential `<bearer>.<key part>`, which exists only here: show it once.
 */
async function mintToken<T extends { bearer: string }>(
  session: VaultSession,
  prefix: 'key' | 'cit',
  scopes: Record<string, Scope>,
  send: (upload: Awaited<ReturnType<typeof prepareToken>>['upload']) => Promise<T>,
): Promise<{ token: Omit<T, 'bearer'>; credential: string }> {
  await ready();
  for (let attempt = 1; ; attempt++) {
    const { keyPart, upload } = await prepareToken(session, prefix, scopes);
    try {
      const { bearer, ...token } = await send(upload);
      return { token, credential: `${bearer}.${keyPart}` };
    } catch (error) {
      if (attempt < 3 && isStaleEpoch(error)) {
        await session.refresh();
        continue;
      }
      throw error;
    }
  }
}

export interface CreateApiKeyOptions {
  name: string;
  role: ApiKey['role'];
  /** Environment id or slug → `read` | `read_write`. A viewer key has none. */
  scopes?: Record<string, Scope>;
  /** ISO timestamp; none = never expires (unless the creating key does). */
  expiresAt?: string | Date;
}

/** Creates an API key with grants of the keys of its scoped environments (an admin's vault session). */
export async function createApiKey(
  session: VaultSession,
  options: CreateApiKeyOptions,
): Promise<{ apiKey: ApiKey; credential: string }> {
  const scopes = await resolveScopes(session, options.scopes ?? {});
  const expiresAt =
    options.expiresAt instanceof Date ? options.expiresAt.toISOString() : options.expiresAt;
  const { token, credential } = await mintToken(session, 'key', scopes, (upload) =>
    postApiKey(session.client, session.projectId, {
      ...upload,
      name: options.name,
      role: options.role,
      ...(expiresAt !== undefined ? { expires_at: expiresAt } : {}),
    }),
  );
  return { apiKey: token, credential };
}

export interface CreateCiTokenOptions {
  name?: string;
  /** Environment id or slug → `read` | `read_write`; within the minter's own scopes. */
  scopes: Record<string, Scope>;
  /** 60–3600 seconds; 1 hour by default. */
  ttlSeconds?: number;
}

/** Mints a CI token (a member's session, or an API key's from `fromCredential`). */
export async function createCiToken(
  session: VaultSession,
  options: CreateCiTokenOptions,
): Promise<{ ciToken: CiToken; credential: string }> {
  const scopes = await resolveScopes(session, options.scopes);
  const { token, credential } = await mintToken(session, 'cit', scopes, (upload) =>
    postCiToken(session.client, session.projectId, {
      ...upload,
      ...(options.name !== undefined ? { name: options.name } : {}),
      ...(options.ttlSeconds !== undefined ? { ttl_seconds: options.ttlSeconds } : {}),
    }),
  );
  return { ciToken: token, credential };
}
