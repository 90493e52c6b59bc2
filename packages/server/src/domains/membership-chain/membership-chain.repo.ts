import type { Insertable, Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

type Db = Kysely<Database>;

/** A project's stored statements (JSON), in chain order. */
export function findStatements(db: Db, projectId: string) {
  return db
    .selectFrom('membership_statements')
    .select('statement')
    .where('project_id', '=', projectId)
    .orderBy('seq')
    .execute();
}

/** Appends statements to a project's chain. */
export async function insertStatements(
  db: Db,
  rows: Array<Insertable<Database['membership_statements']>>,
): Promise<void> {
  await db.insertInto('membership_statements').values(rows).execute();
}
