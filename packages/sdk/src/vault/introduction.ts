import {
  CryptoError,
  KEY_32_PATTERN,
  generateIntroductionSecret,
  introductionProof,
  inviterProof,
  openIntroductionSecret,
  ready,
  sealIntroductionSecret,
  sealedIntroductionEpoch,
  toBase64url,
  verifyIntroductionProof,
  verifyInviterProof,
} from '../crypto/index.js';
import { sodium } from '../crypto/sodium.js';
import type { CofferClient } from '../client/http.js';
import { putMemberIntroduction } from '../client/key-trust.js';
import {
  acceptInvitation,
  inviteMember,
  listInvitations,
  type AcceptedMember,
  type Invitation,
  type InvitedMember,
} from '../client/members.js';
import type { Role } from '../client/projects.js';
import type { PendingGrant } from '../client/vault.js';
import { isStaleEpoch } from '../client/errors.js';
import { VaultError } from './errors.js';
import type { KeyPins } from './key-pins.js';
import { loadMembershipChain } from './chain.js';
import type { VaultKeys } from './keys.js';
import type { VaultSession } from './session.js';

export interface IntroducedInvitation {
  member: InvitedMember;
  /**
   * `<publicUrl>/invite?member=<member id>#k=<secret>`: give it to the invitee
   * through your own channel (chat, in person). The fragment never reaches a
   * server. The server's e-mail (with its one-time token) is sent as before.
   */
  introductionLink: string;
}

/**
 * Invites `email` as `role` (an admin's vault session) with a verified
 * introduction: a fresh secret k goes into the returned link; k is sealed for
 * the project's admins under the current project key, with the inviter's proof
 * over their own keys, and stored on the server. The invitee accepts with the
 * link (`acceptWithIntroduction`), which proves their keys; `grantMember` then
 * checks that proof against the keys the server shows and needs no fingerprint
 * comparison. `publicUrl` defaults to the client's base URL.
 */
export async function inviteWithIntroduction(
  session: VaultSession,
  email: string,
  role: Role,
  options: { publicUrl?: string } = {},
): Promise<IntroducedInvitation> {
  await ready();
  session.projectKey(); // no_grant before inviting, not after
  const member = await inviteMember(session.client, session.projectId, { email, role });
  const secret = generateIntroductionSecret();
  try {
    for (let attempt = 1; ; attempt++) {
      const { key, epoch } = session.projectKey();
      const own = session.publicKeys;
      try {
        await putMemberIntroduction(session.client, session.projectId, member.id, {
          sealed_secret: sealIntroductionSecret({
            secret,
            projectKey: key,
            projectId: session.projectId,
            memberId: member.id,
            epoch,
          }),
          inviter_proof: inviterProof(secret, {
            projectId: session.projectId,
            memberId: member.id,
            userId: session.signer.id,
            publicKey: own.publicKey,
            signingPublicKey: own.signingPublicKey,
          }),
        });
        break;
      } catch (error) {
        if (attempt < 3 && isStaleEpoch(error)) {
          await session.refresh();
          continue;
        }
        throw error;
      }
    }
    const base = (options.publicUrl ?? session.client.baseUrl).replace(/\/+$/, '');
    // The chain's root rides in the fragment too: the invitee's client then
    // knows the project's identity from the inviter, not from the server.
    const root = session.chain ? `&r=${session.chain.root}` : '';
    return {
      member,
      introductionLink: `${base}/invite?member=${encodeURIComponent(member.id)}#k=${toBase64url(secret)}${root}`,
    };
  } finally {
    sodium().memzero(secret);
  }
}

/**
 * Reads an introduction link (`…/invite?member=mbr_…#k=…[&r=…]`, or just
 * `mbr_…#k=…`). `root`: the project's membership chain root as the inviter's
 * client saw it (null in links from projects without a chain). Throws
 * `TypeError` when it is not one.
 */
export function parseIntroductionLink(link: string): {
  memberId: string;
  secret: Uint8Array;
  root: string | null;
} {
  const text = link.trim();
  const hash = text.indexOf('#');
  const fragment = new URLSearchParams(hash >= 0 ? text.slice(hash + 1) : '');
  const before = hash >= 0 ? text.slice(0, hash) : text;
  let memberId: string | null = null;
  if (/^mbr_[0-9A-Za-z]+$/.test(before)) memberId = before;
  else {
    const query = before.indexOf('?');
    memberId = query >= 0 ? new URLSearchParams(before.slice(query + 1)).get('member') : null;
  }
  const k = fragment.get('k');
  if (!memberId || !/^mbr_[0-9A-Za-z]+$/.test(memberId) || !k) {
    throw new TypeError('Not an introduction link: expected …/invite?member=mbr_…#k=…');
  }
  // Decoded without libsodium, so a link can be checked before `ready()`.
  if (!KEY_32_PATTERN.test(k)) {
    throw new TypeError('The introduction link is damaged (its #k= part is not 32 bytes)');
  }
  const root = fragment.get('r');
  if (root !== null && !KEY_32_PATTERN.test(root)) {
    throw new TypeError('The introduction link is damaged (its &r= part is not 32 bytes)');
  }
  const binary = atob(k.replace(/-/g, '+').replace(/_/g, '/') + '=');
  return { memberId, secret: Uint8Array.from(binary, (c) => c.charCodeAt(0)), root };
}

export interface AcceptedWithIntroduction {
  member: AcceptedMember;
  /** Whether the inviter's keys, as the server shows them, matched the link (and were pinned as verified). */
  inviterVerified: boolean;
  /**
   * The project's fingerprint (the root of its signed membership chain), to
   * compare with the inviter if you wish; pinned with `pins`. Null while the
   * project has no chain.
   */
  projectFingerprint: string | null;
  /**
   * Whether the link named that root (links made for chained projects do):
   * the project's identity then came from the inviter, not from the server.
   */
  projectVerified: boolean;
}

/**
 * Accepts an invitation with its introduction link: proves possession of the
 * link's secret over the caller's own public keys (which the admins' clients
 * check before granting). When the invitation carries the inviter's proof, it
 * is checked first against the inviter's keys as the server shows them; a
 * mismatch (`introduction_mismatch`) accepts nothing. With `pins`, the inviter
 * is pinned as `verified` and the pins saved. `token`: the e-mail's token, needed
 * while the caller's address is unverified (as for `acceptInvitation`).
 */
export async function acceptWithIntroduction(
  client: CofferClient,
  self: { userId: string; keys: VaultKeys },
  link: string,
  options: { token?: string; pins?: KeyPins } = {},
): Promise<AcceptedWithIntroduction> {
  await ready();
  const { memberId, secret, root } = parseIntroductionLink(link);
  try {
    const invitation = await findInvitation(client, memberId);
    const projectId = invitation.project.id;
    let inviterVerified = false;
    if (invitation.introduction) {
      const inviter = {
        user_id: invitation.invited_by.id,
        email: invitation.invited_by.email,
        public_key: invitation.introduction.inviter_public_key,
        signing_public_key: invitation.introduction.inviter_signing_public_key,
      };
      const holds = verifyInviterProof(
        secret,
        {
          projectId,
          memberId,
          userId: inviter.user_id,
          publicKey: inviter.public_key,
          signingPublicKey: inviter.signing_public_key,
        },
        invitation.introduction.inviter_proof,
      );
      if (!holds) {
        throw new VaultError(
          'introduction_mismatch',
          `The keys the server shows for your inviter ${inviter.email} do not match the introduction link: not accepting (someone may be substituting keys; ask them for a new link)`,
        );
      }
      options.pins?.accept(inviter, 'verified');
      inviterVerified = true;
    }
    const proof = introductionProof(secret, {
      projectId,
      memberId,
      userId: self.userId,
      publicKey: self.keys.encryption.publicKey,
      signingPublicKey: self.keys.signing.publicKey,
    });
    const member = await acceptInvitation(client, memberId, options.token, proof);
    // A member now: the chain is readable. Its root is pinned at join.
    // chain_changed when the server shows another chain than the link names.
    // Saves the pins too (the inviter's, the root).
    const chain = await loadMembershipChain(client, projectId, { pins: options.pins, root });
    return {
      member,
      inviterVerified,
      projectFingerprint: chain?.fingerprint ?? null,
      projectVerified: root !== null && chain !== null,
    };
  } finally {
    sodium().memzero(secret);
  }
}

async function findInvitation(client: CofferClient, memberId: string): Promise<Invitation> {
  for (let page = 1; ; page++) {
    const res = await listInvitations(client, { page, per_page: 100 });
    const found = res.data.find((i) => i.id === memberId);
    if (found) return found;
    if (page >= res.pagination.total_pages) {
      throw new VaultError(
        'not_pending',
        `No pending invitation ${memberId} for you (expired, withdrawn, or for another account)`,
      );
    }
  }
}

/**
 * What an admin's client learns from a pending member's introduction, checked
 * against the keys the server shows: `verified`, `none` (no introduction, no
 * proof, or sealed under an epoch this session does not hold), or throws
 * `introduction_mismatch` naming the member.
 */
export function checkIntroduction(
  session: VaultSession,
  member: PendingGrant,
): 'verified' | 'none' {
  const intro = member.introduction;
  if (!intro || intro.proof === null) return 'none';
  const { key, epoch } = session.projectKey();
  let sealedEpoch: number;
  try {
    sealedEpoch = sealedIntroductionEpoch(intro.sealed_secret);
  } catch {
    throw mismatch(member, 'its stored introduction is malformed');
  }
  if (sealedEpoch !== epoch) return 'none';
  let secret: Uint8Array;
  try {
    secret = openIntroductionSecret(intro.sealed_secret, {
      projectKey: key,
      projectId: session.projectId,
      memberId: member.member_id,
    });
  } catch (error) {
    if (error instanceof CryptoError)
      throw mismatch(member, 'its stored introduction does not open');
    throw error;
  }
  try {
    const holds = verifyIntroductionProof(
      secret,
      {
        projectId: session.projectId,
        memberId: member.member_id,
        userId: member.user_id,
        publicKey: member.public_key,
        signingPublicKey: member.signing_public_key,
      },
      intro.proof,
    );
    if (!holds) {
      throw mismatch(
        member,
        `the keys the server shows (fingerprint ${member.fingerprint}) are not the ones they proved when accepting`,
      );
    }
    return 'verified';
  } finally {
    sodium().memzero(secret);
  }
}

const mismatch = (member: PendingGrant, why: string) =>
  new VaultError(
    'introduction_mismatch',
    `Refusing to grant ${member.email}: ${why}. Someone (the server, or whoever can write its database) may be substituting keys; compare fingerprints with ${member.email} out of band before doing anything else.`,
  );

/** Re-seals the snapshot's introductions under the next epoch (for `rekey`); null when one does not open. */
export function resealIntroductions(
  introductions: readonly { member_id: string; sealed_secret: string }[],
  from: { key: Uint8Array; epoch: number },
  to: { key: Uint8Array; epoch: number },
  projectId: string,
): { member_id: string; sealed_secret: string }[] | null {
  const out: { member_id: string; sealed_secret: string }[] = [];
  for (const intro of introductions) {
    let secret: Uint8Array;
    try {
      if (sealedIntroductionEpoch(intro.sealed_secret) !== from.epoch) return null;
      secret = openIntroductionSecret(intro.sealed_secret, {
        projectKey: from.key,
        projectId,
        memberId: intro.member_id,
      });
    } catch {
      return null;
    }
    out.push({
      member_id: intro.member_id,
      sealed_secret: sealIntroductionSecret({
        secret,
        projectKey: to.key,
        projectId,
        memberId: intro.member_id,
        epoch: to.epoch,
      }),
    });
    sodium().memzero(secret);
  }
  return out;
}
