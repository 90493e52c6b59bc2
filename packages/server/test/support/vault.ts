import {
  createGrant,
  deriveEnvironmentKey,
  encryptSecretValue,
  generateProjectKey,
  ready,
  type Grant,
} from '@coffer/sdk';
import type { TestApp } from './app.js';
import { as, dataOf } from './http.js';
import { createProject } from './projects.js';
import { signUp, type TestUser } from './users.js';

// A project whose vault is initialised, with the test playing its admin's
// client: it holds the project key, the server only ever sees sealed grants
// and envelopes made by the SDK's crypto.

export interface Environment {
  id: string;
  slug: string;
}

export interface VaultProject {
  id: string;
  admin: TestUser;
  /** The project key of the current epoch, as the admin's client holds it. */
  pmk: Uint8Array;
  epoch: number;
  /** The environments every project starts with. */
  env: { development: Environment; staging: Environment; production: Environment };
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

/**
 * A new project of `admin`'s (a new user when not given) whose vault the
 * admin initialised as the SDK does: a self-grant of a new project key at
 * epoch 1 (`POST …/vault/grants`).
 */
export async function projectWithVault(t: TestApp, admin?: TestUser): Promise<VaultProject> {
  await ready();
  const owner = admin ?? (await signUp(t));
  const { id } = await createProject(t, owner);
  const pmk = generateProjectKey();
  const self = memberGrant(pmk, id, 1, owner, {
    id: owner.id,
    publicKey: owner.keys.encryption.publicKey,
  });
  dataOf(
    await as(t, owner, 'POST', `/v1/projects/${id}/vault/grants`, { grants: [grantBody(self)] }),
    200,
  );
  const listed = dataOf<Environment[]>(
    await as(t, owner, 'GET', `/v1/projects/${id}/environments?per_page=100`),
    200,
  );
  const bySlug = Object.fromEntries(listed.map((e) => [e.slug, { id: e.id, slug: e.slug }]));
  return {
    id,
    admin: owner,
    pmk,
    epoch: 1,
    env: {
      development: bySlug.development!,
      staging: bySlug.staging!,
      production: bySlug.production!,
    },
  };
}

/** The admin's client grants the current project key to a member. */
export async function grantMember(t: TestApp, project: VaultProject, member: TestUser) {
  const grant = memberGrant(project.pmk, project.id, project.epoch, project.admin, {
    id: member.id,
    publicKey: member.keys.encryption.publicKey,
  });
  dataOf(
    await as(t, project.admin, 'POST', `/v1/projects/${project.id}/vault/grants`, {
      grants: [grantBody(grant)],
    }),
    200,
  );
}

export function environmentKey(
  project: VaultProject,
  environmentId: string,
  epoch = project.epoch,
) {
  return deriveEnvironmentKey(project.pmk, project.id, environmentId, epoch);
}

/** A real envelope for `value`, bound to the project, environment, name and epoch. */
export function envelope(
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
