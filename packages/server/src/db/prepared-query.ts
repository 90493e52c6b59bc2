import { CompiledQuery, type Compilable, type Kysely } from 'kysely';
import { sqliteReader } from './database.js';
import type { Database } from './schema.js';

/**
 * A query whose SQL is built and compiled once per SQL dialect, for the
 * hottest paths: each call then only binds its arguments and executes. Keyed
 * by the dialect's adapter class, so a transaction (a new handle every time)
 * reuses the SQL of the database it belongs to.
 * `build` must use its string arguments as values only (never to choose the
 * shape of the query); they are compiled as markers and swapped for the real
 * values on every call, whatever order the compiler put them in.
 * On SQLite, outside a transaction, the statement runs on the database's
 * read-only connection (`sqliteReader`), without Kysely's queue, and its rows
 * are shared (frozen) until the database changes. (On
 * PostgreSQL every statement is a prepared one already; see `openDatabase`.)
 */
export function preparedQuery<A extends string[], R>(
  build: (db: Kysely<Database>, ...args: A) => Compilable<R>,
): (db: Kysely<Database>, ...args: A) => Promise<R[]> {
  const compiledFor = new Map<
    unknown,
    { sql: string; parameters: readonly unknown[]; argumentAt: number[] }
  >();
  return async (db, ...args) => {
    const dialect = db.getExecutor().adapter.constructor;
    let compiled = compiledFor.get(dialect);
    if (!compiled) {
      const markers = args.map((_, i) => `\u0000argument-${i}\u0000`) as A;
      const query = build(db, ...markers).compile();
      compiled = {
        sql: query.sql,
        parameters: query.parameters,
        argumentAt: query.parameters.map((p) => markers.indexOf(p as string)),
      };
      compiledFor.set(dialect, compiled);
    }
    const { sql, parameters, argumentAt } = compiled;
    const values = parameters.map((p, i) => (argumentAt[i]! >= 0 ? args[argumentAt[i]!] : p));
    return readRows<R>(db, CompiledQuery.raw(sql, values));
  };
}

/** A compiled read: on SQLite's reader when `db` has one (see `sqliteReader`), else through Kysely. */
async function readRows<R>(db: Kysely<Database>, query: CompiledQuery): Promise<R[]> {
  const reader = sqliteReader(db);
  if (reader) return reader(query.sql, query.parameters) as R[];
  return (await db.executeQuery<R>(query)).rows;
}

/**
 * Runs a select built per call (filters, sort and page vary) the way
 * `preparedQuery` runs its fixed ones: on SQLite outside a transaction, on the
 * read-only connection with its rows shared (frozen) until the database
 * changes; elsewhere through Kysely as usual. Only for values that repeat
 * (ids, filters, pages): a value that changes on every call, such as the
 * current time, would fill the cache with results never read again.
 */
export function selectRows<R>(db: Kysely<Database>, query: Compilable<R>): Promise<R[]> {
  return readRows<R>(db, query.compile());
}
