import type { Insertable, Kysely, Selectable } from 'kysely';
import type { DialectName } from '../../db/database.js';
import type { Database, EnvironmentTable, MemberTable, ProjectTable } from '../../db/schema.js';
import type { ListParams } from '../../http/pagination.js';
import type { Role } from '../../http/principal.js';
import { pageOf, type SortColumn } from '../../db/list-order.js';
import type { PROJECT_SORTS } from './projects.schemas.js';

export type ProjectRow = Pick<
  Selectable<ProjectTable>,
  'id' | 'name' | 'description' | 'created_at' | 'updated_at'
>;
/** A project with the role of the member through whom the caller sees it. */
type ProjectWithRole = ProjectRow & { role: Role };

type ProjectSort = (typeof PROJECT_SORTS)[number];
const SORT_COLUMNS: Record<ProjectSort, SortColumn> = {
  created_at: { column: 'projects.created_at' },
  updated_at: { column: 'projects.updated_at' },
  name: { column: 'projects.name', text: true },
};

/** Which projects a caller can see: those where `userId` is an active member, optionally only one. */
export interface Visibility {
  userId: string;
  /** Tokens are bound to one project. */
  onlyProjectId?: string;
}

function visible(db: Kysely<Database>, visibility: Visibility) {
  let query = db
    .selectFrom('projects')
    .innerJoin('members', 'members.project_id', 'projects.id')
    .where('members.user_id', '=', visibility.userId)
    .where('members.status', '=', 'active');
  if (visibility.onlyProjectId) query = query.where('projects.id', '=', visibility.onlyProjectId);
  return query;
}

export function listVisibleProjects(
  db: Kysely<Database>,
  dialect: DialectName,
  visibility: Visibility,
  params: ListParams<ProjectSort>,
): Promise<ProjectWithRole[]> {
  const query = visible(db, visibility).select([
    'projects.id',
    'projects.name',
    'projects.description',
    'projects.created_at',
    'projects.updated_at',
    'members.role as role',
  ]);
  return pageOf(query, dialect, SORT_COLUMNS, params, 'projects.id').execute();
}

export async function countVisibleProjects(
  db: Kysely<Database>,
  visibility: Visibility,
): Promise<number> {
  const row = await visible(db, visibility)
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export function findProject(
  db: Kysely<Database>,
  projectId: string,
): Promise<ProjectRow | undefined> {
  return db
    .selectFrom('projects')
    .select(['id', 'name', 'description', 'created_at', 'updated_at'])
    .where('id', '=', projectId)
    .executeTakeFirst();
}

export async function insertProject(
  db: Kysely<Database>,
  row: Insertable<ProjectTable>,
): Promise<void> {
  await db.insertInto('projects').values(row).execute();
}

/** The creator's membership of a new project: its first (active) admin. */
export async function insertFirstAdmin(
  db: Kysely<Database>,
  row: Insertable<MemberTable>,
): Promise<void> {
  await db.insertInto('members').values(row).execute();
}

export async function insertEnvironments(
  db: Kysely<Database>,
  rows: Insertable<EnvironmentTable>[],
): Promise<void> {
  await db.insertInto('environments').values(rows).execute();
}

export async function updateProject(
  db: Kysely<Database>,
  projectId: string,
  patch: { name?: string; description?: string; updated_at: string },
): Promise<void> {
  await db.updateTable('projects').set(patch).where('id', '=', projectId).execute();
}

/** Everything of the project goes with it (foreign keys cascade); audit events stay. */
export async function deleteProject(db: Kysely<Database>, projectId: string): Promise<void> {
  await db.deleteFrom('projects').where('id', '=', projectId).execute();
}

/** After a member with secret access leaves: `GET /vault` recommends a re-key until one happens. */
export async function markRekeyRecommended(db: Kysely<Database>, projectId: string): Promise<void> {
  await db
    .updateTable('projects')
    .set({ rekey_recommended: 1 })
    .where('id', '=', projectId)
    .execute();
}
