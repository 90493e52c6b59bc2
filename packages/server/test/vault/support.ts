import {
  createGrant,
  decryptSecretValue,
  deriveEnvironmentKey,
  generateTokenCredential,
  tokenKeysFromKeyPart,
  TOKEN_PREFIXES,
} from '@coffer/sdk';
import { randomBytes } from 'node:crypto';
import type { Role } from '../../src/http/principal.js';
import type { TestApp } from '../support/app.js';
import { dataOf, expectStatus } from '../support/http.js';
import { envelope, environmentKey, type Environment, type VaultProject } from '../support/vault.js';

// Raw-HTTP helpers for the vault and token tests: the real routes, with the
// SDK's crypto primitives doing what a client does. The SDK's high-level vault
// operations are tested separately (packages/sdk/test/vault*.test.ts).

/** A random id of the given prefix, as the SDK makes for tokens (`key_`, `cit_`). */
export function clientId(prefix: 'key' | 'cit'): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let out = '';
  for (const byte of randomBytes(40)) if (byte < 248 && out.length < 20) out += alphabet[byte % 62];
  return `${prefix}_${out}`;
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
    body: { value: envelope(project, env.id, name, value, epoch) },
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
