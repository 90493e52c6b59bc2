// Shared set-up for the environments, secrets and audit tests: a project with
// members of every role, tokens, and real envelopes from the SDK's crypto.
import { randomBytes } from 'node:crypto';
import {
  createGrant,
  deriveEnvironmentKey,
  encryptSecretValue,
  generateBearer,
  generateProjectKey,
  ready,
} from '@coffer/sdk';
import { hashToken } from '../../src/domains/identity/credentials.js';
import { newId } from '../../src/ids.js';
import type { TestApp, TestResponse } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';

export type Role = 'admin' | 'developer' | 'viewer';
export type Scopes = Record<string, 'read' | 'read_write'>;

export interface TestEnvironment {
  id: string;
  slug: string;
}

export interface TestProject {
  id: string;
  admin: TestUser;
  env: { development: TestEnvironment; staging: TestEnvironment; production: TestEnvironment };
  /** The project key of the current epoch, generated in the test (see `initVault`). */
  pmk: Uint8Array;
  epoch: number;
}

export function expectStatus(res: TestResponse, status: number): void {
  if (res.statusCode !== status) {
    throw new Error(`expected ${status}, got ${res.statusCode}: ${res.body}`);
  }
}

/** `{ data }` of a response, typed loosely for assertions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const dataOf = (res: TestResponse): any => (res.data as { data: unknown }).data;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const errorOf = (res: TestResponse): any => (res.data as { error: unknown }).error;

/** A signed-up admin's new project (with its default environments) and an initialised vault. */
export async function createProject(t: TestApp): Promise<TestProject> {
  await ready();
  const admin = await signUp(t);
  const created = await t.request({
    method: 'POST',
    url: '/v1/projects',
    headers: admin.headers,
    body: { name: `Project ${randomBytes(3).toString('hex')}` },
  });
  expectStatus(created, 201);
  const id = dataOf(created).id as string;
  const envs = await t.request({
    method: 'GET',
    url: `/v1/projects/${id}/environments?per_page=100`,
    headers: admin.headers,
  });
  expectStatus(envs, 200);
  const bySlug = Object.fromEntries(
    (dataOf(envs) as TestEnvironment[]).map((e) => [e.slug, { id: e.id, slug: e.slug }]),
  );
  const project: TestProject = {
    id,
    admin,
    env: {
      development: bySlug.development!,
      staging: bySlug.staging!,
      production: bySlug.production!,
    },
    pmk: generateProjectKey(),
    epoch: 0,
  };
  await initVault(t, project);
  return project;
}

/**
 * Initialises the vault as the SDK does: the admin's first self-grant of a
 * project key at epoch 1 (`POST …/vault/grants`). The test plays the admin's
 * client and keeps the key; the server only ever sees the sealed grant.
 */
export async function initVault(t: TestApp, project: TestProject): Promise<void> {
  const { admin } = project;
  const grant = createGrant({
    key: project.pmk,
    kind: 'project_key',
    projectId: project.id,
    epoch: 1,
    recipientId: admin.id,
    recipientPublicKey: admin.keys.encryption.publicKey,
    granterId: admin.id,
    granterSigningSecretKey: admin.keys.signing.secretKey,
  });
  const res = await t.request({
    method: 'POST',
    url: `/v1/projects/${project.id}/vault/grants`,
    headers: admin.headers,
    body: {
      grants: [
        {
          recipient_id: grant.recipient_id,
          epoch: grant.epoch,
          sealed_key: grant.sealed_key,
          signature: grant.signature,
        },
      ],
    },
  });
  expectStatus(res, 200);
  project.epoch = 1;
}

/** A real envelope for `value`, bound to the project, environment, name and epoch. */
export function envelope(
  project: TestProject,
  environmentId: string,
  name: string,
  value: string,
  epoch = project.epoch,
): string {
  return encryptSecretValue({
    environmentKey: deriveEnvironmentKey(project.pmk, project.id, environmentId, epoch),
    projectId: project.id,
    environmentId,
    name,
    epoch,
    value,
  });
}

/** Signs up a user, invites them with `role` and accepts: an active member. */
export async function addMember(t: TestApp, project: TestProject, role: Role): Promise<TestUser> {
  const user = await signUp(t);
  const invited = await t.request({
    method: 'POST',
    url: `/v1/projects/${project.id}/members`,
    headers: project.admin.headers,
    body: { email: user.email, role },
  });
  expectStatus(invited, 201);
  const accepted = await t.request({
    method: 'POST',
    url: `/v1/invitations/${dataOf(invited).id}/accept`,
    headers: user.headers,
  });
  expectStatus(accepted, 200);
  return user;
}

/**
 * An API key or CI token row with a real bearer, as the token routes store it
 * (hash only). Inserted directly so these tests depend only on the credential
 * resolver; the token routes and their grants are tested in test/tokens.
 */
export async function createToken(
  t: TestApp,
  project: TestProject,
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

export const secretsUrl = (project: TestProject, env: string, rest = '') =>
  `/v1/projects/${project.id}/environments/${env}/secrets${rest}`;

/** PUT one secret as `headers`; returns the response. */
export function putSecret(
  t: TestApp,
  project: TestProject,
  env: TestEnvironment,
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

/** Polls until `check` passes: buffered audit events are written within a flush interval. */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const result = await check();
    if (result !== undefined) return result;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}
