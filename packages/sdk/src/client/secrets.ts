import { decryptSecretValue, encryptSecretValue, parseEnvelope, ready } from '../crypto/index.js';
import { environmentIdOf } from './environments.js';
import { CofferApiError, isStaleEpoch } from './errors.js';
import { allPages, apiPath, type CofferClient, type Page } from './http.js';
import { readOverrides, type OverrideKey } from './overrides.js';
import { VaultError } from '../vault/errors.js';
import {
  hasReferences,
  resolveReferences,
  SecretReferencesError,
  type LoadedEnvironment,
  type Resolution,
} from '../references.js';

// ---- The API's shapes and one typed call per endpoint --------------------------

/** A secret as the API returns it: `value` is the envelope, present only for callers allowed to read it. */
export interface Secret {
  id: string;
  environment_id: string;
  name: string;
  version: number;
  value?: string;
  comment: string;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
}

export interface SecretVersion {
  id: string;
  secret_id: string;
  version: number;
  value?: string;
  created_at: string;
  created_by: string | null;
}

export interface SecretListQuery {
  page?: number;
  per_page?: number;
  sort?: 'created_at' | 'updated_at' | 'name';
  order?: 'asc' | 'desc';
}

export interface SecretVersionListQuery {
  page?: number;
  per_page?: number;
  sort?: 'created_at' | 'version';
  order?: 'asc' | 'desc';
}

export interface PutSecretBody {
  /** An envelope from `encryptSecretValue`, under the vault's current epoch. */
  value: string;
  /** Omitted: the current comment is kept. */
  comment?: string;
  /** The version last seen; `0`: the secret must not exist yet. Stale → 409 `version_conflict`. */
  expected_version?: number;
}

export interface BatchSecretItem extends PutSecretBody {
  name: string;
}

export interface BatchBody {
  secrets?: BatchSecretItem[];
  delete?: string[];
}

export interface BatchResult {
  secrets: Secret[];
  deleted: string[];
}

const secretsPath = (projectId: string, env: string) =>
  apiPath`/v1/projects/${projectId}/environments/${env}/secrets`;
const secretPath = (projectId: string, env: string, name: string) =>
  apiPath`/v1/projects/${projectId}/environments/${env}/secrets/${name}`;

/** `GET …/secrets`: one page; `value` only for readers. `env` is an id or a slug. */
export const listSecretEnvelopes = (
  client: CofferClient,
  projectId: string,
  env: string,
  query: SecretListQuery = {},
): Promise<Page<Secret>> =>
  client.requestPage<Secret>('GET', secretsPath(projectId, env), { query: { ...query } });

/**
 * The ETag of an environment's listing page (`query`), or with `known`
 * whether it changed since (`304` when not): what a client that keeps
 * something derived from the values (the CLI scan's keyed-hash cache) checks.
 */
export const secretListingTag = (
  client: CofferClient,
  projectId: string,
  env: string,
  query: SecretListQuery,
  known?: string,
) =>
  client.entityTag(secretsPath(projectId, env), {
    query: { ...query },
    ...(known ? { known } : {}),
  });

/** `GET …/secrets/{name}`: readers only. */
export const getSecretEnvelope = (
  client: CofferClient,
  projectId: string,
  env: string,
  name: string,
) => client.request<Secret>('GET', secretPath(projectId, env, name));

/** `PUT …/secrets/{name}`: creates (version 1) or adds a version. */
export const putSecretEnvelope = (
  client: CofferClient,
  projectId: string,
  env: string,
  name: string,
  body: PutSecretBody,
) => client.request<Secret>('PUT', secretPath(projectId, env, name), { body });

/** `DELETE …/secrets/{name}`: the secret and all its versions. */
export const deleteSecret = (client: CofferClient, projectId: string, env: string, name: string) =>
  client.request<void>('DELETE', secretPath(projectId, env, name));

/** `GET …/secrets/{name}/versions`: one page of history, newest first by default. */
export const listSecretVersions = (
  client: CofferClient,
  projectId: string,
  env: string,
  name: string,
  query: SecretVersionListQuery = {},
): Promise<Page<SecretVersion>> =>
  client.requestPage<SecretVersion>('GET', `${secretPath(projectId, env, name)}/versions`, {
    query: { ...query },
  });

/** `POST …/secrets/{name}/rollback`: the value of `version` becomes a new version. */
export const rollbackSecretEnvelope = (
  client: CofferClient,
  projectId: string,
  env: string,
  name: string,
  body: { version: number; expected_version?: number },
) => client.request<Secret>('POST', `${secretPath(projectId, env, name)}/rollback`, { body });

/** `POST …/secrets/batch`: all-or-nothing writes and deletes (at most 1,000 items). */
export const batchSecretEnvelopes = (
  client: CofferClient,
  projectId: string,
  env: string,
  body: BatchBody,
) => client.request<BatchResult>('POST', `${secretsPath(projectId, env)}/batch`, { body });

// ---- Decrypted operations -----------------------------------------------------

/**
 * Supplies the key of an environment at the vault's current epoch. The vault
 * session (`openVault`, `fromCredential`) is one: members derive it from their
 * project-key grant, tokens open their environment-key grants.
 */
export interface EnvironmentKeyProvider {
  environmentKey(
    projectId: string,
    environmentId: string,
  ): Promise<{ key: Uint8Array; epoch: number }>;
  /** Fetches the grants again; called once after a `stale_epoch` conflict (a re-key happened). */
  refresh?(): Promise<void>;
  /**
   * A member's override key (null for tokens): their personal overrides apply
   * on top. Absent: none are read (what a provider that knows it is a token
   * should do, so that no request is made for them).
   */
  overrideKey?(): Promise<OverrideKey | null>;
  /** Whether the keys are a member's (true), a token's (false), or not known yet. */
  readonly member?: boolean | undefined;
}

/** What decrypted operations work on: a client, a project, and keys for its environments. */
export interface SecretScope {
  client: CofferClient;
  projectId: string;
  keys: EnvironmentKeyProvider;
}

/** A secret with its value decrypted. */
export type DecryptedSecret = Omit<Secret, 'value'> & { value: string };

export interface DecryptedVersion {
  version: number;
  value: string;
  created_at: string;
  created_by: string | null;
}

/** A value could not be obtained: no read access (viewers, tokens out of scope) or too many items. */
export class SecretsError extends Error {
  constructor(
    readonly code: 'no_value' | 'too_many',
    message: string,
  ) {
    super(message);
    this.name = 'SecretsError';
  }
}

export const MAX_BATCH_ITEMS = 1000;

/**
 * Runs a write with the current key; after a `stale_epoch` conflict (a re-key
 * moved the vault on), refreshes the keys and tries once more.
 */
export async function withCurrentKey<T>(
  scope: SecretScope,
  environmentId: string,
  write: (key: { key: Uint8Array; epoch: number }) => Promise<T>,
): Promise<T> {
  await ready();
  try {
    return await write(await scope.keys.environmentKey(scope.projectId, environmentId));
  } catch (err) {
    if (!isStaleEpoch(err) || !scope.keys.refresh) throw err;
    await scope.keys.refresh();
    return write(await scope.keys.environmentKey(scope.projectId, environmentId));
  }
}

/** Decrypts an envelope of `name` in `environmentId`, refreshing the keys once if its epoch is newer. */
async function decrypt(
  scope: SecretScope,
  environmentId: string,
  name: string,
  envelope: string | undefined,
): Promise<string> {
  if (envelope === undefined) {
    throw new SecretsError(
      'no_value',
      `No value for ${name}: this credential may list names in this environment but not read values`,
    );
  }
  await ready();
  let { key, epoch } = await scope.keys.environmentKey(scope.projectId, environmentId);
  if (parseEnvelope(envelope).epoch !== epoch && scope.keys.refresh) {
    await scope.keys.refresh();
    ({ key, epoch } = await scope.keys.environmentKey(scope.projectId, environmentId));
  }
  return decryptSecretValue({
    environmentKey: key,
    projectId: scope.projectId,
    environmentId,
    name,
    epoch,
    envelope,
  });
}

/** Seals `value` as `name` of `environmentId` under `key` (an envelope for a write). */
export const encrypt = (
  scope: SecretScope,
  environmentId: string,
  name: string,
  value: string,
  key: { key: Uint8Array; epoch: number },
) =>
  encryptSecretValue({
    environmentKey: key.key,
    projectId: scope.projectId,
    environmentId,
    name,
    epoch: key.epoch,
    value,
  });

async function decryptSecret(scope: SecretScope, secret: Secret): Promise<DecryptedSecret> {
  const value = await decrypt(scope, secret.environment_id, secret.name, secret.value);
  return { ...secret, value };
}

/** Every secret of an environment with its envelope, across pages (sorted by name). */
function allSecrets(scope: SecretScope, env: string): Promise<Secret[]> {
  return allPages((page) =>
    listSecretEnvelopes(scope.client, scope.projectId, env, {
      page,
      per_page: 100,
      sort: 'name',
      order: 'asc',
    }),
  );
}

/**
 * How the read helpers (`getSecret`, `listSecrets`, `exportSecrets`) read
 * values. By default they are what a program should see: references resolved
 * and, for a member's session, the member's personal overrides on top.
 */
export interface ReadOptions {
  /** The text as stored: references left as written (default false). */
  raw?: boolean;
  /** Apply the caller's personal overrides (default true; tokens have none). */
  overrides?: boolean;
  /**
   * Opens another project for `${PROJECT/ENV.KEY}` (by name or id): its scope,
   * or null when the reader cannot read it. Absent: such references are
   * refused as unreadable.
   */
  project?: (ref: string) => Promise<SecretScope | null>;
}

/** Errors that mean "this reader may not read that environment", never shown as more than that. */
const isUnreadable = (err: unknown) =>
  (err instanceof CofferApiError && (err.status === 403 || err.status === 404)) ||
  (err instanceof VaultError &&
    ['out_of_scope', 'no_grant', 'not_initialized'].includes(err.code)) ||
  (err instanceof SecretsError && err.code === 'no_value');

/** One environment's values as read: raw text with overrides applied, and its id. */
interface EnvironmentRead {
  environmentId: string;
  values: Record<string, string>;
}

/** The caller's overrides of a project, fetched at most once per read. */
function overridesOnce(scope: SecretScope, wanted: boolean) {
  let pending: Promise<Map<string, Record<string, string>>> | undefined;
  return () =>
    (pending ??=
      wanted && scope.keys.overrideKey && scope.keys.member !== false
        ? readOverrides(scope.client, scope.projectId, scope.keys.overrideKey(), {
            member: scope.keys.member === true,
          })
        : Promise.resolve(new Map()));
}

/** The raw values of an environment (decrypted), with the caller's overrides on top. */
async function readEnvironment(
  scope: SecretScope,
  env: string,
  overrides: () => Promise<Map<string, Record<string, string>>>,
): Promise<EnvironmentRead> {
  const mine = overrides();
  mine.catch(() => undefined); // awaited below; both requests travel together
  const secrets = await allSecrets(scope, env);
  const values: Record<string, string> = {};
  for (const secret of secrets) values[secret.name] = (await decryptSecret(scope, secret)).value;
  const own = await mine;
  const environmentId =
    secrets[0]?.environment_id ??
    (own.size > 0 ? await environmentIdOf(scope.client, scope.projectId, env) : env);
  Object.assign(values, own.get(environmentId));
  return { environmentId, values };
}

/** An environment a read took values from: the one read, or one its values refer to. */
export interface SecretSource {
  /** The scope it was read through (another project's for `${PROJECT/ENV.KEY}`). */
  scope: SecretScope;
  environmentId: string;
}

/** Resolves the references of one environment's values, fetching what they refer to through `scope`. */
async function resolveIn(
  scope: SecretScope,
  env: string,
  read: EnvironmentRead,
  options: ReadOptions,
  sources: SecretSource[] = [],
): Promise<Resolution> {
  const scopes = new Map<
    string,
    Promise<{
      scope: SecretScope;
      overrides: () => Promise<Map<string, Record<string, string>>>;
    } | null>
  >();
  const homeOverrides = overridesOnce(scope, options.overrides !== false);
  scopes.set('', Promise.resolve({ scope, overrides: homeOverrides }));
  const projectScope = (project: string | null) => {
    const id = project ?? '';
    let found = scopes.get(id);
    if (!found) {
      found = (async () => {
        const other = options.project ? await options.project(id) : null;
        return other
          ? { scope: other, overrides: overridesOnce(other, options.overrides !== false) }
          : null;
      })();
      scopes.set(id, found);
    }
    return found;
  };
  return resolveReferences(read.values, {
    key: `${scope.projectId}/${read.environmentId}`,
    environment: [env, read.environmentId],
    project: [scope.projectId],
    load: async ({ project, environment }): Promise<LoadedEnvironment | null> => {
      try {
        const target = await projectScope(project);
        if (!target) return null;
        const loaded = await readEnvironment(target.scope, environment, target.overrides);
        sources.push({ scope: target.scope, environmentId: loaded.environmentId });
        return { key: `${target.scope.projectId}/${loaded.environmentId}`, values: loaded.values };
      } catch (err) {
        if (isUnreadable(err)) return null;
        throw err;
      }
    },
  });
}

/**
 * Reads and decrypts one secret. `env` is an environment id or slug. Its value
 * is resolved (`options.raw`: as stored) with the caller's override on top;
 * a reference that cannot be resolved throws a `SecretReferenceError` naming it.
 */
export async function getSecret(
  scope: SecretScope,
  env: string,
  name: string,
  options: ReadOptions = {},
): Promise<DecryptedSecret> {
  const overrides = overridesOnce(scope, options.overrides !== false);
  const mine = overrides();
  mine.catch(() => undefined);
  const secret = await decryptSecret(
    scope,
    await getSecretEnvelope(scope.client, scope.projectId, env, name),
  );
  const own = (await mine).get(secret.environment_id)?.[name];
  const value = own ?? secret.value;
  if (options.raw || !hasReferences(value)) return { ...secret, value };
  const read = await readEnvironment(scope, secret.environment_id, overrides);
  const { values, errors } = await resolveIn(scope, env, read, options);
  if (errors[name]) throw errors[name];
  return { ...secret, value: values[name]! };
}

/**
 * Every secret of the environment, decrypted: `{ NAME: value }` in name order.
 * References are resolved and the caller's personal overrides applied (see
 * `ReadOptions`). If any value cannot be resolved, nothing is returned: a
 * `SecretReferenceError` (one) or `SecretReferencesError` (several) names each.
 */
export async function listSecrets(
  scope: SecretScope,
  env: string,
  options: ReadOptions = {},
): Promise<Record<string, string>> {
  return (await listSecretsAndSources(scope, env, options)).secrets;
}

/**
 * `listSecrets`, and the environments the values came from: `sources[0]` is
 * the environment read, the others those its references led to (transitively,
 * in the order they were fetched; none with `raw`). What a watcher must follow,
 * since a change in any of them changes what the values resolve to.
 */
export async function listSecretsAndSources(
  scope: SecretScope,
  env: string,
  options: ReadOptions = {},
): Promise<{ secrets: Record<string, string>; sources: SecretSource[] }> {
  const read = await readEnvironment(scope, env, overridesOnce(scope, options.overrides !== false));
  const sources: SecretSource[] = [{ scope, environmentId: read.environmentId }];
  const sorted = (values: Record<string, string>) =>
    Object.fromEntries(
      Object.keys(values)
        .sort()
        .map((k) => [k, values[k]!]),
    );
  if (options.raw) return { secrets: sorted(read.values), sources };
  const { values, errors } = await resolveIn(scope, env, read, options, sources);
  const failed = Object.keys(errors)
    .sort()
    .map((n) => errors[n]!);
  if (failed.length === 1) throw failed[0]!;
  if (failed.length > 1) throw new SecretReferencesError(failed);
  return { secrets: sorted(values), sources };
}

/**
 * Every value of an environment with each reference's outcome, for a view
 * that shows both (the dashboard): `raw` as stored (overrides applied),
 * `resolved` for those that resolve and `errors` for those that do not.
 */
export async function readWithReferences(
  scope: SecretScope,
  env: string,
  options: Omit<ReadOptions, 'raw'> = {},
): Promise<{ raw: Record<string, string> } & Resolution> {
  const read = await readEnvironment(scope, env, overridesOnce(scope, options.overrides !== false));
  const { values, errors } = await resolveIn(scope, env, read, options);
  return { raw: read.values, values, errors };
}

/**
 * Encrypts `value` under the environment's current key and writes it (a new
 * version when the secret exists). `expectedVersion` guards against lost
 * updates (`0`: must not exist yet).
 */
export async function setSecret(
  scope: SecretScope,
  env: string,
  name: string,
  value: string,
  options: { comment?: string; expectedVersion?: number } = {},
): Promise<DecryptedSecret> {
  const environmentId = await environmentIdOf(scope.client, scope.projectId, env);
  const written = await withCurrentKey(scope, environmentId, (key) =>
    putSecretEnvelope(scope.client, scope.projectId, environmentId, name, {
      value: encrypt(scope, environmentId, name, value, key),
      ...(options.comment !== undefined ? { comment: options.comment } : {}),
      ...(options.expectedVersion !== undefined
        ? { expected_version: options.expectedVersion }
        : {}),
    }),
  );
  return { ...written, value };
}

/** Every version of a secret, decrypted, newest first. */
export async function history(
  scope: SecretScope,
  env: string,
  name: string,
): Promise<DecryptedVersion[]> {
  const environmentId = await environmentIdOf(scope.client, scope.projectId, env);
  const versions = await allPages((page, per_page) =>
    listSecretVersions(scope.client, scope.projectId, environmentId, name, {
      page,
      per_page,
      sort: 'version',
      order: 'desc',
    }),
  );
  const out: DecryptedVersion[] = [];
  for (const v of versions) {
    out.push({
      version: v.version,
      value: await decrypt(scope, environmentId, name, v.value),
      created_at: v.created_at,
      created_by: v.created_by,
    });
  }
  return out;
}

/** Makes an earlier version's value current again (as a new version); returns it decrypted. */
export async function rollback(
  scope: SecretScope,
  env: string,
  name: string,
  version: number,
  options: { expectedVersion?: number } = {},
): Promise<DecryptedSecret> {
  const secret = await rollbackSecretEnvelope(scope.client, scope.projectId, env, name, {
    version,
    ...(options.expectedVersion !== undefined ? { expected_version: options.expectedVersion } : {}),
  });
  return decryptSecret(scope, secret);
}
