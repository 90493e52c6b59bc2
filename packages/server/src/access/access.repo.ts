import type { Compilable, Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { preparedQuery } from '../db/prepared-query.js';
import type { Role } from '../http/principal.js';
import { isEnvironmentId, type EnvironmentRow } from '../domains/environments/environments.repo.js';

// The SQL that decides who may do what in a project: the caller's active
// membership, alone or joined to the environment a request names. Its compiled
// text is in packages/server/sql/ (`npm run sql`).

/** The role of a user's ACTIVE membership of a project, if any. */
export function findActiveMembership(
  db: Kysely<Database>,
  projectId: string,
  userId: string,
): Promise<{ role: Role } | undefined> {
  return db
    .selectFrom('members')
    .select(['role'])
    .where('project_id', '=', projectId)
    .where('user_id', '=', userId)
    .where('status', '=', 'active')
    .executeTakeFirst();
}

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
