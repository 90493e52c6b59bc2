import type { Kysely, Selectable } from 'kysely';
import { toCount } from '../../db/database.js';
import type { Database, EnvironmentTable } from '../../db/schema.js';
import type { ListParams } from '../../http/pagination.js';
import { offsetOf } from '../../http/pagination.js';

export type EnvironmentRow = Selectable<EnvironmentTable>;

/** `{env}` in a path is an `env_` id or a slug; slugs never contain `_`, so the two cannot collide. */
export const isEnvironmentId = (ref: string) => ref.startsWith('env_');

export type EnvironmentWithCount = EnvironmentRow & { secret_count: number | string | bigint };

export type EnvironmentSort = 'created_at' | 'updated_at' | 'name' | 'slug';

export async function findEnvironment(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
): Promise<EnvironmentWithCount | undefined> {
  return withSecretCount(db)
    .where('environments.project_id', '=', projectId)
    .where(isEnvironmentId(ref) ? 'environments.id' : 'environments.slug', '=', ref)
    .executeTakeFirst();
}

export async function listEnvironments(
  db: Kysely<Database>,
  projectId: string,
  params: ListParams<EnvironmentSort>,
): Promise<{ rows: EnvironmentWithCount[]; total: number }> {
  const rows = await withSecretCount(db)
    .where('environments.project_id', '=', projectId)
    .orderBy(`environments.${params.sort}`, params.order)
    .orderBy('environments.id', params.order)
    .limit(params.per_page)
    .offset(offsetOf(params))
    .execute();
  const { total } = await db
    .selectFrom('environments')
    .select((eb) => eb.fn.countAll().as('total'))
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow();
  return { rows, total: toCount(total as number | string | bigint) };
}

function withSecretCount(db: Kysely<Database>) {
  return db
    .selectFrom('environments')
    .selectAll('environments')
    .select((eb) =>
      eb
        .selectFrom('secrets')
        .select(eb.fn.countAll().as('n'))
        .whereRef('secrets.environment_id', '=', 'environments.id')
        .as('secret_count'),
    )
    .$narrowType<{ secret_count: number | string | bigint }>();
}

export async function slugTaken(
  db: Kysely<Database>,
  projectId: string,
  slug: string,
  exceptId?: string,
): Promise<boolean> {
  let query = db
    .selectFrom('environments')
    .select('id')
    .where('project_id', '=', projectId)
    .where('slug', '=', slug);
  if (exceptId) query = query.where('id', '!=', exceptId);
  return (await query.executeTakeFirst()) !== undefined;
}

export async function insertEnvironment(db: Kysely<Database>, row: EnvironmentRow): Promise<void> {
  await db.insertInto('environments').values(row).execute();
}

/** Renames and bumps the revision (the listing cache key) in one statement. */
export async function updateEnvironment(
  db: Kysely<Database>,
  id: string,
  patch: { name?: string; slug?: string; updated_at: string },
): Promise<void> {
  await db
    .updateTable('environments')
    .set((eb) => ({ ...patch, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .execute();
}

/**
 * Deletes an environment with its secrets and their versions (foreign-key
 * cascades). The token grants of its key are the vault's: the service deletes
 * them first, in the same transaction.
 */
export async function deleteEnvironment(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('environments').where('id', '=', id).execute();
}
