import type { Kysely } from 'kysely';
import type { DialectName } from '../../../db/database.js';
import type { Database } from '../../../db/schema.js';
import type { ListParams } from '../../../http/pagination.js';
import type { Role } from '../../../http/principal.js';
import { pageOf, type SortColumn } from '../../../db/list-order.js';

export const INVITATION_SORTS = ['created_at', 'invited_at', 'expires_at'] as const;
export type InvitationSort = (typeof INVITATION_SORTS)[number];

const SORT_COLUMNS: Record<InvitationSort, SortColumn> = {
  created_at: { column: 'members.created_at' },
  invited_at: { column: 'members.invited_at', nullable: true },
  expires_at: { column: 'members.invitation_expires_at', nullable: true },
};

export interface InvitationRow {
  id: string;
  project_id: string;
  project_name: string;
  role: Role;
  invited_at: string | null;
  invited_by: string | null;
  inviter_email: string | null;
  inviter_name: string | null;
  expires_at: string | null;
  introduction_inviter_proof?: string | null;
  inviter_public_key: string | null;
  inviter_signing_public_key: string | null;
}

/** A user's invitations that are pending and not yet expired at `at`. */
function openInvitations(db: Kysely<Database>, userId: string, at: string) {
  return db
    .selectFrom('members')
    .innerJoin('projects', 'projects.id', 'members.project_id')
    .where('members.user_id', '=', userId)
    .where('members.status', '=', 'pending')
    .where('members.invitation_expires_at', '>', at);
}

export function listOpenInvitations(
  db: Kysely<Database>,
  dialect: DialectName,
  userId: string,
  at: string,
  params: ListParams<InvitationSort>,
): Promise<InvitationRow[]> {
  const query = openInvitations(db, userId, at)
    .leftJoin('users as inviter', 'inviter.id', 'members.invited_by')
    .select([
      'members.id',
      'members.project_id',
      'projects.name as project_name',
      'members.role',
      'members.invited_at',
      'members.invited_by',
      'inviter.email as inviter_email',
      'inviter.name as inviter_name',
      'members.invitation_expires_at as expires_at',
      'members.introduction_inviter_proof',
      'inviter.public_key as inviter_public_key',
      'inviter.signing_public_key as inviter_signing_public_key',
    ]);
  return pageOf(query, dialect, SORT_COLUMNS, params, 'members.id').execute();
}

export async function countOpenInvitations(
  db: Kysely<Database>,
  userId: string,
  at: string,
): Promise<number> {
  const row = await openInvitations(db, userId, at)
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** Whether the user has proven their e-mail address (an invitation link at sign-up or acceptance). */
export async function isEmailVerified(db: Kysely<Database>, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('users')
    .select('email_verified')
    .where('id', '=', userId)
    .executeTakeFirst();
  return row?.email_verified === 1;
}

/** Where to look for lapsed invitations: one project, one user, one member, or everywhere. */
export interface LapseScope {
  projectId?: string;
  userId?: string;
  memberId?: string;
}

export interface LapsedInvitation {
  id: string;
  project_id: string;
  user_id: string;
  role: Role;
}

export function findLapsedInvitations(
  db: Kysely<Database>,
  scope: LapseScope,
  at: string,
  limit: number,
): Promise<LapsedInvitation[]> {
  let query = db
    .selectFrom('members')
    .select(['id', 'project_id', 'user_id', 'role'])
    .where('status', '=', 'pending')
    .where('invitation_expires_at', '<=', at);
  if (scope.projectId) query = query.where('project_id', '=', scope.projectId);
  if (scope.userId) query = query.where('user_id', '=', scope.userId);
  if (scope.memberId) query = query.where('id', '=', scope.memberId);
  return query.orderBy('id').limit(limit).execute();
}

/** `pending` → `revoked` if still pending and lapsed; false when another request got there first. */
export async function revokeLapsedInvitation(
  db: Kysely<Database>,
  memberId: string,
  at: string,
): Promise<boolean> {
  const result = await db
    .updateTable('members')
    .set({ status: 'revoked', invitation_token_hash: null, updated_at: at })
    .where('id', '=', memberId)
    .where('status', '=', 'pending')
    .where('invitation_expires_at', '<=', at)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
