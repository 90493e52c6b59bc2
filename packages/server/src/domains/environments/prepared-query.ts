import { CompiledQuery, type Compilable, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

/**
 * A query whose SQL is built and compiled once per database handle, for the
 * hottest read paths: each call then only binds its arguments and executes.
 * `build` must use its string arguments as values only (never to choose the
 * shape of the query); they are compiled as markers and swapped for the real
 * values on every call, whatever order the compiler put them in.
 */
export function preparedQuery<A extends string[], R>(
  build: (db: Kysely<Database>, ...args: A) => Compilable<R>,
): (db: Kysely<Database>, ...args: A) => Promise<R[]> {
  const compiledFor = new WeakMap<
    Kysely<Database>,
    { sql: string; parameters: readonly unknown[]; argumentAt: number[] }
  >();
  return async (db, ...args) => {
    let compiled = compiledFor.get(db);
    if (!compiled) {
      const markers = args.map((_, i) => `\u0000argument-${i}\u0000`) as A;
      const query = build(db, ...markers).compile();
      compiled = {
        sql: query.sql,
        parameters: query.parameters,
        argumentAt: query.parameters.map((p) => markers.indexOf(p as string)),
      };
      compiledFor.set(db, compiled);
    }
    const { sql, parameters, argumentAt } = compiled;
    const values = parameters.map((p, i) => (argumentAt[i]! >= 0 ? args[argumentAt[i]!] : p));
    return (await db.executeQuery<R>(CompiledQuery.raw(sql, values))).rows;
  };
}
