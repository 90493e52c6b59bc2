import { CompiledQuery, type Compilable, type Kysely } from 'kysely';
import { sqliteReader } from './database.js';
import type { Database } from './schema.js';

/**
 * A query whose SQL is built and compiled once per SQL dialect, for the
 * hottest paths: each call then only binds its arguments and executes. Keyed
 * by the dialect's adapter class, so a transaction (a new handle every time)
 * reuses the SQL of the database it belongs to.
 * `build` must use its arguments (strings, or bytes) as values only (never to choose the
 * shape of the query); they are compiled as markers and swapped for the real
 * values on every call, whatever order the compiler put them in.
 * On SQLite, outside a transaction, the statement runs on the database's
 * read-only connection (`sqliteReader`), without Kysely's queue, and its rows
 * are shared (frozen) until the database changes. (On
 * PostgreSQL every statement is a prepared one already; see `openDatabase`.)
 */
export function preparedQuery<A extends (string | Uint8Array)[], R>(
  build: (db: Kysely<Database>, ...args: A) => Compilable<R>,
): (db: Kysely<Database>, ...args: A) => Promise<R[]> {
  const compiledFor = new Map<unknown, MarkedStatement>();
  return async (db, ...args) => {
    const dialect = db.getExecutor().adapter.constructor;
    let compiled = compiledFor.get(dialect);
    if (!compiled) {
      // Strings at build time, whatever the values' types: only bound, never read.
      const markers = args.map((_, i) => marker(i));
      compiled = markedStatement(build(db, ...(markers as A)), markers);
      compiledFor.set(dialect, compiled);
    }
    return readRows<R>(db, bound(compiled, args));
  };
}

const marker = (i: number) => `\u0000value-${i}\u0000`;

/** A statement compiled with markers in place of its values, and where each marker ended up. */
interface MarkedStatement {
  sql: string;
  parameters: readonly unknown[];
  /** Per parameter: the index of its marker, or -1 for a constant of the statement itself. */
  valueAt: number[];
}

function markedStatement(query: Compilable<unknown>, markers: readonly string[]): MarkedStatement {
  const { sql, parameters } = query.compile();
  return { sql, parameters, valueAt: parameters.map((p) => markers.indexOf(p as string)) };
}

/** The statement with this call's values in place of its markers. */
function bound(statement: MarkedStatement, values: readonly unknown[]): CompiledQuery {
  const { sql, parameters, valueAt } = statement;
  return CompiledQuery.raw(
    sql,
    parameters.map((p, i) => (valueAt[i]! >= 0 ? values[valueAt[i]!] : p)),
  );
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

/** Shapes a `preparedWrite` keeps compiled; past them the least recently used is dropped. */
const MAX_WRITE_SHAPES = 64;

type Marked = { values: unknown[]; shape: string[] };

/**
 * Walks plain data (arrays, objects, primitives) recording its shape and its
 * primitive leaves in `into`; with `mark`, returns a copy with each leaf
 * replaced by a marker string naming its position.
 */
function markLeaves(value: unknown, into: Marked, mark: boolean): unknown {
  if (Array.isArray(value)) {
    into.shape.push(`[${value.length}`);
    return value.map((item) => markLeaves(item, into, mark));
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(value)) {
      // Kysely leaves a column whose value is undefined out of the statement.
      if (field === undefined) continue;
      into.shape.push(key);
      out[key] = markLeaves(field, into, mark);
    }
    into.shape.push('}');
    return out;
  }
  into.values.push(value);
  return mark ? marker(into.values.length - 1) : value;
}

/**
 * A write statement built by Kysely's query builder and compiled once per SQL
 * dialect and SHAPE, for the hottest writes (Kysely builds and compiles a
 * statement of several rows in more CPU than its round trip costs the client).
 * The shape is `variant` plus the structure of `input`: array lengths and the
 * keys of objects (undefined fields left out, as Kysely leaves them out). Every
 * other leaf of `input` (string, number, boolean, null; plain data only, no
 * Dates or Buffers) is a value: `build` gets markers in their place, which are
 * swapped for the real values on every call, so it must use leaves only as
 * values and choose anything else by `variant`. A value is bound by its
 * position, never looked up by content, so no input can pass for a marker.
 */
export function preparedWrite<I>(
  build: (db: Kysely<Database>, variant: string, input: I) => Compilable<unknown>,
): (db: Kysely<Database>, variant: string, input: I) => Promise<void> {
  const compiledFor = new Map<unknown, Map<string, MarkedStatement>>();
  return async (db, variant, input) => {
    const dialect = db.getExecutor().adapter.constructor;
    let shapes = compiledFor.get(dialect);
    if (!shapes) compiledFor.set(dialect, (shapes = new Map()));
    const leaves: Marked = { values: [], shape: [variant] };
    markLeaves(input, leaves, false);
    const key = leaves.shape.join('\u0001');
    let compiled = shapes.get(key);
    if (compiled) {
      // Most recently used last, so the hot shapes stay and rare ones (a batch
      // of an unusual size) are the ones evicted.
      shapes.delete(key);
    } else {
      if (shapes.size >= MAX_WRITE_SHAPES) shapes.delete(shapes.keys().next().value!);
      const markers: Marked = { values: [], shape: [] };
      const query = build(db, variant, markLeaves(input, markers, true) as I);
      compiled = markedStatement(
        query,
        markers.values.map((_, i) => marker(i)),
      );
    }
    shapes.set(key, compiled);
    await db.executeQuery(bound(compiled, leaves.values));
  };
}
