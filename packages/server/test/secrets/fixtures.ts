// Set-up for the environments, secrets and audit tests beside a project with a
// vault (../support/vault.ts): tokens, and secrets written with real envelopes.
import { randomBytes } from 'node:crypto';
import { generateBearer, ready } from '@coffer/sdk';
import { hashToken } from '../../src/domains/identity/credentials.js';
import type { Role } from '../../src/http/principal.js';
import { newId } from '../../src/ids.js';
import type { TestApp, TestResponse } from '../support/app.js';
import { envelope, type Environment, type VaultProject } from '../support/vault.js';

export type Scopes = Record<string, 'read' | 'read_write'>;

/**
 * An API key or CI token row with a real bearer, as the token routes store it
 * (hash only). Inserted directly so these tests depend only on the credential
 * resolver; the token routes and their grants are tested in test/tokens.
 */
export async function createToken(
  t: TestApp,
  project: VaultProject,
  kind: 'api_key' | 'ci_token',
  scopes: Scopes,
  role: Role = 'developer',
): Promise<{ id: string; headers: { authorization: string } }> {
  await ready();
  const db = t.testDb.db.kysely;
  const now = t.clock.now();
  const bearer = generateBearer(kind === 'api_key' ? 'cek_' : 'ci_');
  const common = {
    project_id: project.id,
    name: `test ${kind}`,
    token_hash: hashToken(bearer),
    scopes: JSON.stringify(scopes),
    public_key: randomBytes(32).toString('base64url'),
    created_by: project.admin.id,
    created_at: now.toISOString(),
  };
  let id: string;
  if (kind === 'api_key') {
    id = newId('apiKey');
    await db
      .insertInto('api_keys')
      .values({ ...common, id, role, expires_at: null })
      .execute();
  } else {
    id = newId('ciToken');
    const expires = new Date(now.getTime() + 3600_000).toISOString();
    await db
      .insertInto('ci_tokens')
      .values({ ...common, id, expires_at: expires })
      .execute();
  }
  return { id, headers: { authorization: `Bearer ${bearer}` } };
}

export const secretsUrl = (project: VaultProject, env: string, rest = '') =>
  `/v1/projects/${project.id}/environments/${env}/secrets${rest}`;

/** PUT one secret as `headers`; returns the response. */
export function putSecret(
  t: TestApp,
  project: VaultProject,
  env: Environment,
  name: string,
  value: string,
  headers: Record<string, string>,
  extra: Record<string, unknown> = {},
): Promise<TestResponse> {
  return t.request({
    method: 'PUT',
    url: secretsUrl(project, env.slug, `/${name}`),
    headers,
    body: { value: envelope(project, env.id, name, value), ...extra },
  });
}
