import {
  allEnvironments,
  createApiKey,
  createCiToken,
  listApiKeys,
  listCiTokens,
  revokeApiKey,
  revokeCiToken,
  type ApiKey,
  type CiToken,
  type CofferClient,
  type Page,
  type Scope,
  type TokenListQuery,
} from '@coffer/sdk';
import { list as listOption, PROJECT_OPTION, str, type Command } from '../cli/command.js';
import { parseDuration, parseExpiry, parseScope } from '../cli/durations.js';
import { UsageError } from '../cli/errors.js';
import { note, printJson, printLine, printTable, shortTime } from '../cli/output.js';
import { Context } from '../context.js';
import { allPages } from '../resolve.js';
import { inProject } from '../scope.js';
import { openProjectVault } from '../vault-access.js';

const ROLES = ['admin', 'developer', 'viewer'] as const;

const SHOWN_ONCE =
  'This is the only time the full credential is shown: store it in your CI secret store. Pipelines use it as COFFER_TOKEN.';

/** Prints a new credential: alone on stdout (so it can be captured), the warning on stderr. */
function printCredential(ctx: Context, record: object, credential: string): void {
  if (ctx.json) return printJson({ ...record, credential });
  note(SHOWN_ONCE);
  printLine(credential);
}

/** `production:read staging:read_write`, with slugs where known. */
const scopesText = (scopes: Record<string, Scope>, slugs: Map<string, string>) =>
  Object.entries(scopes)
    .map(([env, scope]) => `${slugs.get(env) ?? env}:${scope}`)
    .join(' ') || '-';

const apiKeyCreate: Command = {
  name: 'api-keys create',
  summary: 'create an API key (admins); prints the full credential once',
  description:
    'An API key belongs to this project, acts with ROLE (never more than yours) and reads or writes only the environments in its scopes. It can decrypt those environments and nothing else.',
  options: {
    ...PROJECT_OPTION,
    name: {
      type: 'string',
      short: 'n',
      value: 'NAME',
      description: 'what the key is for (default: "cli")',
    },
    role: { type: 'string', short: 'r', value: 'ROLE', description: 'admin, developer or viewer' },
    scope: {
      type: 'string',
      short: 's',
      multiple: true,
      value: 'ENV:read|read_write',
      description: 'an environment it may read or read and write',
    },
    expires: {
      type: 'string',
      value: 'WHEN',
      description: 'expiry: a duration (90d) or a date (2027-01-31); default never',
    },
  },
  async run({ values }) {
    const role = str(values, 'role');
    if (!role || !(ROLES as readonly string[]).includes(role)) {
      throw new UsageError('--role must be admin, developer or viewer', 'api-keys create');
    }
    const scopes = Object.fromEntries(
      listOption(values, 'scope').map((s) => parseScope(s, 'api-keys create')),
    );
    const expires = str(values, 'expires');
    const expiresAt = expires ? parseExpiry(expires, 'api-keys create') : undefined;
    const { ctx, client, project } = await inProject(values);
    const vault = await openProjectVault(ctx, client, project);
    try {
      const { apiKey, credential } = await createApiKey(vault, {
        name: str(values, 'name') ?? 'cli',
        role: role as (typeof ROLES)[number],
        scopes,
        ...(expiresAt ? { expiresAt } : {}),
      });
      printCredential(ctx, apiKey, credential);
    } finally {
      vault.forget();
    }
  },
};

const ciTokenCreate: Command = {
  name: 'ci-tokens create',
  summary: 'mint a short-lived CI token for some environments; prints the full credential once',
  description:
    'Admins, developers, or an API key (COFFER_TOKEN) may mint one. It lives 1 hour unless --ttl is shorter, and never gets more than its minter.',
  options: {
    ...PROJECT_OPTION,
    env: {
      type: 'string',
      short: 'e',
      multiple: true,
      value: 'ENV',
      description: 'an environment it may read (at least one)',
    },
    write: { type: 'boolean', description: 'allow writing too (read_write)' },
    ttl: {
      type: 'string',
      value: 'DURATION',
      description: 'lifetime, at most 1h (e.g. 30m); default 1h',
    },
    name: { type: 'string', short: 'n', value: 'NAME', description: 'what the token is for' },
  },
  async run({ values }) {
    const envs = listOption(values, 'env');
    if (envs.length === 0) throw new UsageError('missing --env ENV', 'ci-tokens create');
    const ttl = str(values, 'ttl');
    const ttlSeconds = ttl ? parseDuration(ttl, '--ttl', 'ci-tokens create') : undefined;
    if (ttlSeconds !== undefined && (ttlSeconds < 60 || ttlSeconds > 3600)) {
      throw new UsageError('--ttl must be between 1m and 1h', 'ci-tokens create');
    }
    const scope: Scope = values.write === true ? 'read_write' : 'read';
    const { ctx, client, project } = await inProject(values);
    const vault = await openProjectVault(ctx, client, project);
    try {
      const name = str(values, 'name');
      const { ciToken, credential } = await createCiToken(vault, {
        scopes: Object.fromEntries(envs.map((e) => [e, scope])),
        ...(name ? { name } : {}),
        ...(ttlSeconds ? { ttlSeconds } : {}),
      });
      printCredential(ctx, ciToken, credential);
    } finally {
      vault.forget();
    }
  },
};

type TokenRecord = ApiKey | CiToken;

/** `list` and `revoke` are the same for both kinds of token. */
function listAndRevoke<T extends TokenRecord>(
  group: 'api-keys' | 'ci-tokens',
  what: string,
  list: (client: CofferClient, project: string, query: TokenListQuery) => Promise<Page<T>>,
  revoke: (client: CofferClient, project: string, id: string) => Promise<void>,
): Command[] {
  return [
    {
      name: `${group} list`,
      summary: `list the project's ${what}s`,
      options: PROJECT_OPTION,
      async run({ values }) {
        const { ctx, client, project } = await inProject(values);
        const [tokens, environments] = await Promise.all([
          allPages((page, per_page) => list(client, project, { page, per_page })),
          allEnvironments(client, project),
        ]);
        if (ctx.json) return printJson(tokens);
        const slugs = new Map(environments.map((e) => [e.id, e.slug]));
        printTable(
          ['id', 'name', 'role', 'scopes', 'expires', 'last used', 'revoked'],
          tokens.map((t) => [
            t.id,
            t.name,
            'role' in t ? t.role : 'ci',
            scopesText(t.scopes, slugs),
            shortTime(t.expires_at),
            shortTime(t.last_used_at),
            shortTime(t.revoked_at),
          ]),
        );
      },
    },
    {
      name: `${group} revoke`,
      summary: `revoke a ${what} at once`,
      args: 'ID',
      positionals: [1, 1],
      options: PROJECT_OPTION,
      async run({ values, positionals }) {
        const { ctx, client, project } = await inProject(values);
        await revoke(client, project, positionals[0]!);
        if (ctx.json) return printJson({ revoked: positionals[0] });
        note(`Revoked ${positionals[0]}.`);
      },
    },
  ];
}

export const commands: Command[] = [
  apiKeyCreate,
  ...listAndRevoke('api-keys', 'API key', listApiKeys, revokeApiKey),
  ciTokenCreate,
  ...listAndRevoke('ci-tokens', 'CI token', listCiTokens, revokeCiToken),
];
