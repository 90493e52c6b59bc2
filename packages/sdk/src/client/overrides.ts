import { decryptOverride, deriveOverrideKey, encryptOverride, ready } from '../crypto/index.js';
import { environmentIdOf } from './environments.js';
import { allPages, apiPath, type CofferClient, type Page } from './http.js';

// ---- The API's shapes and one typed call per endpoint --------------------------

/** One of your own personal overrides: `value` is the envelope only you can open. */
export interface Override {
  id: string;
  environment_id: string;
  name: string;
  value: string;
  created_at: string;
  updated_at: string;
}

/** What admins see of a member's overrides: names, never values. */
export interface OverrideName {
  environment_id: string;
  environment_slug: string;
  name: string;
  updated_at: string;
}

export interface OverrideListQuery {
  page?: number;
  per_page?: number;
  sort?: 'created_at' | 'updated_at' | 'name';
  order?: 'asc' | 'desc';
  /** Only this environment (id or slug). */
  environment?: string;
}

const overridePath = (projectId: string, env: string, name: string) =>
  apiPath`/v1/projects/${projectId}/environments/${env}/overrides/${name}`;

/** `GET /v1/projects/{p}/overrides`: your own overrides (signed-in members only). */
export const listOverrideEnvelopes = (
  client: CofferClient,
  projectId: string,
  query: OverrideListQuery = {},
): Promise<Page<Override>> =>
  client.requestPage<Override>('GET', apiPath`/v1/projects/${projectId}/overrides`, {
    query: { ...query },
  });

/** `PUT …/environments/{env}/overrides/{name}`: sets your override (an envelope from `encryptOverride`). */
export const putOverrideEnvelope = (
  client: CofferClient,
  projectId: string,
  env: string,
  name: string,
  value: string,
) => client.request<Override>('PUT', overridePath(projectId, env, name), { body: { value } });

/** `DELETE …/environments/{env}/overrides/{name}`: removes your override. */
export const deleteOverride = (
  client: CofferClient,
  projectId: string,
  env: string,
  name: string,
) => client.request<void>('DELETE', overridePath(projectId, env, name));

/** `GET /v1/projects/{p}/members/{m}/overrides`: which names a member overrides (admins). */
export const listMemberOverrides = (
  client: CofferClient,
  projectId: string,
  memberId: string,
  query: Omit<OverrideListQuery, 'environment'> = {},
): Promise<Page<OverrideName>> =>
  client.requestPage<OverrideName>(
    'GET',
    apiPath`/v1/projects/${projectId}/members/${memberId}/overrides`,
    { query: { ...query } },
  );

// ---- Decrypted operations -----------------------------------------------------

/** A member's override key and whose it is (`VaultSession.overrideKey()`). */
export interface OverrideKey {
  userId: string;
  key: Uint8Array;
}

/** The override key of a member's X25519 private key. */
export const overrideKeyOf = (userId: string, encryptionSecretKey: Uint8Array): OverrideKey => ({
  userId,
  key: deriveOverrideKey(encryptionSecretKey, userId),
});

/**
 * Your overrides in a project, decrypted: environment id → { NAME: value }.
 * `owner` may be a promise (the vault still opening); with `member: true` the
 * listing is fetched meanwhile. A null owner (a token) has none: nothing is read.
 */
export async function readOverrides(
  client: CofferClient,
  projectId: string,
  owner: OverrideKey | null | Promise<OverrideKey | null>,
  options: { member?: boolean } = {},
): Promise<Map<string, Record<string, string>>> {
  const fetchAll = () =>
    allPages((page) =>
      listOverrideEnvelopes(client, projectId, { page, per_page: 100, sort: 'name', order: 'asc' }),
    );
  // Known to be a member's: the listing travels while the key is still coming.
  const early =
    owner !== null && (options.member || !(owner instanceof Promise)) ? fetchAll() : null;
  early?.catch(() => undefined); // awaited below unless the key turns out null
  const [key] = await Promise.all([owner, ready()]);
  const out = new Map<string, Record<string, string>>();
  if (!key) return out;
  for (const row of await (early ?? fetchAll())) {
    let env = out.get(row.environment_id);
    if (!env) out.set(row.environment_id, (env = {}));
    env[row.name] = decryptOverride({
      overrideKey: key.key,
      userId: key.userId,
      projectId,
      environmentId: row.environment_id,
      name: row.name,
      envelope: row.value,
    });
  }
  return out;
}

/** Encrypts `value` to your own key and stores it as your override of `name` in `env`. */
export async function setOverride(
  client: CofferClient,
  projectId: string,
  env: string,
  name: string,
  value: string,
  owner: OverrideKey,
): Promise<Override> {
  await ready();
  const environmentId = await environmentIdOf(client, projectId, env);
  const envelope = encryptOverride({
    overrideKey: owner.key,
    userId: owner.userId,
    projectId,
    environmentId,
    name,
    value,
  });
  return putOverrideEnvelope(client, projectId, environmentId, name, envelope);
}
