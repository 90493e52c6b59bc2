import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

type Db = Kysely<Database>;

/** What a stored key pins document is written with. */
export interface KeyPinsRow {
  version: number;
  document: string;
  signature: string;
  updated_at: string;
}

/** A user's stored key pins, if any. */
export function findPins(db: Db, userId: string) {
  return db
    .selectFrom('key_pins')
    .select(['version', 'document', 'signature'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** The version of a user's stored key pins, if any. */
export function findPinsVersion(db: Db, userId: string) {
  return db
    .selectFrom('key_pins')
    .select('version')
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** Replaces a user's pins if still at `currentVersion`: whether it did. */
export async function replacePins(
  db: Db,
  userId: string,
  currentVersion: number,
  row: KeyPinsRow,
): Promise<boolean> {
  const result = await db
    .updateTable('key_pins')
    .set(row)
    .where('user_id', '=', userId)
    .where('version', '=', currentVersion)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Stores a user's first pins unless a concurrent writer did: the stored version after. */
export async function insertFirstPins(db: Db, userId: string, row: KeyPinsRow): Promise<number> {
  await db
    .insertInto('key_pins')
    .values({ user_id: userId, ...row })
    .onConflict((oc) => oc.column('user_id').doNothing())
    .execute();
  const stored = await db
    .selectFrom('key_pins')
    .select('version')
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(stored.version);
}
