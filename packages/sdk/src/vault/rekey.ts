import {
  createGrant,
  decryptSecretValue,
  deriveEnvironmentKey,
  encryptSecretValue,
  generateProjectKey,
  ready,
  verifyGrantSignature,
} from '../crypto/index.js';
import { sodium } from '../crypto/sodium.js';
import { CofferApiError } from '../client/errors.js';
import type { CofferClient } from '../client/http.js';
import {
  getVaultSnapshot,
  postRekey,
  type RekeyResult,
  type RekeyUpload,
  type SnapshotMember,
  type VaultSnapshot,
} from '../client/vault.js';
import { VaultError } from './errors.js';
import type { KeyPins } from './key-pins.js';
import { resealIntroductions } from './introduction.js';
import { signStatements, statementsForGrant } from './membership.js';
import { grantUpload } from './project.js';
import type { VaultKeys } from './keys.js';
import { openVault, type OpenVaultOptions, type VaultSession } from './session.js';

export type RekeyPhase = 'snapshot' | 'reencrypt' | 'grants' | 'commit' | 'retry' | 'done';

export interface RekeyProgress {
  phase: RekeyPhase;
  /** Items finished in this phase (versions while re-encrypting, grants while granting). */
  done: number;
  total: number;
  /** 1 for the first try; more after a concurrent change forced a retry. */
  attempt: number;
}

export interface RekeyOptions extends OpenVaultOptions {
  onProgress?: (progress: RekeyProgress) => void;
  /** Tries in total when a concurrent change (a write, a member, a token) conflicts. Default 5. */
  maxAttempts?: number;
}

/** What the server committed, and the tokens whose credentials may need re-creating. */
export interface RekeyOutcome extends RekeyResult {
  /**
   * Live API keys and CI tokens created by someone other than the re-keying
   * admin. Their new grants are signed by this admin: a credential that names
   * the project's membership chain (key part version 3) accepts them, one that
   * names only its creator's key (version 2) does not and must be re-created;
   * the server cannot tell the versions apart, so all are listed. Absent when
   * there are none.
   */
  tokensCreatedByOthers?: string[];
}

/** How often `reencrypt` progress is reported. */
const PROGRESS_EVERY = 500;
/**
 * Re-keys a project's vault (an admin with the current key): fetches the
 * snapshot, generates a new project key, re-encrypts every stored version —
 * history included — under the next epoch, grants the new key to every member
 * who holds the current one (each checked: their grant must verify against the
 * keys shown for them now, and with `pins` those keys must match their pin;
 * `key_changed` otherwise) and each live token's environments, and commits it
 * all in one request. Members still awaiting a grant get nothing and stay
 * pending. A 409 from a concurrent change (a secret written, a member or a
 * token added meanwhile) refetches and redoes the work.
 */
export async function rekey(
  client: CofferClient,
  projectId: string,
  keys: VaultKeys,
  options: RekeyOptions = {},
): Promise<RekeyOutcome> {
  await ready();
  const maxAttempts = options.maxAttempts ?? 5;
  const report = options.onProgress ?? (() => undefined);
  const session = await openVault(client, projectId, keys, options);
  try {
    for (let attempt = 1; ; attempt++) {
      report({ phase: 'snapshot', done: 0, total: 1, attempt });
      const snapshot = await getVaultSnapshot(client, projectId);
      if (snapshot.epoch !== session.epoch) await session.refresh();
      const pins = await options.pins;
      // Refuse to seal the new key to a member whose keys differ from those their
      // grant was sealed to, or from their pin.
      for (const member of snapshot.members) checkRecipient(session, snapshot, member, pins);
      if (pins?.dirty) await pins.save();
      // Every recipient must be in the signed membership chain with these keys
      // (key_changed otherwise); one who holds the key but is missing, or whose
      // role moved, is signed in by this admin first.
      await signStatements(
        session,
        (state) => snapshot.members.flatMap((member) => statementsForGrant(state, member, pins)),
        { pins },
      );
      const upload = buildRekey(session, snapshot, (phase, done, total) =>
        report({ phase, done, total, attempt }),
      );
      report({ phase: 'commit', done: 0, total: 1, attempt });
      try {
        const result = await postRekey(client, projectId, upload);
        report({ phase: 'done', done: 1, total: 1, attempt });
        const tokensCreatedByOthers = [...snapshot.api_keys, ...snapshot.ci_tokens]
          .filter((t) => t.created_by !== undefined && t.created_by !== session.signer.id)
          .map((t) => t.id);
        return tokensCreatedByOthers.length > 0 ? { ...result, tokensCreatedByOthers } : result;
      } catch (error) {
        if (
          attempt < maxAttempts &&
          error instanceof CofferApiError &&
          error.code === 'version_conflict'
        ) {
          report({ phase: 'retry', done: 0, total: 1, attempt });
          await session.refresh();
          continue;
        }
        throw error;
      }
    }
  } finally {
    session.forget();
  }
}

/**
 * A re-key re-grants only members who hold the key now (the server leaves
 * members awaiting a grant out of the snapshot). Each one's current grant must
 * verify against the keys the server shows for them now — signed by this admin,
 * or by a granter whose keys match their pin when `pins` is given — so keys
 * substituted after the grant are refused (`key_changed`, naming the member)
 * rather than handed the new key, unless `pins` holds exactly these keys as
 * `verified` (the admin compared the new fingerprint: `KeyPins.verify`); with
 * `pins`, the member's pin is checked too.
 */
function checkRecipient(
  session: VaultSession,
  snapshot: VaultSnapshot,
  member: SnapshotMember,
  pins: KeyPins | undefined,
): void {
  const grant = member.grant;
  if (!grant) {
    throw new VaultError(
      'untrusted_granter',
      `The server does not show the grant ${member.email} holds, so their keys cannot be checked before re-keying`,
    );
  }
  const own = grant.granter_id === session.signer.id;
  const granterKey = own ? session.publicKeys.signingPublicKey : grant.granter_signing_public_key;
  if (!granterKey) {
    throw new VaultError(
      'untrusted_granter',
      `The signer of ${member.email}'s grant (${grant.granter_id}) has no known key`,
    );
  }
  if (!own && pins) {
    if (!grant.granter_public_key) {
      throw new VaultError(
        'untrusted_granter',
        `The server does not show the keys of ${grant.granter_email ?? grant.granter_id}, who granted ${member.email}`,
      );
    }
    pins.accept({
      user_id: grant.granter_id,
      email: grant.granter_email ?? '',
      public_key: grant.granter_public_key,
      signing_public_key: granterKey,
    });
  }
  let holds: boolean;
  try {
    holds =
      grant.epoch === snapshot.epoch &&
      verifyGrantSignature(
        {
          kind: 'project_key',
          project_id: session.projectId,
          epoch: grant.epoch,
          environment_id: null,
          recipient_id: member.user_id,
          sealed_key: grant.sealed_key,
          granter_id: grant.granter_id,
          signature: grant.signature,
        },
        { recipientPublicKey: member.public_key, granterSigningPublicKey: granterKey },
      );
  } catch {
    holds = false;
  }
  // Keys that differ from the granted ones pass only when the admin compared these
  // very keys out of band (`KeyPins.verify`): `check` throws key_changed for others.
  if (!holds && pins?.check(member) !== 'verified') {
    throw new VaultError(
      'key_changed',
      `The server shows keys for ${member.email} (${member.user_id}), fingerprint ${member.fingerprint}, that are not the keys they were granted the project key under. Refusing to re-key: someone may be substituting keys. If they really have new keys, compare fingerprints with them (coffer keys verify) and grant them again.`,
    );
  }
  // key_changed, naming the member, when they are pinned with other keys.
  pins?.accept(member);
}

function buildRekey(
  session: VaultSession,
  snapshot: VaultSnapshot,
  report: (phase: RekeyPhase, done: number, total: number) => void,
): RekeyUpload {
  const lib = sodium();
  const projectId = session.projectId;
  const { key: oldKey, epoch: from } = session.projectKey();
  const to = from + 1;
  const newKey = generateProjectKey();
  const oldKeys = new Map<string, Uint8Array>();
  const newKeys = new Map<string, Uint8Array>();
  const keyOf = (cache: Map<string, Uint8Array>, pmk: Uint8Array, env: string, epoch: number) => {
    let key = cache.get(env);
    if (!key) cache.set(env, (key = deriveEnvironmentKey(pmk, projectId, env, epoch)));
    return key;
  };
  try {
    const total = snapshot.versions.length;
    const versions = snapshot.versions.map((v, i) => {
      if (i % PROGRESS_EVERY === 0) report('reencrypt', i, total);
      const binding = { projectId, environmentId: v.environment_id, name: v.name };
      const value = decryptSecretValue({
        ...binding,
        epoch: from,
        environmentKey: keyOf(oldKeys, oldKey, v.environment_id, from),
        envelope: v.value,
      });
      return {
        id: v.id,
        value: encryptSecretValue({
          ...binding,
          epoch: to,
          environmentKey: keyOf(newKeys, newKey, v.environment_id, to),
          value,
        }),
      };
    });
    report('reencrypt', total, total);

    const signer = session.signer;
    const seal = (
      key: Uint8Array,
      recipientId: string,
      recipientPublicKey: string,
      environmentId: string | null,
    ) =>
      createGrant({
        key,
        kind: environmentId === null ? 'project_key' : 'environment_key',
        projectId,
        epoch: to,
        environmentId,
        recipientId,
        recipientPublicKey,
        granterId: signer.id,
        granterSigningSecretKey: signer.signingSecretKey,
      });
    const tokens = [...snapshot.api_keys, ...snapshot.ci_tokens];
    const grantTotal =
      snapshot.members.length + tokens.reduce((n, t) => n + Object.keys(t.scopes).length, 0);
    report('grants', 0, grantTotal);
    const grants = snapshot.members.map((m) =>
      grantUpload(seal(newKey, m.user_id, m.public_key, null)),
    );
    const tokenGrants = tokens.flatMap((t) =>
      Object.keys(t.scopes).map((env) => ({
        ...grantUpload(seal(keyOf(newKeys, newKey, env, to), t.id, t.public_key, env)),
        environment_id: env,
      })),
    );
    report('grants', grantTotal, grantTotal);
    // Pending introductions stay checkable: re-sealed under the new key (dropped,
    // and those members then need a fingerprint comparison, if one does not open).
    const introductions = resealIntroductions(
      snapshot.introductions ?? [],
      { key: oldKey, epoch: from },
      { key: newKey, epoch: to },
      projectId,
    );
    return {
      from_epoch: from,
      versions,
      grants,
      token_grants: tokenGrants,
      ...(introductions ? { introductions } : {}),
    };
  } finally {
    lib.memzero(newKey);
    for (const key of [...oldKeys.values(), ...newKeys.values()]) lib.memzero(key);
  }
}
