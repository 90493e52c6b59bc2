import type { Compilable, Kysely, Selectable } from 'kysely';
import type { Database, EnvironmentTable } from '../../db/schema.js';
import type { Role } from '../../http/principal.js';
import type { ListParams } from '../../http/pagination.js';
import { offsetOf } from '../../http/pagination.js';
import { preparedQuery } from '../../db/prepared-query.js';

export type EnvironmentRow = Selectable<EnvironmentTable>;
export type EnvironmentWithCount = EnvironmentRow & { secret_count: number | string | bigint };

export type EnvironmentSort = 'created_at' | 'updated_at' | 'name' | 'slug';

/** `{env}` in a path is an `env_` id or a slug; slugs never contain `_`, so the two cannot collide. */
export const isEnvironmentId = (ref: string) => ref.startsWith('env_');

/**
 * Environments of a project with the caller's active membership of it joined
 * (`member_role`, null for a non-member): the start of every hot-path query.
 */
export function environmentsWithMembership(
  db: Kysely<Database>,
  projectId: string,
  userId: string,
) {
  return db
    .selectFrom('environments as e')
    .leftJoin('members as m', (join) =>
      join
        .onRef('m.project_id', '=', 'e.project_id')
        .on('m.user_id', '=', userId)
        .on('m.status', '=', 'active'),
    )
    .selectAll('e')
    .select('m.role as member_role')
    .where('e.project_id', '=', projectId);
}

export type EnvironmentWithMembership = EnvironmentRow & { member_role: Role | null };

/**
 * A prepared query on one environment of a project joined with the caller's
 * membership, the environment named by id or by slug: compiled once per
 * column, the right one picked per call. `extend` adds joins and columns (its
 * extra string arguments are values, as for `preparedQuery`). The first row,
 * or undefined when the environment does not exist.
 */
export function environmentQuery<R, A extends string[] = []>(
  extend: (query: ReturnType<typeof environmentsWithMembership>, ...extra: A) => Compilable<R>,
): (
  db: Kysely<Database>,
  projectId: string,
  ref: string,
  userId: string,
  ...extra: A
) => Promise<R | undefined> {
  const by = (column: 'e.id' | 'e.slug') =>
    preparedQuery((db, projectId: string, ref: string, userId: string, ...extra: A) =>
      extend(environmentsWithMembership(db, projectId, userId).where(column, '=', ref), ...extra),
    );
  const byId = by('e.id');
  const bySlug = by('e.slug');
  return async (db, projectId, ref, userId, ...extra) =>
    (await (isEnvironmentId(ref) ? byId : bySlug)(db, projectId, ref, userId, ...extra))[0];
}

/**
 * The environment and the caller's membership of its project in ONE query:
 * the hot path of every secret read. Undefined when the environment does not exist.
 */
export const findEnvironmentWithMembership = environmentQuery<EnvironmentWithMembership>(
  (query) => query,
);

export type EnvironmentForWrite = EnvironmentWithMembership & { vault_epoch: number | string };

/**
 * `findEnvironmentWithMembership` plus the project's current key epoch, in one
 * query: how a secret write starts once it holds the project's lock.
 */
export const findEnvironmentForWrite = environmentQuery((query) =>
  query.innerJoin('projects as p', 'p.id', 'e.project_id').select('p.vault_epoch'),
);

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
): Promise<{ rows: EnvironmentWithCount[]; total: number | string | bigint }> {
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
  return { rows, total: total as number | string | bigint };
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
 * cascades) and the token grants of its key, which would otherwise outlive it.
 */
export async function deleteEnvironment(
  db: Kysely<Database>,
  projectId: string,
  id: string,
): Promise<void> {
  await db
    .deleteFrom('vault_grants')
    .where('project_id', '=', projectId)
    .where('environment_id', '=', id)
    .execute();
  await db.deleteFrom('environments').where('id', '=', id).execute();
}
