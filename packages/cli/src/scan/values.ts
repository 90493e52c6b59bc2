import {
  allEnvironments,
  decryptSecretValue,
  environmentIdOf,
  listSecretEnvelopes,
  parseEnvelope,
  ready,
  type CofferClient,
  type Secret,
  type VaultSession,
} from '@coffer/sdk';
import { CliError } from '../cli/errors.js';
import type { Context } from '../context.js';
import { currentProjectId } from '../scope.js';
import { openProjectVault } from '../vault-access.js';

/** A secret as the scan knows it: who it is, and (until `forget`) its value. */
export interface ScanSecret {
  id: string;
  name: string;
  environmentId: string;
  /** The environment's slug, as findings name it. */
  environment: string;
}

export interface NotScanned {
  name: string;
  environment: string;
  reason: string;
}

export interface ScanValues {
  projectId: string;
  secrets: ScanSecret[];
  /** Parallel to `secrets`: each value's UTF-8 bytes (zeroed by the caller) and its text. */
  values: { bytes: Buffer; text: string }[];
  notScanned: NotScanned[];
  /** Per environment id: a key derived from its environment key, for the baseline's hashes. */
  baselineKeys: Map<string, Buffer>;
  /** The environments scanned, and (with `check`) the ETag of each one's check listing. */
  environments: { id: string; slug: string; etag: string }[];
}

/**
 * Decrypts the values the caller can read in the linked project: every
 * environment whose key it holds (a member's project key opens them all, a
 * token holds the keys of its scopes), or those named with `--env`.
 */
export async function loadScanValues(
  ctx: Context,
  envRefs: string[],
  minLength: number,
  deriveBaselineKey: (environmentKey: Uint8Array, projectId: string, envId: string) => Buffer,
  /**
   * The keyed-hash cache's check, asked for each environment before its values
   * are read (so a write after the check changes the ETag the cache keeps).
   */
  check?: (projectId: string, envId: string) => Promise<string | null>,
): Promise<ScanValues> {
  const started = ready();
  const client = await ctx.client();
  const projectId = await currentProjectId(ctx, client);
  // The grant and the environments' listing travel together.
  const listing = allEnvironments(client, projectId).then(
    (envs) => envs.map((e) => ({ id: e.id, slug: e.slug })),
    () => null, // a token may not list environments: it knows the ids of its grants
  );
  const vault = await openProjectVault(ctx, client, projectId);
  await started;
  try {
    const environments = await readableEnvironments(
      client,
      vault.status.grants,
      projectId,
      envRefs,
      await listing,
    );
    const etags = check
      ? await Promise.all(environments.map((env) => check(projectId, env.id)))
      : environments.map(() => null);
    const result: ScanValues = {
      projectId,
      secrets: [],
      values: [],
      notScanned: [],
      baselineKeys: new Map(),
      environments: environments.map((env, i) => ({ ...env, etag: etags[i] ?? '' })),
    };
    // Every environment's listing at once, and within each every page at once.
    const listings = await Promise.all(
      environments.map(async (env) => ({
        env,
        key: await vault.environmentKey(projectId, env.id),
        envelopes: await allSecretEnvelopes(client, projectId, env.id),
      })),
    );
    for (const { env, key, envelopes } of listings) {
      result.baselineKeys.set(env.id, deriveBaselineKey(key.key, projectId, env.id));
      for (const secret of envelopes) {
        if (secret.value === undefined) {
          throw new CliError(
            'no_value',
            `this credential may list the names in ${env.slug} but not read values`,
          );
        }
        let current = key;
        if (parseEnvelope(secret.value).epoch !== current.epoch) {
          await vault.refresh();
          current = await vault.environmentKey(projectId, env.id);
        }
        const text = decryptSecretValue({
          environmentKey: current.key,
          projectId,
          environmentId: env.id,
          name: secret.name,
          epoch: current.epoch,
          envelope: secret.value,
        });
        const reason = notScannedReason(text, minLength);
        if (reason) {
          result.notScanned.push({ name: secret.name, environment: env.slug, reason });
          continue;
        }
        result.secrets.push({
          id: secret.id,
          name: secret.name,
          environmentId: env.id,
          environment: env.slug,
        });
        result.values.push({ bytes: Buffer.from(text, 'utf8'), text });
      }
    }
    return result;
  } finally {
    vault.forget();
  }
}

/** Every secret of an environment with its envelope: the first page, then all the others together. */
async function allSecretEnvelopes(
  client: CofferClient,
  projectId: string,
  envId: string,
): Promise<Secret[]> {
  const page = (n: number) =>
    listSecretEnvelopes(client, projectId, envId, {
      page: n,
      per_page: 100,
      sort: 'name',
      order: 'asc',
    });
  const first = await page(1);
  const rest = await Promise.all(
    Array.from({ length: Math.max(0, first.pagination.total_pages - 1) }, (_, i) => page(i + 2)),
  );
  return [first, ...rest].flatMap((p) => p.data);
}

/**
 * The environments to scan: those named (each must be readable), or every one
 * the grants open (a project-key grant opens them all). Without a listing (a
 * token that may not list), the granted ids stand for themselves.
 */
async function readableEnvironments(
  client: CofferClient,
  grants: VaultSession['status']['grants'],
  projectId: string,
  envRefs: string[],
  listing: { id: string; slug: string }[] | null,
): Promise<{ id: string; slug: string }[]> {
  const all = grants.some((g) => g.kind === 'project_key');
  const granted = new Set(grants.map((g) => g.environment_id).filter((id): id is string => !!id));
  const listed = listing ?? [...granted].map((id) => ({ id, slug: id }));
  const canRead = (id: string) => all || granted.has(id);
  if (envRefs.length > 0) {
    const chosen: { id: string; slug: string }[] = [];
    for (const ref of envRefs) {
      const id = await environmentIdOf(client, projectId, ref);
      if (!canRead(id))
        throw new CliError('forbidden', `this credential cannot decrypt the environment ${ref}`);
      if (!chosen.some((e) => e.id === id))
        chosen.push(listed.find((e) => e.id === id) ?? { id, slug: ref });
    }
    return chosen;
  }
  const readable = listed.filter((e) => canRead(e.id));
  if (readable.length === 0)
    throw new CliError(
      'forbidden',
      'this credential cannot decrypt any environment of the project (viewers see names only)',
    );
  return readable;
}

/** Words and settings that are configuration, not secrets: looking for them would flag every file. */
const COMMON = new Set(
  [
    'true',
    'false',
    'yes',
    'no',
    'on',
    'off',
    'null',
    'none',
    'undefined',
    'enabled',
    'disabled',
    'localhost',
    'development',
    'production',
    'staging',
    'test',
    'testing',
    'debug',
    'info',
    'warning',
    'error',
    'password',
    'changeme',
    'secret',
    'postgres',
    'postgresql',
    'admin',
    'root',
    'default',
    'example',
    'us-east-1',
    'eu-west-1',
    'utf-8',
    'utf8',
  ].map((w) => w.toLowerCase()),
);

/**
 * Why a value is left out of the scan, or null: too short, a common word, a
 * number, a plain address, or too little entropy to be told from ordinary text.
 */
export function notScannedReason(value: string, minLength: number): string | null {
  const length = [...value].length;
  if (length < minLength) return `shorter than ${minLength} characters`;
  const trimmed = value.trim().toLowerCase();
  if (COMMON.has(trimmed)) return 'a common word';
  if (/^[-+]?[0-9][0-9_.,:]*$/.test(trimmed) && trimmed.length < 12) return 'a number';
  if (/^(https?:\/\/)?(localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])(:\d+)?\/?$/.test(trimmed))
    return 'a local address';
  if (entropyPerCharacter(value) < 2) return 'low entropy';
  return null;
}

/**
 * Shannon entropy of the value's characters, in bits per character: below 2
 * (`aaaabbbb`, `abababab`, `xxxxxxxxxx1`) a value is too repetitive to be told
 * from ordinary text. A random 8-character token has 3.
 */
function entropyPerCharacter(value: string): number {
  const counts = new Map<string, number>();
  const chars = [...value];
  for (const c of chars) counts.set(c, (counts.get(c) ?? 0) + 1);
  let perChar = 0;
  for (const n of counts.values()) {
    const p = n / chars.length;
    perChar -= p * Math.log2(p);
  }
  return perChar;
}
