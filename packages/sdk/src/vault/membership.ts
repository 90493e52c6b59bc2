import {
  fingerprint,
  nextMembershipStatement,
  ready,
  verifyMembershipChain,
  type MembershipKind,
  type MembershipRole,
  type MembershipState,
  type MembershipStatement,
  type MembershipSubject,
} from '../crypto/index.js';
import { CofferApiError } from '../client/errors.js';
import { getMemberKeys } from '../client/key-trust.js';
import { appendMembershipStatements, getMembershipChain } from '../client/membership-chain.js';
import { removeMember, updateMemberRole, type UpdatedMember } from '../client/members.js';
import type { Role } from '../client/projects.js';
import { VaultError } from './errors.js';
import { checkMembershipChain, loadMembershipChain, type ChainCheckOptions } from './chain.js';
import type { KeyPins } from './key-pins.js';
import type { VaultSession } from './session.js';

// The signed membership chain, as clients use it: verify what the server
// serves (against the pinned root, or the root a token's credential names),
// and sign the statements an admin's actions imply. See CRYPTO.md,
// "Membership chain".

interface StatementInput {
  kind: MembershipKind;
  subject: MembershipSubject;
  role: MembershipRole | null;
}

/**
 * Signs statements at the chain's head with the session's keys and appends
 * them; `plan` sees the current chain (null: none yet) and says what to sign
 * (nothing: an empty list). On `409 not_head` (another admin signed meanwhile)
 * the chain is fetched and `plan` runs again. Returns the chain after.
 */
export async function signStatements(
  session: VaultSession,
  plan: (state: MembershipState | null) => StatementInput[],
  options: ChainCheckOptions = {},
): Promise<MembershipState | null> {
  await ready();
  const pins = options.pins ?? (await session.pins());
  for (let attempt = 1; ; attempt++) {
    const { statements } = await getMembershipChain(session.client, session.projectId);
    let state = checkMembershipChain(statements, session.projectId, { pins });
    const inputs = plan(state);
    if (inputs.length === 0) {
      if (pins?.dirty) await pins.save();
      session.adoptChain(state);
      return state;
    }
    const signed: MembershipStatement[] = [];
    const self = session.signer;
    for (const input of inputs) {
      const own = state?.members.get(self.id);
      if (state && own?.role !== 'admin') {
        throw new VaultError(
          'not_chain_admin',
          `You are not an admin in the signed membership chain of project ${session.projectId}, so your client cannot sign who is a member: ask an admin who is to do it`,
        );
      }
      const statement = nextMembershipStatement(state, {
        projectId: session.projectId,
        kind: input.kind,
        subject: input.subject,
        role: input.role,
        signerId: self.id,
        signingSecretKey: self.signingSecretKey,
        at: new Date().toISOString(),
      });
      signed.push(statement);
      state = verifyMembershipChain([...statements, ...signed], session.projectId);
    }
    try {
      await appendMembershipStatements(session.client, session.projectId, signed);
    } catch (error) {
      if (attempt < 3 && isNotHead(error)) continue;
      throw error;
    }
    pins?.acceptChain(state!);
    if (pins?.dirty) await pins.save();
    session.adoptChain(state);
    return state;
  }
}

const isNotHead = (error: unknown) =>
  error instanceof CofferApiError &&
  error.code === 'version_conflict' &&
  error.details.some((d) => d.issue === 'not_head');

/** The root of a new project's chain: the creator, as admin, self-signed. */
export function signChainRoot(session: VaultSession): Promise<MembershipState | null> {
  const self = { user_id: session.signer.id, ...keysOf(session) };
  return signStatements(session, (state) =>
    state ? [] : [{ kind: 'root', subject: self, role: 'admin' }],
  );
}

const keysOf = (session: VaultSession) => ({
  public_key: session.publicKeys.publicKey,
  signing_public_key: session.publicKeys.signingPublicKey,
});

/**
 * What the chain says about a member the caller is about to grant (keys the
 * server shows, role the server gives): the statements to sign first. `add`
 * when they are not in the chain, `role` when the chain's role differs. When
 * the chain holds other keys for them: `key_changed`, unless the caller's
 * `pins` hold exactly the shown keys as `verified` (a fingerprint compared
 * out of band, `KeyPins.verify`): then `remove` and `add` with the new keys.
 */
export function statementsForGrant(
  state: MembershipState | null,
  member: MembershipSubject & { email: string; role: 'admin' | 'developer' },
  pins?: KeyPins,
): StatementInput[] {
  if (!state) return [];
  const subject = {
    user_id: member.user_id,
    public_key: member.public_key,
    signing_public_key: member.signing_public_key,
  };
  const chained = state.members.get(member.user_id);
  if (!chained) return [{ kind: 'add', subject, role: member.role }];
  if (
    chained.public_key !== member.public_key ||
    chained.signing_public_key !== member.signing_public_key
  ) {
    if (pins?.check(member) === 'verified') {
      return [
        { kind: 'remove', subject: chained, role: null },
        { kind: 'add', subject, role: member.role },
      ];
    }
    throw new VaultError(
      'key_changed',
      `The server shows keys for ${member.email} (fingerprint ${fingerprint(member.public_key, member.signing_public_key)}) other than those the project's signed membership chain holds for them (${fingerprint(chained.public_key, chained.signing_public_key)}): refusing to grant (someone may be substituting keys). If they really have new keys, compare fingerprints with them and verify the new key (coffer keys verify).`,
    );
  }
  return chained.role === member.role ? [] : [{ kind: 'role', subject, role: member.role }];
}

/**
 * Changes a member's role (admins) and, when the member is in the project's
 * chain, signs the change: a promotion to admin takes effect for other
 * members' clients only once signed. `422 last_admin` as `updateMemberRole`.
 */
export async function changeMemberRole(
  session: VaultSession,
  memberId: string,
  role: Role,
): Promise<UpdatedMember> {
  const updated = await updateMemberRole(session.client, session.projectId, memberId, role);
  await signStatements(session, (state) => {
    const chained = state?.members.get(updated.user.id);
    if (!chained || chained.role === role) return [];
    return [{ kind: 'role', subject: chained, role }];
  });
  return updated;
}

/**
 * Removes a member (admins) and, when they are in the project's chain, signs
 * the removal, so no client accepts a grant to them or, from them, after.
 */
export async function removeMemberSigned(
  session: VaultSession,
  member: { memberId: string; userId: string },
): Promise<void> {
  await removeMember(session.client, session.projectId, member.memberId);
  await signStatements(session, (state) => {
    const chained = state?.members.get(member.userId);
    return chained ? [{ kind: 'remove', subject: chained, role: null }] : [];
  });
}

/** A member an admin's client is about to sign into a new chain, with what vouches for their keys. */
export interface ChainCandidate {
  user_id: string;
  email: string;
  role: 'admin' | 'developer';
  public_key: string;
  signing_public_key: string;
  fingerprint: string;
  /** `verified`/`tofu`: pinned with these keys; `new`: first seen now; `self`: the caller. */
  pinned: 'verified' | 'tofu' | 'new' | 'self';
}

/**
 * Gives a project created before membership chains its chain (an admin who
 * holds the project key): the caller's root, then every admin and developer
 * who holds the key now, with the keys the server shows. `confirm` is shown
 * the members with their fingerprints (and what the caller's pins say of
 * them) and decides; with `pins`, a member pinned with other keys is refused
 * (`key_changed`) before `confirm` runs. `already_chained` if it has one.
 */
export async function signMembershipChain(
  session: VaultSession,
  confirm: (members: ChainCandidate[]) => boolean | Promise<boolean>,
): Promise<MembershipState | null> {
  await ready();
  const pins = await session.pins();
  session.projectKey(); // only a holder of the key vouches for who holds it
  const existing = await loadMembershipChain(session.client, session.projectId, { pins });
  if (existing) {
    throw new VaultError(
      'already_chained',
      `Project ${session.projectId} has a signed membership chain already (fingerprint ${existing.fingerprint})`,
    );
  }
  const pending = new Set((session.status.pending_grants ?? []).map((p) => p.user_id));
  const holders = (await getMemberKeys(session.client, session.projectId)).filter(
    (m) => !pending.has(m.user_id),
  );
  const candidates: ChainCandidate[] = holders.map((m) => ({
    user_id: m.user_id,
    email: m.email,
    role: m.role,
    public_key: m.public_key,
    signing_public_key: m.signing_public_key,
    fingerprint: m.fingerprint,
    pinned: m.user_id === session.signer.id ? 'self' : (pins?.check(m) ?? 'new'),
  }));
  const self = candidates.find((c) => c.pinned === 'self');
  if (
    !self ||
    self.public_key !== session.publicKeys.publicKey ||
    self.signing_public_key !== session.publicKeys.signingPublicKey
  ) {
    throw new VaultError(
      'key_changed',
      'The server does not show your own keys among the project’s key holders: refusing to sign',
    );
  }
  if (!(await confirm(candidates))) {
    throw new VaultError('not_chain_admin', 'Signing the membership chain was cancelled');
  }
  for (const c of candidates) if (c.pinned === 'new') pins?.accept(c);
  return signStatements(
    session,
    (state) => {
      if (state) {
        throw new VaultError(
          'already_chained',
          `Another admin signed the membership chain of ${session.projectId} meanwhile (fingerprint ${state.fingerprint}): review it instead`,
        );
      }
      const subject = (c: ChainCandidate) => ({
        user_id: c.user_id,
        public_key: c.public_key,
        signing_public_key: c.signing_public_key,
      });
      return [
        { kind: 'root', subject: subject(self), role: 'admin' },
        ...candidates
          .filter((c) => c !== self)
          .sort((a, b) => (a.user_id < b.user_id ? -1 : 1))
          .map((c) => ({ kind: 'add' as const, subject: subject(c), role: c.role })),
      ];
    },
    { pins },
  );
}
