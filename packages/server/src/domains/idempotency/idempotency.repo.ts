import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { Database, IdempotencyKeyTable } from '../../db/schema.js';
import { preparedQuery } from '../../db/prepared-query.js';

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

/** The insert below, its values as placeholders in the order of `insertCommittedKey`'s array. */
const insertKeyStatement = sql<{ lookup: string }>`
    insert into idempotency_keys (lookup, owner, fingerprint, result, created_at, expires_at)
    values (${''}, ${''}, ${''}, ${''}, ${''}, ${''})
    on conflict (lookup) do update set
      owner = excluded.owner, fingerprint = excluded.fingerprint, result = excluded.result,
      created_at = excluded.created_at, expires_at = excluded.expires_at
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
  const { lookup, owner, fingerprint, result, created_at, expires_at } = row;
  const values = [lookup, owner, fingerprint, result, created_at, expires_at, now];
  const inserted = await trx.executeQuery(CompiledQuery.raw(text, values));
  return inserted.rows.length > 0;
}

/** What each column of a key's row may hold, so that it can be written into SQL text. */
const LITERAL_PATTERNS: Record<keyof IdempotencyKeyTable | 'now', RegExp> = {
  lookup: /^(?:[0-9a-f]{12})?[0-9a-f]{64}$/,
  owner: /^[a-z_]+:[0-9A-Za-z_]+$/,
  fingerprint: /^[0-9a-f]{64}$/,
  result: /^\.?[0-9A-Za-z+/=]*$/, // base64, unsealed ones after a dot
  created_at: /^[0-9TZ:.+-]+$/,
  expires_at: /^[0-9TZ:.+-]+$/,
  now: /^[0-9TZ:.+-]+$/,
};

const literal = (column: keyof typeof LITERAL_PATTERNS, value: string | null): string => {
  if (value === null) return 'null';
  if (!LITERAL_PATTERNS[column].test(value)) throw new Error(`not a well-formed ${column}`);
  return `'${value}'`;
};

/**
 * `insertCommittedKey` as parameterless SQL, for PostgreSQL to send with the
 * write's commit (`inSharedProjectTransaction`): an expired row of the key is
 * removed, and a live one makes the insert fail with a unique violation,
 * which rolls the write back. Every value is checked against what its column
 * can hold (hex hashes, base64, ISO times, an owner of ids) before it is
 * written into the text.
 */
export function committedKeyStatement(row: IdempotencyKeyTable, now: string): string {
  const lookup = literal('lookup', row.lookup);
  return (
    `delete from idempotency_keys where lookup = ${lookup} and expires_at <= ${literal('now', now)}; ` +
    'insert into idempotency_keys (lookup, owner, fingerprint, result, created_at, expires_at) ' +
    `values (${lookup}, ${literal('owner', row.owner)}, ${literal('fingerprint', row.fingerprint)}, ` +
    `${literal('result', row.result)}, ${literal('created_at', row.created_at)}, ${literal('expires_at', row.expires_at)})`
  );
}

/** Removes keys that expired before `now`, at most `limit` at a time; how many went. */
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
