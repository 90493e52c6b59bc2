import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { Database, IdempotencyKeyTable } from '../../db/schema.js';
import { preparedQuery } from '../../db/prepared-query.js';
import type { GroupKey, GroupKeyRows } from '../../db/write-claims.js';

export type StoredKey = Pick<IdempotencyKeyTable, 'fingerprint' | 'result' | 'created_at'>;

/** How long a key is remembered after its write committed. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/** The oldest `created_at` of a key still live at `now` (both ISO times): later ones are. */
export const keptSince = (now: string): string =>
  new Date(Date.parse(now) - IDEMPOTENCY_KEY_TTL_MS).toISOString();

/** A lookup (`keyLookup`, hex) as stored. */
export const lookupBytes = (lookup: string): Buffer => Buffer.from(lookup, 'hex');

/** Stored bytes (a Buffer, or from `node:sqlite` a Uint8Array) as hex. */
export const hexOf = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');

const liveKey = preparedQuery((db, lookup: Uint8Array, since: string) =>
  db
    .selectFrom('idempotency_keys')
    .select(['fingerprint', 'result', 'created_at'])
    .where('lookup', '=', lookup)
    .where('created_at', '>', since),
);

/**
 * The key's row while it is live (kept at `now`). Keyed writes of routes that
 * read the key before their handler ask first: prepared, and on SQLite read on
 * the reader connection, so it does not queue behind the writes.
 */
export async function findLiveKey(
  db: Kysely<Database>,
  lookup: string,
  now: string,
): Promise<StoredKey | undefined> {
  return (await liveKey(db, lookupBytes(lookup), keptSince(now)))[0];
}

/** A key row's columns, in the order every insert below takes them. */
const KEY_COLUMNS = ['lookup', 'fingerprint', 'result', 'created_at'] as const;
const KEY_COLUMN_LIST = KEY_COLUMNS.join(', ');
const rowValues = (row: IdempotencyKeyTable) => KEY_COLUMNS.map((column) => row[column]);

/** The insert below, its values as placeholders in `KEY_COLUMNS` order, then the oldest kept time. */
const insertKeyStatement = sql<{ created_at: string }>`
    insert into idempotency_keys (${sql.raw(KEY_COLUMN_LIST)})
    values (${''}, ${''}, ${''}, ${''})
    on conflict (lookup) do update set
      fingerprint = excluded.fingerprint, result = excluded.result, created_at = excluded.created_at
    where idempotency_keys.created_at <= ${''}
    returning created_at`;
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
  const inserted = await trx.executeQuery(
    CompiledQuery.raw(text, [...rowValues(row), keptSince(now)]),
  );
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
    `select lookup, created_at from idempotency_keys where lookup in (${placeholders(n, '?')})`,
);

/**
 * Of `keys`, the lookups whose row is live at the key's own `at`, and those
 * whose row had expired by then, in ONE statement however many there are:
 * the SQLite group commit asks this for all its keyed writes at once
 * (db/group-commit.ts).
 */
export async function groupKeyRows(
  trx: Kysely<Database>,
  keys: readonly GroupKey[],
): Promise<GroupKeyRows> {
  const found = await trx.executeQuery<{ lookup: Uint8Array; created_at: string }>(
    CompiledQuery.raw(
      keyRowsText(keys.length),
      keys.map((key) => key.lookupBytes),
    ),
  );
  const rows = { live: new Set<string>(), expired: [] as string[] };
  if (found.rows.length === 0) return rows;
  const created = new Map(found.rows.map((row) => [hexOf(row.lookup), row.created_at]));
  for (const { lookup, at } of keys) {
    const createdAt = created.get(lookup);
    if (createdAt === undefined) continue;
    if (Date.parse(createdAt) + IDEMPOTENCY_KEY_TTL_MS > at.getTime()) rows.live.add(lookup);
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
async function deleteKeys(db: Kysely<Database>, lookups: readonly Uint8Array[]): Promise<void> {
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
  await deleteKeys(trx, expired.map(lookupBytes));
  await trx.executeQuery(CompiledQuery.raw(insertKeysText(rows.length), rows.flatMap(rowValues)));
}

/** What the text columns of a key's row may hold, so that they can be written into SQL text. */
const LITERAL_PATTERNS = {
  result: /^\.?[0-9A-Za-z+/=]*$/, // base64, unsealed ones after a dot (JSON ones: `JSON_RESULT`)
  created_at: /^[0-9TZ:.+-]+$/,
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

/** Bytes as a literal: hex digits only, decoded by the server. */
const bytesLiteral = (bytes: Uint8Array): string => `decode('${hexOf(bytes)}', 'hex')`;

/**
 * `insertCommittedKey` as parameterless SQL, for PostgreSQL to send with the
 * write's commit (`inSharedProjectTransaction`): a plain insert, so that any
 * row of the key makes it fail with a unique violation, which rolls the
 * write back. A row that had only expired is removed by the claim's
 * `explain` (`deleteExpiredKey`) and the write runs again; a delete of it in
 * front of every insert cost PostgreSQL about as much as the insert itself
 * (its plan is made anew each time). Every value is checked against what its
 * column can hold (bytes as hex, base64 or JSON, an ISO time) before it is
 * written into the text.
 */
export function committedKeyStatement(row: IdempotencyKeyTable): string {
  const values = [
    bytesLiteral(row.lookup),
    bytesLiteral(row.fingerprint),
    literal('result', row.result),
    literal('created_at', row.created_at),
  ];
  return `insert into idempotency_keys (${KEY_COLUMN_LIST}) values (${values.join(', ')})`;
}

/** Removes the row of `lookup` if it is no longer kept at `now`. */
export async function deleteExpiredKey(
  db: Kysely<Database>,
  lookup: string,
  now: string,
): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('lookup', '=', lookupBytes(lookup))
    .where('created_at', '<=', keptSince(now))
    .execute();
}

/**
 * SQLite, whose table has no index on `created_at` (migrations 016, 017): of
 * the `limit` rows after `after` in `lookup` order (its primary key), deletes
 * those no longer kept at `now`; how many went, and the last lookup of the
 * stretch (null once the table has no rows after `after`). A purge walks the
 * whole table so, a stretch at a time, from an empty `after`.
 */
export async function sweepExpiredKeys(
  db: Kysely<Database>,
  after: Uint8Array,
  now: string,
  limit: number,
): Promise<{ purged: number; last: Uint8Array | null }> {
  const stretch = await db
    .selectFrom('idempotency_keys')
    .select(['lookup', 'created_at'])
    .where('lookup', '>', after)
    .orderBy('lookup')
    .limit(limit)
    .execute();
  if (stretch.length === 0) return { purged: 0, last: null };
  const since = keptSince(now);
  const expired = stretch.filter((row) => row.created_at <= since).map((row) => row.lookup);
  await deleteKeys(db, expired);
  return { purged: expired.length, last: stretch[stretch.length - 1]!.lookup };
}

/** Removes keys no longer kept at `now`, at most `limit` at a time; how many went (PostgreSQL, by its index). */
export async function deleteExpiredKeys(
  db: Kysely<Database>,
  now: string,
  limit: number,
): Promise<number> {
  const expired = db
    .selectFrom('idempotency_keys')
    .select('lookup')
    .where('created_at', '<=', keptSince(now))
    .limit(limit);
  const result = await db
    .deleteFrom('idempotency_keys')
    .where('lookup', 'in', expired)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
