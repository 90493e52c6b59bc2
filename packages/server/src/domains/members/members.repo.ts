import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type { DialectName } from '../../db/database.js';
import type { Database, MemberTable } from '../../db/schema.js';
import type { ListParams } from '../../http/pagination.js';
import type { Role } from '../../http/principal.js';
import { pageOf, type SortColumn } from '../../db/list-order.js';
import { selectRows } from '../../db/prepared-query.js';

type MemberRow = Selectable<MemberTable>;
type MemberStatus = MemberTable['status'];
/** A member row with the user's e-mail and name, what every member response shows. */
export type MemberWithUser = MemberRow & { email: string; name: string };

export const MEMBER_SORTS = [
  'created_at',
  'joined_at',
  'invited_at',
  'role',
  'status',
  'email',
  'name',
] as const;
export type MemberSort = (typeof MEMBER_SORTS)[number];

const SORT_COLUMNS: Record<MemberSort, SortColumn> = {
  created_at: { column: 'members.created_at' },
  joined_at: { column: 'members.joined_at', nullable: true },
  invited_at: { column: 'members.invited_at', nullable: true },
  role: { column: 'members.role' },
  status: { column: 'members.status' },
  email: { column: 'users.email', text: true },
  name: { column: 'users.name', text: true },
};

export interface MemberFilters {
  role?: Role;
  status?: MemberStatus;
}

const membersJoinUsers = (db: Kysely<Database>) =>
  db.selectFrom('members').innerJoin('users', 'users.id', 'members.user_id');

function membersWithUsers(db: Kysely<Database>) {
  return membersJoinUsers(db)
    .selectAll('members')
    .select(['users.email as email', 'users.name as name']);
}

/** A member of this project only: an id from another project is not found. */
export function findMember(
  db: Kysely<Database>,
  projectId: string,
  memberId: string,
): Promise<MemberWithUser | undefined> {
  return membersWithUsers(db)
    .where('members.project_id', '=', projectId)
    .where('members.id', '=', memberId)
    .executeTakeFirst();
}

export function findMemberByUser(
  db: Kysely<Database>,
  projectId: string,
  userId: string,
): Promise<MemberRow | undefined> {
  return db
    .selectFrom('members')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** A member row addressed to one user, whatever its project (invitations). */
export function findMemberOfUser(
  db: Kysely<Database>,
  memberId: string,
  userId: string,
): Promise<MemberWithUser | undefined> {
  return membersWithUsers(db)
    .where('members.id', '=', memberId)
    .where('members.user_id', '=', userId)
    .executeTakeFirst();
}

export async function insertMember(
  db: Kysely<Database>,
  row: Insertable<MemberTable>,
): Promise<void> {
  await db.insertInto('members').values(row).execute();
}

export async function updateMember(
  db: Kysely<Database>,
  memberId: string,
  patch: Updateable<MemberTable>,
): Promise<void> {
  await db.updateTable('members').set(patch).where('id', '=', memberId).execute();
}

export async function deleteMember(db: Kysely<Database>, memberId: string): Promise<void> {
  await db.deleteFrom('members').where('id', '=', memberId).execute();
}

/** What a member list item shows: fewer columns than a whole row (a page is up to 100 of them). */
export type MemberListRow = Pick<
  MemberRow,
  'id' | 'user_id' | 'role' | 'status' | 'joined_at' | 'invited_at' | 'created_at'
> & { email: string; name: string };

export function listMembers(
  db: Kysely<Database>,
  dialect: DialectName,
  projectId: string,
  filters: MemberFilters,
  params: ListParams<MemberSort>,
): Promise<MemberListRow[]> {
  let query = membersJoinUsers(db).where('members.project_id', '=', projectId);
  if (filters.role) query = query.where('members.role', '=', filters.role);
  if (filters.status) query = query.where('members.status', '=', filters.status);
  const listed = query.select([
    'members.id',
    'members.user_id',
    'members.role',
    'members.status',
    'members.joined_at',
    'members.invited_at',
    'members.created_at',
    'users.email as email',
    'users.name as name',
  ]);
  return selectRows(db, pageOf(listed, dialect, SORT_COLUMNS, params, 'members.id'));
}

export async function countMembers(
  db: Kysely<Database>,
  projectId: string,
  filters: MemberFilters,
): Promise<number> {
  let query = db
    .selectFrom('members')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('project_id', '=', projectId);
  if (filters.role) query = query.where('role', '=', filters.role);
  if (filters.status) query = query.where('status', '=', filters.status);
  const [row] = await selectRows(db, query);
  return Number(row!.count);
}

/** Active admins: the ones that keep a project manageable (pending admins do not count). */
export async function countActiveAdmins(db: Kysely<Database>, projectId: string): Promise<number> {
  return countMembers(db, projectId, { role: 'admin', status: 'active' });
}
