import type { Kysely } from 'kysely';
import { toCount } from '../../db/database.js';
import type { Database, PersonalOverrideTable } from '../../db/schema.js';
import { offsetOf, type ListParams } from '../../http/pagination.js';
import type { OverrideSort } from './overrides.schemas.js';

type Db = Kysely<Database>;

/** One user's overrides in a project (one environment when given), a page and the total. */
export async function listForUser(
  db: Db,
  projectId: string,
  userId: string,
  environmentId: string | null,
  params: ListParams<OverrideSort>,
): Promise<{ rows: Array<PersonalOverrideTable & { environment_slug: string }>; total: number }> {
  let base = db
    .selectFrom('personal_overrides as o')
    .innerJoin('environments as e', 'e.id', 'o.environment_id')
    .where('o.project_id', '=', projectId)
    .where('o.user_id', '=', userId);
  if (environmentId !== null) base = base.where('o.environment_id', '=', environmentId);
  const rows = await base
    .selectAll('o')
    .select('e.slug as environment_slug')
    .orderBy(`o.${params.sort}`, params.order)
    .orderBy('o.id', params.order)
    .limit(params.per_page)
    .offset(offsetOf(params))
    .execute();
  const { total } = await base
    .select((eb) => eb.fn.countAll().as('total'))
    .executeTakeFirstOrThrow();
  return { rows, total: toCount(total as number | string | bigint) };
}

export async function findOne(db: Db, environmentId: string, userId: string, name: string) {
  return db
    .selectFrom('personal_overrides')
    .selectAll()
    .where('environment_id', '=', environmentId)
    .where('user_id', '=', userId)
    .where('name', '=', name)
    .executeTakeFirst();
}

/** Creates the override or replaces its value (two writers at once: the last one wins, never a conflict). */
export async function upsert(db: Db, row: PersonalOverrideTable): Promise<void> {
  await db
    .insertInto('personal_overrides')
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(['environment_id', 'user_id', 'name'])
        .doUpdateSet({ value: row.value, updated_at: row.updated_at }),
    )
    .execute();
}

export async function deleteOne(db: Db, id: string): Promise<void> {
  await db.deleteFrom('personal_overrides').where('id', '=', id).execute();
}

/** Everything a user overrides in a project: gone when they leave it. Returns how many. */
export async function deleteForUser(db: Db, projectId: string, userId: string): Promise<number> {
  const result = await db
    .deleteFrom('personal_overrides')
    .where('project_id', '=', projectId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function findMemberUser(db: Db, projectId: string, memberId: string) {
  return db
    .selectFrom('members')
    .select(['id', 'user_id'])
    .where('project_id', '=', projectId)
    .where('id', '=', memberId)
    .executeTakeFirst();
}
