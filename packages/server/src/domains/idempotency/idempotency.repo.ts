import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { Database, IdempotencyKeyTable } from '../../db/schema.js';
import { preparedQuery } from '../../db/prepared-query.js';
import type { GroupKeyRows } from '../../db/write-claims.js';

export type StoredKey = Pick<IdempotencyKeyTable, 'fingerprint' | 'result' | 'created_at'>;

const liveKey = preparedQuery((db, lookup: string, now: string) =>
  db
    .selectFrom('idempotency_keys')
    .select(['fingerprint', 'result', 'created_at'])
    .where('lookup', '=', lookup)
    .where('expires_at', '>', now),
);

/**
 * The key's row while it is live (not yet expired at `now`). Every keyed write
 * asks first: prepared, and on SQLite read on the reader connection, so it
 * does not queue behind the writes.
 */
export async function findLiveKey(
  db: Kysely<Database>,
  lookup: string,
  now: string,
): Promise<StoredKey | undefined> {
  return (await liveKey(db, lookup, now))[0];
}

/** A key row's columns, in the order every insert below takes them. */
const KEY_COLUMNS = [
  'lookup',
  'owner',
  'fingerprint',
  'result',
  'created_at',
  'expires_at',
] as const;
const KEY_COLUMN_LIST = KEY_COLUMNS.join(', ');
const rowValues = (row: IdempotencyKeyTable) => KEY_COLUMNS.map((column) => row[column]);

/** How the upserts below replace an existing row of the key (each says when). */
const REPLACE_ROW = `on conflict (lookup) do update set
      owner = excluded.owner, fingerprint = excluded.fingerprint, result = excluded.result,
      created_at = excluded.created_at, expires_at = excluded.expires_at`;

/** The insert below, its values as placeholders in `KEY_COLUMNS` order, then `now`. */
const insertKeyStatement = sql<{ lookup: string }>`
    insert into idempotency_keys (${sql.raw(KEY_COLUMN_LIST)})
    values (${''}, ${''}, ${''}, ${''}, ${''}, ${''})
    ${sql.raw(REPLACE_ROW)}
    where idempotency_keys.expires_at <= ${''}
    returning lookup`;
/** Its SQL per dialect (by adapter class), compiled once. */
const insertKeySql = new Map<unknown, string>();

/**
 * Records a committed write under its key, in the write's transaction. An
 * expired row of the same key is replaced; a live one is left as it is, and
 * `false` says so (another request with the key committed first). Plain SQL
 * (the same on both dialects), compiled once: it runs in every keyed write
 * outside PostgreSQL's environment writes.
 */
export async function insertCommittedKey(
  trx: Kysely<Database>,
  row: IdempotencyKeyTable,
  now: string,
): Promise<boolean> {
  const dialect = trx.getExecutor().adapter.constructor;
  let text = insertKeySql.get(dialect);
  if (text === undefined) {
    text = insertKeyStatement.compile(trx).sql;
    insertKeySql.set(dialect, text);
  }
  const inserted = await trx.executeQuery(CompiledQuery.raw(text, [...rowValues(row), now]));
  return inserted.rows.length > 0;
}

/**
 * A statement text per number of rows or keys (at most a group commit's size,
 * so a few hundred texts per statement), each prepared once: the group's
 * values travel as parameters, which cost neither a `JSON.stringify` nor
 * SQLite a `json_each` or `json_extract` per value.
 */
function textPerCount(text: (n: number) => string): (n: number) => string {
  const texts = new Map<number, string>();
  return (n) => {
    let made = texts.get(n);
    if (made === undefined) texts.set(n, (made = text(n)));
    return made;
  };
}

const placeholders = (n: number, each: string) => Array.from({ length: n }, () => each).join(', ');

const keyRowsText = textPerCount(
  (n) =>
    `select lookup, expires_at from idempotency_keys where lookup in (${placeholders(n, '?')})`,
);

/**
 * Of `keys`, the lookups whose row is live at the key's own `at`, and those
 * whose row had expired by then, in ONE statement however many there are:
 * the SQLite group commit asks this for all its keyed writes at once
 * (db/group-commit.ts).
 */
export async function groupKeyRows(
  trx: Kysely<Database>,
  keys: readonly { lookup: string; at: Date }[],
): Promise<GroupKeyRows> {
  const found = await trx.executeQuery<{ lookup: string; expires_at: string }>(
    CompiledQuery.raw(
      keyRowsText(keys.length),
      keys.map((key) => key.lookup),
    ),
  );
  const rows = { live: new Set<string>(), expired: [] as string[] };
  if (found.rows.length === 0) return rows;
  const expiry = new Map(found.rows.map((row) => [row.lookup, row.expires_at]));
  for (const { lookup, at } of keys) {
    const expires = expiry.get(lookup);
    if (expires === undefined) continue;
    if (expires > at.toISOString()) rows.live.add(lookup);
    else rows.expired.push(lookup);
  }
  return rows;
}

const insertKeysText = textPerCount(
  (n) => `insert into idempotency_keys (${KEY_COLUMN_LIST})
    values ${placeholders(n, `(${KEY_COLUMNS.map(() => '?').join(', ')})`)}`,
);

/**
 * Removes the rows of `lookups` (found expired by their caller: the group
 * commit's read of its keys, a stretch of the SQLite purge). Both are rare
 * next to the writes, so the statement is built each time.
 */
async function deleteKeys(db: Kysely<Database>, lookups: readonly string[]): Promise<void> {
  if (lookups.length > 0)
    await db.deleteFrom('idempotency_keys').where('lookup', 'in', lookups).execute();
}

/**
 * Inserts the key rows of several writes in ONE plain insert (the SQLite
 * group commit, before its commit), after removing the expired rows of their
 * keys (`expired`, from `groupKeyRows` in the same transaction). The group
 * holds SQLite's one write lock from that read to this insert, so no other
 * row of these keys can appear in between; should one be there, the insert
 * fails with a unique violation and the whole group with it.
 */
export async function insertCommittedKeys(
  trx: Kysely<Database>,
  rows: readonly IdempotencyKeyTable[],
  expired: readonly string[],
): Promise<void> {
  await deleteKeys(trx, expired);
  await trx.executeQuery(CompiledQuery.raw(insertKeysText(rows.length), rows.flatMap(rowValues)));
}

/** What each column of a key's row may hold, so that it can be written into SQL text. */
const LITERAL_PATTERNS: Record<keyof IdempotencyKeyTable, RegExp> = {
  lookup: /^(?:[0-9a-f]{12})?[0-9a-f]{64}$/,
  owner: /^[a-z_]+:[0-9A-Za-z_]+$/,
  fingerprint: /^[0-9a-f]{64}$/,
  result: /^\.?[0-9A-Za-z+/=]*$/, // base64, unsealed ones after a dot (JSON ones: `JSON_RESULT`)
  created_at: /^[0-9TZ:.+-]+$/,
  expires_at: /^[0-9TZ:.+-]+$/,
};

/**
 * A result stored in clear as JSON (`~` and the JSON text) as an escape string
 * literal: backslashes doubled and quotes doubled, which `E'…'` reads back the
 * same whatever `standard_conforming_strings` says. JSON text holds no control
 * character (JSON.stringify escapes them), so no NUL either.
 */
// eslint-disable-next-line no-control-regex -- control characters are what it refuses
const JSON_RESULT = /^~[^\u0000-\u001f]*$/;

const literal = (column: keyof typeof LITERAL_PATTERNS, value: string | null): string => {
  if (value === null) return 'null';
  if (column === 'result' && JSON_RESULT.test(value))
    return `E'${value.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
  if (!LITERAL_PATTERNS[column].test(value)) throw new Error(`not a well-formed ${column}`);
  return `'${value}'`;
};

/**
 * `insertCommittedKey` as parameterless SQL, for PostgreSQL to send with the
 * write's commit (`inSharedProjectTransaction`): a plain insert, so that any
 * row of the key makes it fail with a unique violation, which rolls the
 * write back. A row that had only expired is removed by the claim's
 * `explain` (`deleteExpiredKey`) and the write runs again; a delete of it in
 * front of every insert cost PostgreSQL about as much as the insert itself
 * (its plan is made anew each time). Every value is checked against what its
 * column can hold (hex hashes, base64 or JSON, ISO times, an owner of ids)
 * before it is written into the text.
 */
export function committedKeyStatement(row: IdempotencyKeyTable): string {
  const values = KEY_COLUMNS.map((column) => literal(column, row[column]));
  return `insert into idempotency_keys (${KEY_COLUMN_LIST}) values (${values.join(', ')})`;
}

/** Removes the row of `lookup` if it expired before `now`. */
export async function deleteExpiredKey(
  db: Kysely<Database>,
  lookup: string,
  now: string,
): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('lookup', '=', lookup)
    .where('expires_at', '<=', now)
    .execute();
}

/**
 * SQLite, whose table has no index on `expires_at` (migration 016): of the
 * `limit` rows after `after` in `lookup` order (its primary key), deletes
 * those expired at `now`; how many went, and the last lookup of the stretch
 * (null once the table has no rows after `after`). A purge walks the whole
 * table so, a stretch at a time.
 */
export async function sweepExpiredKeys(
  db: Kysely<Database>,
  after: string,
  now: string,
  limit: number,
): Promise<{ purged: number; last: string | null }> {
  const stretch = await db
    .selectFrom('idempotency_keys')
    .select(['lookup', 'expires_at'])
    .where('lookup', '>', after)
    .orderBy('lookup')
    .limit(limit)
    .execute();
  if (stretch.length === 0) return { purged: 0, last: null };
  const expired = stretch.filter((row) => row.expires_at <= now).map((row) => row.lookup);
  await deleteKeys(db, expired);
  return { purged: expired.length, last: stretch[stretch.length - 1]!.lookup };
}

/** Removes keys that expired before `now`, at most `limit` at a time; how many went (PostgreSQL, by its index). */
export async function deleteExpiredKeys(
  db: Kysely<Database>,
  now: string,
  limit: number,
): Promise<number> {
  const expired = db
    .selectFrom('idempotency_keys')
    .select('lookup')
    .where('expires_at', '<=', now)
    .limit(limit);
  const result = await db
    .deleteFrom('idempotency_keys')
    .where('lookup', 'in', expired)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
