import type { Kysely } from 'kysely';
import type { SharedDeps } from '../../../shared-deps.js';
import { lockProject } from '../../../db/database.js';
import type { Database, MemberTable } from '../../../db/schema.js';
import { AppError } from '../../../errors.js';
import type { ListParams } from '../../../http/pagination.js';
import type { Principal } from '../../../http/principal.js';
import { audit, type Actor } from '../../audit/audit.js';
import { matchesHash } from '../../identity/credentials.js';
import type { IdentityService } from '../../identity/identity.service.js';
import { userRef, type MembersService, type MemberWithUser } from '../members.service.js';
import { requireSession } from '../../../access/project-access.js';
import { expireLapsedInvitations, hasLapsed } from './invitation-expiry.js';
import {
  countOpenInvitations,
  listOpenInvitations,
  isEmailVerified,
  type InvitationRow,
  type InvitationSort,
} from './invitations.repo.js';

type Deps = Pick<SharedDeps, 'db' | 'clock'> & {
  members: Pick<MembersService, 'memberOfUser' | 'updateMember'>;
  identity: Pick<IdentityService, 'markEmailVerified'>;
};

/** Runs inside the answer's transaction before the member changes; returns extra audit data. */
type Precondition = (
  trx: Kysely<Database>,
  member: MemberWithUser,
  at: string,
) => Promise<Record<string, unknown>>;

const noInvitation = () =>
  new AppError(
    'not_found',
    'No pending invitation with this id for you (it may have expired, been declined or withdrawn)',
  );

/**
 * Joining a project needs a proven e-mail address. Under `SIGNUP_POLICY=open`
 * anyone can sign up with an address they do not own (even filling the
 * account an invitation created), so an unverified account must present the
 * invitation's token, which only that mailbox received; a valid one proves
 * the address. A token that is sent must match, verified account or not.
 */
const proveAddress =
  (identity: Deps['identity'], token: string | undefined): Precondition =>
  async (trx, member, at) => {
    if (token !== undefined && !matchesHash(token, member.invitation_token_hash)) {
      throw new AppError(
        'forbidden',
        'The invitation token does not belong to this invitation; use the link from its e-mail',
        [{ field: 'token', issue: 'invalid' }],
      );
    }
    if (await isEmailVerified(trx, member.user_id)) return { email_verified_by_token: false };
    if (token === undefined) {
      throw new AppError(
        'forbidden',
        'Your e-mail address is not confirmed yet: accept with the link from the invitation e-mail, which confirms it (or send its token)',
        [{ field: 'token', issue: 'required' }],
      );
    }
    await identity.markEmailVerified(trx, member.user_id, at);
    return { email_verified_by_token: true };
  };

const noPrecondition: Precondition = async () => ({});

/** The invited user's side: see, accept and decline invitations. Signed-in users only. */
export function invitationsService({
  db: { kysely: db, dialect },
  clock,
  members,
  identity,
}: Deps) {
  /**
   * Answers one of the caller's pending invitations. Locks its project first,
   * so an answer and a concurrent removal or role change are serialised.
   */
  async function answer(
    actor: Actor,
    memberId: string,
    outcome: { status: MemberTable['status']; action: string },
    precondition: Precondition,
    introductionProof?: string,
  ): Promise<MemberWithUser> {
    const principal = requireSession(actor.principal, 'answer invitations');
    const now = clock.now();
    await expireLapsedInvitations(db, { memberId }, now);
    return db.transaction().execute(async (trx: Kysely<Database>) => {
      const found = await members.memberOfUser(trx, memberId, principal.userId);
      if (!found) throw noInvitation();
      await lockProject(trx, dialect, found.project_id);
      const member = await members.memberOfUser(trx, memberId, principal.userId);
      if (!member || member.status !== 'pending' || hasLapsed(member, now)) throw noInvitation();
      const at = now.toISOString();
      const proof = await precondition(trx, member, at);
      const joinedAt = outcome.status === 'active' ? at : null;
      await members.updateMember(trx, member.id, {
        status: outcome.status,
        joined_at: joinedAt,
        invitation_token_hash: null,
        updated_at: at,
        ...(introductionProof !== undefined ? { introduction_proof: introductionProof } : {}),
      });
      await audit(
        trx,
        { actor, projectId: member.project_id, at: now },
        outcome.action,
        ['member', member.id],
        {
          user_id: member.user_id,
          role: member.role,
          before: { status: 'pending' },
          after: { status: outcome.status },
          ...proof,
          ...(introductionProof !== undefined ? { introduction_proof: true } : {}),
        },
      );
      return { ...member, status: outcome.status, joined_at: joinedAt, updated_at: at };
    });
  }

  return {
    /** The caller's pending, unexpired invitations. */
    async list(principal: Principal | null, params: ListParams<InvitationSort>) {
      const { userId } = requireSession(principal, 'have invitations');
      const now = clock.now();
      await expireLapsedInvitations(db, { userId }, now);
      const at = now.toISOString();
      const rows = await listOpenInvitations(db, dialect, userId, at, params);
      const total = await countOpenInvitations(db, userId, at);
      return { items: rows.map(toInvitation), total };
    },

    /**
     * pending → active, `joined_at` set; an unverified caller needs the
     * invitation's token (see `proveAddress`). An admin then grants the vault
     * key to the new member. `introductionProof`: the invitee's MAC over its
     * keys under the introduction secret (opaque here), kept for the admins.
     */
    async accept(actor: Actor, memberId: string, token?: string, introductionProof?: string) {
      const member = await answer(
        actor,
        memberId,
        { status: 'active', action: 'invitation.accepted' },
        proveAddress(identity, token),
        introductionProof,
      );
      return {
        id: member.id,
        project_id: member.project_id,
        user: userRef(member),
        role: member.role,
        status: member.status,
        joined_at: member.joined_at!,
      };
    },

    /** pending → revoked; the project's admins may invite the user again. Needs no token: declining harms no one. */
    async decline(actor: Actor, memberId: string): Promise<void> {
      await answer(
        actor,
        memberId,
        { status: 'revoked', action: 'invitation.declined' },
        noPrecondition,
      );
    },
  };
}

function toInvitation(row: InvitationRow) {
  return {
    id: row.id,
    project: { id: row.project_id, name: row.project_name },
    role: row.role,
    invited_at: row.invited_at!,
    invited_by: {
      id: row.invited_by ?? '',
      email: row.inviter_email ?? '',
      name: row.inviter_name ?? '',
    },
    expires_at: row.expires_at!,
    // Only when the inviter's client stored an introduction: what the invitee
    // checks, with the secret from the introduction link, to trust the inviter's keys.
    ...(row.introduction_inviter_proof && row.inviter_public_key && row.inviter_signing_public_key
      ? {
          introduction: {
            inviter_proof: row.introduction_inviter_proof,
            inviter_public_key: row.inviter_public_key,
            inviter_signing_public_key: row.inviter_signing_public_key,
          },
        }
      : {}),
  };
}
