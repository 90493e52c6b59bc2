import assert from 'node:assert/strict';
import {
  createGrant,
  decryptSecretValue,
  deriveEnvironmentKey,
  encryptSecretValue,
  generateProjectKey,
  generateTokenCredential,
  tokenKeysFromKeyPart,
  TOKEN_PREFIXES,
  type Grant,
} from '@coffer/sdk';
import { randomBytes } from 'node:crypto';
import type { TestApp, TestResponse } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';

// Raw-HTTP helpers for the vault and token tests: the real routes, with the
// SDK's crypto primitives doing what a client does. The SDK's high-level vault
// operations are tested separately (packages/sdk/test/vault*.test.ts).

export type Role = 'admin' | 'developer' | 'viewer';

export interface Environment {
  id: string;
  slug: string;
}

export interface VaultProject {
  id: string;
  admin: TestUser;
  /** The project key as the admin's client holds it (this test plays that client). */
  pmk: Uint8Array;
  epoch: number;
  environments: Record<string, Environment>;
}

export function expectStatus(res: TestResponse, status: number): void {
  assert.equal(res.statusCode, status, `expected ${status}, got ${res.statusCode}: ${res.body}`);
}

export const dataOf = <T>(res: TestResponse): T => (res.data as { data: T }).data;
export const errorOf = (res: TestResponse) =>
  (
    res.data as {
      error: { code: string; message: string; details?: Record<string, unknown>[] };
    }
  ).error;

/** A random id of the given prefix, as the SDK makes for tokens (`key_`, `cit_`). */
export function clientId(prefix: 'key' | 'cit'): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let out = '';
  for (const byte of randomBytes(40)) if (byte < 248 && out.length < 20) out += alphabet[byte % 62];
  return `${prefix}_${out}`;
}

export function memberGrant(
  pmk: Uint8Array,
  projectId: string,
  epoch: number,
  granter: TestUser,
  recipient: { id: string; publicKey: Uint8Array | string },
): Grant {
  return createGrant({
    key: pmk,
    kind: 'project_key',
    projectId,
    epoch,
    recipientId: recipient.id,
    recipientPublicKey: recipient.publicKey,
    granterId: granter.id,
    granterSigningSecretKey: granter.keys.signing.secretKey,
  });
}

export const grantBody = (g: Grant) => ({
  recipient_id: g.recipient_id,
  epoch: g.epoch,
  sealed_key: g.sealed_key,
  signature: g.signature,
});

/** Creates a project through the API and initialises its vault with the admin's self-grant. */
export async function projectWithVault(t: TestApp, admin?: TestUser): Promise<VaultProject> {
  const owner = admin ?? (await signUp(t));
  const created = await t.request({
    method: 'POST',
    url: '/v1/projects',
    headers: owner.headers,
    body: { name: `Project ${randomBytes(3).toString('hex')}` },
  });
  expectStatus(created, 201);
  const projectId = dataOf<{ id: string }>(created).id;
  const pmk = generateProjectKey();
  const self = memberGrant(pmk, projectId, 1, owner, {
    id: owner.id,
    publicKey: owner.keys.encryption.publicKey,
  });
  const init = await t.request({
    method: 'POST',
    url: `/v1/projects/${projectId}/vault/grants`,
    headers: owner.headers,
    body: { grants: [grantBody(self)] },
  });
  expectStatus(init, 200);
  return {
    id: projectId,
    admin: owner,
    pmk,
    epoch: 1,
    environments: await environmentsOf(t, owner, projectId),
  };
}

export async function environmentsOf(
  t: TestApp,
  user: TestUser,
  projectId: string,
): Promise<Record<string, Environment>> {
  const res = await t.request({
    method: 'GET',
    url: `/v1/projects/${projectId}/environments?per_page=100`,
    headers: user.headers,
  });
  expectStatus(res, 200);
  const list = (res.data as { data: Environment[] }).data;
  return Object.fromEntries(list.map((e) => [e.slug, { id: e.id, slug: e.slug }]));
}

/** Signs a new user up, invites them with `role`, and accepts the invitation as them. */
export async function addMember(
  t: TestApp,
  project: VaultProject,
  role: Role,
  user?: TestUser,
): Promise<TestUser & { memberId: string }> {
  const member = user ?? (await signUp(t));
  const invite = await t.request({
    method: 'POST',
    url: `/v1/projects/${project.id}/members`,
    headers: project.admin.headers,
    body: { email: member.email, role },
  });
  expectStatus(invite, 201);
  const memberId = dataOf<{ id: string }>(invite).id;
  const accept = await t.request({
    method: 'POST',
    url: `/v1/invitations/${memberId}/accept`,
    headers: member.headers,
  });
  expectStatus(accept, 200);
  return { ...member, memberId };
}

/** The admin's client grants the current project key to a member. */
export async function grantMember(t: TestApp, project: VaultProject, member: TestUser) {
  const grant = memberGrant(project.pmk, project.id, project.epoch, project.admin, {
    id: member.id,
    publicKey: member.keys.encryption.publicKey,
  });
  const res = await t.request({
    method: 'POST',
    url: `/v1/projects/${project.id}/vault/grants`,
    headers: project.admin.headers,
    body: { grants: [grantBody(grant)] },
  });
  expectStatus(res, 200);
}

export function environmentKey(
  project: VaultProject,
  environmentId: string,
  epoch = project.epoch,
) {
  return deriveEnvironmentKey(project.pmk, project.id, environmentId, epoch);
}

export function encryptFor(
  project: VaultProject,
  environmentId: string,
  name: string,
  value: string,
  epoch = project.epoch,
): string {
  return encryptSecretValue({
    environmentKey: environmentKey(project, environmentId, epoch),
    projectId: project.id,
    environmentId,
    name,
    epoch,
    value,
  });
}

export function putSecret(
  t: TestApp,
  project: VaultProject,
  headers: Record<string, string>,
  env: Environment,
  name: string,
  value: string,
  epoch = project.epoch,
) {
  return t.request({
    method: 'PUT',
    url: `/v1/projects/${project.id}/environments/${env.id}/secrets/${name}`,
    headers,
    body: { value: encryptFor(project, env.id, name, value, epoch) },
  });
}

export interface TestToken {
  id: string;
  bearer: string;
  keyPart: string;
  credential: string;
  headers: { authorization: string };
}

/** Builds a token the way the SDK does: key part, public keys, one EK grant per scoped environment. */
export function tokenRequest(
  project: VaultProject,
  prefix: 'key' | 'cit',
  scopes: Record<string, 'read' | 'read_write'>,
  granter: { id: string; signingSecretKey: Uint8Array } = {
    id: project.admin.id,
    signingSecretKey: project.admin.keys.signing.secretKey,
  },
) {
  const credential = generateTokenCredential(
    prefix === 'key' ? TOKEN_PREFIXES.apiKey : TOKEN_PREFIXES.ci,
  );
  const keys = tokenKeysFromKeyPart(credential.keyPart);
  const id = clientId(prefix);
  const grants = Object.keys(scopes).map((environmentId) => {
    const g = createGrant({
      key: environmentKey(project, environmentId),
      kind: 'environment_key',
      projectId: project.id,
      epoch: project.epoch,
      environmentId,
      recipientId: id,
      recipientPublicKey: keys.publicKey,
      granterId: granter.id,
      granterSigningSecretKey: granter.signingSecretKey,
    });
    return {
      environment_id: environmentId,
      epoch: g.epoch,
      sealed_key: g.sealed_key,
      signature: g.signature,
    };
  });
  return {
    id,
    keyPart: credential.keyPart,
    keys,
    body: {
      id,
      scopes,
      public_key: keys.publicKey,
      signing_public_key: keys.signingPublicKey,
      grants,
    },
  };
}

export async function createApiKey(
  t: TestApp,
  project: VaultProject,
  role: Role,
  scopes: Record<string, 'read' | 'read_write'>,
  extra: Record<string, unknown> = {},
): Promise<TestToken> {
  const req = tokenRequest(project, 'key', role === 'viewer' ? {} : scopes);
  const res = await t.request({
    method: 'POST',
    url: `/v1/projects/${project.id}/api-keys`,
    headers: project.admin.headers,
    body: { ...req.body, name: `key ${req.id}`, role, ...extra },
  });
  expectStatus(res, 201);
  const bearer = dataOf<{ bearer: string }>(res).bearer;
  return {
    id: req.id,
    bearer,
    keyPart: req.keyPart,
    credential: `${bearer}.${req.keyPart}`,
    headers: { authorization: `Bearer ${bearer}` },
  };
}

/** Decrypts a stored value with a project key, as a member's client would. */
export function decryptStored(
  projectId: string,
  pmk: Uint8Array,
  epoch: number,
  v: { environment_id: string; name: string; value: string },
): string {
  return decryptSecretValue({
    environmentKey: deriveEnvironmentKey(pmk, projectId, v.environment_id, epoch),
    projectId,
    environmentId: v.environment_id,
    name: v.name,
    epoch,
    envelope: v.value,
  });
}
