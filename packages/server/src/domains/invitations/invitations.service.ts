import type { Kysely } from 'kysely';
import type { AppContext } from '../../app.js';
import { lockProject } from '../../db/database.js';
import type { Database, MemberTable } from '../../db/schema.js';
import { AppError } from '../../errors.js';
import { paginationOf, type ListParams } from '../../http/pagination.js';
import type { Principal } from '../../http/principal.js';
import { recordAudit, type Actor } from '../audit/audit.js';
import { findMemberOfUser, updateMember, type MemberWithUser } from '../members/members.repo.js';
import { userRef } from '../members/members.service.js';
import { requireSession } from '../projects/access.js';
import { expireLapsedInvitations, hasLapsed } from './expiry.js';
import {
  countOpenInvitations,
  listOpenInvitations,
  type InvitationRow,
  type InvitationSort,
} from './invitations.repo.js';

type Deps = Pick<AppContext, 'db' | 'clock'>;

const noInvitation = () =>
  new AppError(
    'not_found',
    'No pending invitation with this id for you (it may have expired, been declined or withdrawn)',
  );

/** The invited user's side: see, accept and decline invitations. Signed-in users only. */
export function invitationsService({ db: { kysely: db, dialect }, clock }: Deps) {
  /**
   * Answers one of the caller's pending invitations. Locks its project first,
   * so an answer and a concurrent removal or role change are serialised.
   */
  async function answer(
    actor: Actor,
    memberId: string,
    outcome: { status: MemberTable['status']; action: string },
  ): Promise<MemberWithUser> {
    const principal = requireSession(actor.principal, 'answer invitations');
    const now = clock.now();
    await expireLapsedInvitations(db, { memberId }, now);
    return db.transaction().execute(async (trx: Kysely<Database>) => {
      const found = await findMemberOfUser(trx, memberId, principal.userId);
      if (!found) throw noInvitation();
      await lockProject(trx, dialect, found.project_id);
      const member = await findMemberOfUser(trx, memberId, principal.userId);
      if (!member || member.status !== 'pending' || hasLapsed(member, now)) throw noInvitation();
      const at = now.toISOString();
      const joinedAt = outcome.status === 'active' ? at : null;
      await updateMember(trx, member.id, {
        status: outcome.status,
        joined_at: joinedAt,
        invitation_token_hash: null,
        updated_at: at,
      });
      await recordAudit(
        trx,
        actor,
        {
          projectId: member.project_id,
          action: outcome.action,
          targetType: 'member',
          targetId: member.id,
          data: {
            user_id: member.user_id,
            role: member.role,
            before: { status: 'pending' },
            after: { status: outcome.status },
          },
        },
        now,
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
      return { items: rows.map(toInvitation), pagination: paginationOf(params, total) };
    },

    /** pending → active, `joined_at` set. An admin then grants the vault key to the new member. */
    async accept(actor: Actor, memberId: string) {
      const member = await answer(actor, memberId, {
        status: 'active',
        action: 'invitation.accepted',
      });
      return {
        id: member.id,
        project_id: member.project_id,
        user: userRef(member),
        role: member.role,
        status: member.status,
        joined_at: member.joined_at!,
      };
    },

    /** pending → revoked; the project's admins may invite the user again. */
    async decline(actor: Actor, memberId: string): Promise<void> {
      await answer(actor, memberId, { status: 'revoked', action: 'invitation.declined' });
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
  };
}
