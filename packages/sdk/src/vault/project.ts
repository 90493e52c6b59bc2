import { createGrant, generateProjectKey, ready } from '../crypto/index.js';
import { isStaleEpoch } from '../client/errors.js';
import type { CofferClient } from '../client/http.js';
import { getVault, postVaultGrants, type PendingGrant } from '../client/vault.js';
import { VaultError } from './errors.js';
import { checkIntroduction } from './introduction.js';
import { signChainRoot, signStatements, statementsForGrant } from './membership.js';
import type { KeyPins } from './key-pins.js';
import type { VaultKeys } from './keys.js';
import { openVault, type OpenVaultOptions, type VaultSession } from './session.js';

/** A project as `POST /v1/projects` returns it. */
export interface CreatedProject {
  id: string;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
  role: 'admin' | 'developer' | 'viewer';
}

/**
 * Creates the vault of a project that has none (epoch 0): a fresh project key,
 * granted to the caller (an admin) at epoch 1. The server initialises the vault
 * on this first self-grant.
 */
export async function initializeVault(
  client: CofferClient,
  projectId: string,
  keys: VaultKeys,
  options: OpenVaultOptions = {},
): Promise<VaultSession> {
  await ready();
  const status = await getVault(client, projectId);
  if (status.initialized) {
    throw new VaultError('already_initialized', `The vault of project ${projectId} already exists`);
  }
  const projectKey = generateProjectKey();
  const self = status.recipient.id;
  const grant = createGrant({
    key: projectKey,
    kind: 'project_key',
    projectId,
    epoch: 1,
    recipientId: self,
    recipientPublicKey: keys.encryption.publicKey,
    granterId: self,
    granterSigningSecretKey: keys.signing.secretKey,
  });
  await postVaultGrants(client, projectId, [grantUpload(grant)]);
  const session = await openVault(client, projectId, keys, options);
  // The project's membership chain starts with its creator.
  await signChainRoot(session);
  return session;
}

/** `POST /v1/projects`, then the vault: the project is usable for secrets when this returns. */
export async function createProjectWithVault(
  client: CofferClient,
  keys: VaultKeys,
  input: { name: string; description?: string },
): Promise<CreatedProject> {
  const project = await client.request<CreatedProject>('POST', '/v1/projects', { body: input });
  const session = await initializeVault(client, project.id, keys);
  session.forget();
  return project;
}

/** Members waiting for the project key, with the fingerprints to compare before granting (admins). */
export async function pendingGrants(session: VaultSession): Promise<PendingGrant[]> {
  await session.refresh();
  return session.status.pending_grants ?? [];
}

export interface GrantedMember {
  userId: string;
  /** The fingerprint of the keys the project key was sealed to: show it to the admin. */
  fingerprint: string;
  epoch: number;
}

/** What vouches for a pending member's keys: their introduction, the fingerprint compared, or a verified pin. */
export type VouchedBy = 'introduction' | 'fingerprint' | 'pin';

export interface GrantMemberOptions {
  /** The fingerprint the admin compared with the member out of band. */
  expectedFingerprint?: string;
  /** The admin's key pins: a member pinned with other keys is refused (`key_changed`); the granted keys are pinned as verified. */
  pins?: KeyPins;
}

/**
 * How the keys the server shows for a pending member are vouched for, or why
 * not: `introduction_mismatch` (their introduction proof fails against these
 * keys), `key_changed` (pinned with other keys), `fingerprint_mismatch`,
 * `unverified_member` (no introduction, no verified pin, no fingerprint given).
 */
export function vouchFor(
  session: VaultSession,
  member: PendingGrant,
  options: GrantMemberOptions = {},
): VouchedBy {
  const pinned = options.pins?.check(member);
  const introduced = checkIntroduction(session, member);
  if (
    options.expectedFingerprint !== undefined &&
    normalizeFingerprint(options.expectedFingerprint) !== normalizeFingerprint(member.fingerprint)
  ) {
    throw new VaultError(
      'fingerprint_mismatch',
      `The keys of ${member.email} have fingerprint ${member.fingerprint}, not the one you confirmed`,
    );
  }
  if (introduced === 'verified') return 'introduction';
  if (options.expectedFingerprint !== undefined) return 'fingerprint';
  if (pinned === 'verified') return 'pin';
  throw new VaultError(
    'unverified_member',
    `${member.email} joined without a verified introduction, so nothing vouches that the keys the server shows (fingerprint ${member.fingerprint}) are theirs: compare that fingerprint with ${member.email} out of band (in person, on a call) and grant with it`,
  );
}

/**
 * Grants the project key to a member awaiting it (an admin's session). The
 * keys the server shows must be vouched for: the member's introduction proof
 * (`inviteWithIntroduction` + `acceptWithIntroduction`) is checked and a
 * mismatch refused (`introduction_mismatch`); without one, pass
 * `expectedFingerprint`, the one the admin compared with the member out of band
 * (`unverified_member` otherwise, `fingerprint_mismatch` if it differs), or
 * have them pinned as verified in `pins`.
 */
export async function grantMember(
  session: VaultSession,
  memberUserId: string,
  options: GrantMemberOptions = {},
): Promise<GrantedMember> {
  for (let attempt = 1; ; attempt++) {
    const pending = await pendingGrants(session);
    const member = pending.find((p) => p.user_id === memberUserId);
    if (!member) {
      throw new VaultError(
        'not_pending',
        `${memberUserId} is not waiting for the project key (already granted, a viewer, or not an active member)`,
      );
    }
    vouchFor(session, member, options);
    // Vouched for: the admin's client signs the member into the chain (or their
    // new role) before the key goes to them; other keys in the chain refuse.
    await signStatements(session, (state) => statementsForGrant(state, member, options.pins), {
      pins: options.pins,
    });
    const { key, epoch } = session.projectKey();
    const grant = createGrant({
      key,
      kind: 'project_key',
      projectId: session.projectId,
      epoch,
      recipientId: member.user_id,
      recipientPublicKey: member.public_key,
      granterId: session.signer.id,
      granterSigningSecretKey: session.signer.signingSecretKey,
    });
    try {
      await postVaultGrants(session.client, session.projectId, [grantUpload(grant)]);
      if (options.pins) {
        options.pins.accept(member, 'verified');
        await options.pins.save();
      }
      return { userId: member.user_id, fingerprint: member.fingerprint, epoch };
    } catch (error) {
      // A re-key landed in between: refetch the new key and grant that one.
      if (attempt < 3 && isStaleEpoch(error)) continue;
      throw error;
    }
  }
}

const normalizeFingerprint = (f: string) => f.replace(/\s+/g, '').toUpperCase();

export const grantUpload = (g: {
  recipient_id: string;
  epoch: number;
  sealed_key: string;
  signature: string;
}) => ({
  recipient_id: g.recipient_id,
  epoch: g.epoch,
  sealed_key: g.sealed_key,
  signature: g.signature,
});
