import {
  isCofferApiError,
  listSecrets,
  type CofferClient,
  type ReadOptions,
  type SecretScope,
  type VaultSession,
} from '@coffer/sdk';
import type { Values } from './cli/command.js';
import { CliError } from './cli/errors.js';
import type { Context } from './context.js';
import type { FallbackScope } from './run/fallback.js';
import { currentProjectId, projectId } from './scope.js';
import { openProjectVault, privateKeyMaterial } from './vault-access.js';

/** The client, project and vault of the current environment, for the secrets commands. */
export interface EnvironmentAccess {
  client: CofferClient;
  project: string;
  env: string;
  vault: Promise<VaultSession>;
  /** A member's login (tokens have no overrides, so none are asked for). */
  member?: boolean;
}

/**
 * Resolves the environment and starts opening the vault at once, so the grant
 * (GET /vault) and whatever the command asks next travel together instead of
 * one after the other.
 */
export async function environmentAccess(ctx: Context): Promise<EnvironmentAccess> {
  const client = await ctx.client();
  const project = await currentProjectId(ctx, client);
  const vault = openProjectVault(ctx, client, project);
  vault.catch(() => undefined); // awaited by the caller; never an unhandled rejection
  const env =
    ctx.environmentName() ?? (ctx.token ? await tokenEnvironment(vault) : ctx.environmentRef());
  return { client, project, env, vault, member: !ctx.token };
}

/**
 * A token that holds the key of exactly one environment needs no `--env`
 * (the usual CI token); otherwise the user must say which.
 */
async function tokenEnvironment(vault: Promise<VaultSession>): Promise<string> {
  const ids = [...new Set((await vault).status.grants.map((g) => g.environment_id))];
  if (ids.length === 1 && ids[0]) return ids[0];
  throw new CliError(
    'no_environment',
    `this token can read ${ids.length} environments: pass --env (or set COFFER_ENV)`,
  );
}

/**
 * The SDK's scope for decrypted operations. Its key provider answers once the
 * vault is open, so the grant and the first request of the command travel
 * together.
 */
export const secretScope = (access: EnvironmentAccess): SecretScope => ({
  client: access.client,
  projectId: access.project,
  keys: {
    environmentKey: async (projectId, environmentId) =>
      (await access.vault).environmentKey(projectId, environmentId),
    refresh: async () => (await access.vault).refresh(),
    ...(access.member ? { overrideKey: async () => (await access.vault).overrideKey() } : {}),
  },
});

/** `--raw` and `--no-overrides`, for the commands that read values for use. */
export const READ_OPTIONS = {
  raw: {
    type: 'boolean',
    description: 'the text as stored: ${…} references left unresolved',
  },
  'no-overrides': {
    type: 'boolean',
    description: 'leave out your personal overrides (tokens never have any)',
  },
} as const;

/**
 * How the values are read: resolved with the caller's overrides unless the
 * flags say otherwise. `${PROJECT/ENV.KEY}` opens that project's vault with
 * the same credential, lazily; a token sees only its own project.
 */
export function readOptions(ctx: Context, access: EnvironmentAccess, values: Values): ReadOptions {
  return {
    raw: values.raw === true,
    overrides: values['no-overrides'] !== true,
    project: async (ref) => {
      if (ref === access.project) return secretScope(access);
      if (ctx.token) return null;
      let id: string;
      try {
        id = await projectId(access.client, ref);
      } catch {
        return null; // no such project for this user: the reference is unreadable
      }
      const vault = openProjectVault(ctx, access.client, id, { quietUnchained: true });
      vault.catch(() => undefined);
      return secretScope({ client: access.client, project: id, env: '', vault, member: true });
    },
  };
}

/**
 * `coffer run`'s fetch: every secret of the environment, decrypted. Two
 * requests in flight together: the caller's grant and the listing with values.
 */
export async function fetchEnvironmentSecrets(
  ctx: Context,
  values: Values = {},
): Promise<{
  secrets: Record<string, string>;
  keyMaterial: Uint8Array;
  scope: FallbackScope;
}> {
  const access = await environmentAccess(ctx);
  try {
    const secrets = await listSecrets(
      secretScope(access),
      access.env,
      readOptions(ctx, access, values),
    );
    return { secrets, keyMaterial: await privateKeyMaterial(ctx), scope: fallbackScope(ctx) };
  } finally {
    access.vault.then((v) => v.forget()).catch(() => undefined);
  }
}

/** What the fallback copy is bound to: the server and the project and environment as the user named them. */
function fallbackScope(ctx: Context): FallbackScope {
  return {
    server: ctx.server(),
    project: ctx.token && !ctx.hasProjectRef() ? '(the token’s project)' : ctx.projectRef(),
    environment: ctx.token
      ? (ctx.environmentName() ?? '(the token’s environment)')
      : ctx.environmentRef(),
  };
}

/** The key material and scope to open the fallback copy without the server. */
export async function offlineSource(
  ctx: Context,
): Promise<{ keyMaterial: Uint8Array; scope: FallbackScope }> {
  return { keyMaterial: await privateKeyMaterial(ctx), scope: fallbackScope(ctx) };
}

/**
 * Whether an error means "the server could not be reached" (the fallback copy
 * may be used), as opposed to an answer such as 401/403/404, which must never
 * be papered over: a revoked token must stop working.
 */
export function isServerUnreachable(err: unknown): boolean {
  if (err instanceof Error && err.name === 'CofferNetworkError') return true;
  return isCofferApiError(err) && [502, 503, 504].includes(err.status);
}
