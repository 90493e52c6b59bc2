// TEMPORARY: typed calls the SDK does not export yet (projects, members,
// environments, secrets). Each goes through the SDK's CofferClient; this file
// disappears as the SDK's own client/projects.ts, members.ts, environments.ts
// and secrets.ts land.
import {
  apiPath,
  decryptSecretValue,
  encryptSecretValue,
  parseEnvelope,
  ready,
  type CofferClient,
  type Page,
  type QueryValue,
} from '@coffer/sdk';

type Query = Record<string, QueryValue>;
export type Role = 'admin' | 'developer' | 'viewer';

export interface Project {
  id: string;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
  role: Role;
}
export interface Environment {
  id: string;
  project_id: string;
  name: string;
  slug: string;
  secret_count: number;
  created_at: string;
  updated_at: string;
}
export interface Member {
  id: string;
  project_id?: string;
  user: { id: string; email: string; name: string };
  role: Role;
  status: 'active' | 'pending' | 'revoked';
  invited_at?: string;
  joined_at?: string;
}
export interface Invitation {
  id: string;
  project: { id: string; name: string };
  role: Role;
  invited_at: string;
  expires_at: string;
}
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
export interface EnvironmentKeyProvider {
  environmentKey(
    projectId: string,
    environmentId: string,
  ): Promise<{ key: Uint8Array; epoch: number }>;
}

export const listProjects = (c: CofferClient, query: Query = {}) =>
  c.requestPage<Project>('GET', '/v1/projects', { query });
export const deleteProject = (c: CofferClient, p: string) =>
  c.request<void>('DELETE', apiPath`/v1/projects/${p}`);

export const listEnvironments = (c: CofferClient, p: string, query: Query = {}) =>
  c.requestPage<Environment>('GET', apiPath`/v1/projects/${p}/environments`, { query });
export const createEnvironment = (
  c: CofferClient,
  p: string,
  body: { name: string; slug?: string },
) => c.request<Environment>('POST', apiPath`/v1/projects/${p}/environments`, { body });
export const updateEnvironment = (
  c: CofferClient,
  p: string,
  e: string,
  body: { name?: string; slug?: string },
) => c.request<Environment>('PATCH', apiPath`/v1/projects/${p}/environments/${e}`, { body });
export const deleteEnvironment = (c: CofferClient, p: string, e: string) =>
  c.request<void>('DELETE', apiPath`/v1/projects/${p}/environments/${e}`);

export const listMembers = (c: CofferClient, p: string, query: Query = {}) =>
  c.requestPage<Member>('GET', apiPath`/v1/projects/${p}/members`, { query });
export const inviteMember = (c: CofferClient, p: string, body: { email: string; role: Role }) =>
  c.request<Member>('POST', apiPath`/v1/projects/${p}/members`, { body });
export const updateMemberRole = (c: CofferClient, p: string, m: string, role: Role) =>
  c.request<Member>('PATCH', apiPath`/v1/projects/${p}/members/${m}`, { body: { role } });
export const removeMember = (c: CofferClient, p: string, m: string) =>
  c.request<void>('DELETE', apiPath`/v1/projects/${p}/members/${m}`);
export const listInvitations = (c: CofferClient, query: Query = {}) =>
  c.requestPage<Invitation>('GET', '/v1/invitations', { query });
export const acceptInvitation = (c: CofferClient, m: string) =>
  c.request<Member & { project_id: string }>('POST', apiPath`/v1/invitations/${m}/accept`);
export const declineInvitation = (c: CofferClient, m: string) =>
  c.request<void>('POST', apiPath`/v1/invitations/${m}/decline`);

const secretsPath = (p: string, e: string) => apiPath`/v1/projects/${p}/environments/${e}/secrets`;

export const listSecretsPage = (
  c: CofferClient,
  p: string,
  e: string,
  query: Query = {},
): Promise<Page<Secret>> => c.requestPage<Secret>('GET', secretsPath(p, e), { query });

async function decrypt(
  p: string,
  s: { environment_id: string; value?: string },
  name: string,
  keys: EnvironmentKeyProvider,
) {
  if (s.value === undefined) throw new Error(`no value for ${name}: you may read names only`);
  const { epoch } = parseEnvelope(s.value);
  const { key } = await keys.environmentKey(p, s.environment_id);
  return decryptSecretValue({
    projectId: p,
    environmentId: s.environment_id,
    name,
    epoch,
    environmentKey: key,
    envelope: s.value,
  });
}

export async function listSecrets(
  c: CofferClient,
  p: string,
  e: string,
  keys: EnvironmentKeyProvider,
): Promise<Record<string, string>> {
  await ready();
  const out: Record<string, string> = {};
  for (let page = 1; ; page++) {
    const res = await listSecretsPage(c, p, e, { page, per_page: 100 });
    for (const s of res.data) out[s.name] = await decrypt(p, s, s.name, keys);
    if (page >= res.pagination.total_pages) return out;
  }
}

export async function getSecret(
  c: CofferClient,
  p: string,
  e: string,
  name: string,
  keys: EnvironmentKeyProvider,
) {
  await ready();
  const s = await c.request<Secret>(
    'GET',
    apiPath`/v1/projects/${p}/environments/${e}/secrets/${name}`,
  );
  return { ...s, value: await decrypt(p, s, name, keys) };
}

async function envId(c: CofferClient, p: string, e: string) {
  if (e.startsWith('env_')) return e;
  return (await c.request<Environment>('GET', apiPath`/v1/projects/${p}/environments/${e}`)).id;
}

async function encrypt(
  c: CofferClient,
  p: string,
  e: string,
  name: string,
  value: string,
  keys: EnvironmentKeyProvider,
) {
  const id = await envId(c, p, e);
  const { key, epoch } = await keys.environmentKey(p, id);
  return encryptSecretValue({
    projectId: p,
    environmentId: id,
    name,
    epoch,
    environmentKey: key,
    value,
  });
}

export async function setSecret(
  c: CofferClient,
  p: string,
  e: string,
  name: string,
  value: string,
  keys: EnvironmentKeyProvider,
  options: { comment?: string; expectedVersion?: number } = {},
) {
  await ready();
  return c.request<Secret>('PUT', apiPath`/v1/projects/${p}/environments/${e}/secrets/${name}`, {
    body: {
      value: await encrypt(c, p, e, name, value, keys),
      ...(options.comment !== undefined ? { comment: options.comment } : {}),
      ...(options.expectedVersion !== undefined
        ? { expected_version: options.expectedVersion }
        : {}),
    },
  });
}

export const deleteSecret = (c: CofferClient, p: string, e: string, name: string) =>
  c.request<void>('DELETE', apiPath`/v1/projects/${p}/environments/${e}/secrets/${name}`);

export async function secretHistory(
  c: CofferClient,
  p: string,
  e: string,
  name: string,
  keys: EnvironmentKeyProvider | null,
) {
  await ready();
  const res = await c.requestPage<SecretVersion>(
    'GET',
    apiPath`/v1/projects/${p}/environments/${e}/secrets/${name}/versions`,
    { query: { per_page: 100 } },
  );
  const id = keys ? await envId(c, p, e) : '';
  return Promise.all(
    res.data.map(async (v) =>
      keys
        ? { ...v, value: await decrypt(p, { environment_id: id, value: v.value }, name, keys) }
        : { ...v, value: undefined },
    ),
  );
}

export const rollbackSecret = (
  c: CofferClient,
  p: string,
  e: string,
  name: string,
  version: number,
) =>
  c.request<Secret>('POST', apiPath`/v1/projects/${p}/environments/${e}/secrets/${name}/rollback`, {
    body: { version },
  });

/** Minimal .env reading for now: KEY=value, quotes, comments, export prefix. */
function parseDotenvMinimal(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m)
      throw Object.assign(new Error(`line ${i + 1}: expected KEY=value`), {
        code: 'invalid_dotenv',
      });
    let v = m[2]!;
    if (/^"(.*)"$/.test(v))
      v = v
        .slice(1, -1)
        .replace(/\\n/g, '\n')
        .replace(/\\(["\\])/g, '$1');
    else if (/^'(.*)'$/.test(v)) v = v.slice(1, -1);
    else v = v.replace(/\s+#.*$/, '');
    out[m[1]!] = v;
  });
  return out;
}

export async function importSecrets(
  c: CofferClient,
  p: string,
  e: string,
  text: string,
  format: 'dotenv' | 'json',
  keys: EnvironmentKeyProvider,
) {
  await ready();
  const entries =
    format === 'json' ? (JSON.parse(text) as Record<string, string>) : parseDotenvMinimal(text);
  const secrets = await Promise.all(
    Object.entries(entries).map(async ([name, value]) => ({
      name,
      value: await encrypt(c, p, e, name, value, keys),
    })),
  );
  return c.request<{ secrets: Secret[]; deleted: string[] }>(
    'POST',
    apiPath`/v1/projects/${p}/environments/${e}/secrets/batch`,
    { body: { secrets } },
  );
}

export async function exportSecrets(
  c: CofferClient,
  p: string,
  e: string,
  format: 'dotenv' | 'json' | 'yaml' | 'shell',
  keys: EnvironmentKeyProvider,
) {
  const all = await listSecrets(c, p, e, keys);
  const names = Object.keys(all).sort();
  if (format === 'json')
    return JSON.stringify(Object.fromEntries(names.map((n) => [n, all[n]])), null, 2);
  const q = (v: string) => JSON.stringify(v);
  if (format === 'yaml') return names.map((n) => `${n}: ${q(all[n]!)}`).join('\n');
  if (format === 'shell')
    return names.map((n) => `export ${n}='${all[n]!.replace(/'/g, `'\\''`)}'`).join('\n');
  return names.map((n) => `${n}=${q(all[n]!)}`).join('\n');
}
