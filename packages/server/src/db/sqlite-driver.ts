import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * The SQLite driver under the server's database, its reader, backups and
 * restores: Node's built-in `node:sqlite` where the running Node has all of it
 * that Coffer uses (`StatementSync#columns` and `backup`, from Node 22.16 and
 * 23.11 on; Node 24 has them), better-sqlite3 elsewhere (Node 20). Both sit
 * behind the part of better-sqlite3's API that Coffer used before, so Kysely's
 * `SqliteDialect` and the callers see one interface. better-sqlite3 is loaded
 * only when it is the driver: on Node 24, better-sqlite3 12 (the last line
 * that builds on Node 20) aborts the process when a statement is collected at
 * teardown (`Assertion failed: (env) != nullptr`), so it must never be loaded
 * there.
 */
type SqliteDriverName = 'node:sqlite' | 'better-sqlite3';

interface SqliteRunResult {
  changes: number | bigint;
  lastInsertRowid: number | bigint;
}

/**
 * A prepared statement. Positional parameters come one by one or, as Kysely
 * passes them, as one array (better-sqlite3 takes both).
 */
export interface SqliteStatement {
  /** True when the statement returns rows (`all`/`get`), false for `run`. */
  readonly reader: boolean;
  all(...parameters: unknown[]): unknown[];
  get(...parameters: unknown[]): unknown;
  run(...parameters: unknown[]): SqliteRunResult;
  iterate(...parameters: unknown[]): IterableIterator<unknown>;
  /** This statement answering each row's first column instead of the row. */
  pluck(): SqliteStatement;
}

export interface SqliteConnection {
  readonly driver: SqliteDriverName;
  prepare(sql: string): SqliteStatement;
  /** Runs statements (pragmas, `begin`), ignoring any rows. */
  exec(sql: string): void;
  /**
   * Copies the whole database into `file` through SQLite's backup API in ONE
   * step, i.e. inside one read transaction: the copy is the database exactly
   * as it stood when that step began.
   */
  backup(file: string): Promise<void>;
  close(): void;
}

interface SqliteOpenOptions {
  readonly?: boolean;
  /** Fail (`SQLITE_CANTOPEN`) instead of creating the file. */
  fileMustExist?: boolean;
  /** Busy timeout in milliseconds (default 5000, better-sqlite3's own default). */
  timeout?: number;
}

/** Enough pages to copy any Coffer database in one backup step. */
const ALL_PAGES = 0x7fffffff;

// ---- node:sqlite (typed here: @types/node follows Node 20, which has no node:sqlite) ----

interface NodeStatement {
  all(...parameters: unknown[]): unknown[];
  get(...parameters: unknown[]): unknown;
  run(...parameters: unknown[]): SqliteRunResult;
  iterate(...parameters: unknown[]): IterableIterator<unknown>;
  columns(): { name: string }[];
}

interface NodeDatabase {
  prepare(sql: string): NodeStatement;
  exec(sql: string): void;
  close(): void;
}

interface NodeSqlite {
  DatabaseSync: new (path: string, options?: { readOnly?: boolean }) => NodeDatabase;
  StatementSync: { prototype: object };
  backup(source: NodeDatabase, path: string, options?: { rate?: number }): Promise<number>;
}

/**
 * `node:sqlite` when it has everything used here, loaded without its
 * ExperimentalWarning (Node 22 prints one; that warning alone is dropped).
 */
function loadNodeSqlite(): NodeSqlite | undefined {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string })?.type;
    const text = typeof warning === 'string' ? warning : warning.message;
    if (type === 'ExperimentalWarning' && text.startsWith('SQLite ')) return;
    return (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  let module: Partial<NodeSqlite> | undefined;
  try {
    module = process.getBuiltinModule?.('node:sqlite') as Partial<NodeSqlite> | undefined;
  } catch {
    module = undefined; // a Node that knows node:sqlite only behind a flag
  } finally {
    process.emitWarning = emitWarning;
  }
  return module?.DatabaseSync &&
    typeof module.backup === 'function' &&
    typeof (module.StatementSync?.prototype as { columns?: unknown } | undefined)?.columns ===
      'function'
    ? (module as NodeSqlite)
    : undefined;
}

let nodeSqlite: NodeSqlite | undefined | null = null;
const builtin = (): NodeSqlite | undefined =>
  nodeSqlite === null ? (nodeSqlite = loadNodeSqlite()) : nodeSqlite;

/** The driver this Node uses: `node:sqlite` when it has everything Coffer needs. */
export function sqliteDriver(): SqliteDriverName {
  return builtin() ? 'node:sqlite' : 'better-sqlite3';
}

/** better-sqlite3's error codes, by SQLite's (extended) result code. */
const RESULT_CODES: Record<number, string> = {
  1: 'SQLITE_ERROR',
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  8: 'SQLITE_READONLY',
  10: 'SQLITE_IOERR',
  11: 'SQLITE_CORRUPT',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  19: 'SQLITE_CONSTRAINT',
  26: 'SQLITE_NOTADB',
  261: 'SQLITE_BUSY_RECOVERY',
  275: 'SQLITE_CONSTRAINT_CHECK',
  517: 'SQLITE_BUSY_SNAPSHOT',
  773: 'SQLITE_BUSY_TIMEOUT',
  787: 'SQLITE_CONSTRAINT_FOREIGNKEY',
  1299: 'SQLITE_CONSTRAINT_NOTNULL',
  1555: 'SQLITE_CONSTRAINT_PRIMARYKEY',
  2067: 'SQLITE_CONSTRAINT_UNIQUE',
};

/** A node:sqlite error with better-sqlite3's `code` (`SQLITE_BUSY`, …), as callers test it. */
function named(error: unknown): unknown {
  const e = error as { code?: unknown; errcode?: unknown };
  if (e && e.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number') {
    const code = RESULT_CODES[e.errcode] ?? RESULT_CODES[e.errcode & 0xff];
    if (code) e.code = code;
  }
  return error;
}

/** The positional parameters, whether passed one by one or as one array. */
const positional = (parameters: unknown[]): unknown[] =>
  parameters.length === 1 && Array.isArray(parameters[0])
    ? (parameters[0] as unknown[])
    : parameters;

/** A row as better-sqlite3 gives it: node:sqlite's rows have a null prototype. */
const plain = (row: unknown): unknown =>
  row === undefined ? undefined : Object.assign({}, row as object);

class NodeSqliteStatement implements SqliteStatement {
  readonly reader: boolean;
  readonly #statement: NodeStatement;
  /** With `pluck`: the column whose value stands for the row. */
  readonly #column: string | undefined;

  constructor(statement: NodeStatement, pluck = false) {
    this.#statement = statement;
    const columns = statement.columns();
    this.reader = columns.length > 0;
    this.#column = pluck ? columns[0]?.name : undefined;
  }

  #value(row: unknown): unknown {
    const column = this.#column;
    if (column === undefined) return plain(row);
    return row === undefined ? undefined : (row as Record<string, unknown>)[column];
  }

  all(...parameters: unknown[]): unknown[] {
    try {
      return this.#statement.all(...positional(parameters)).map((row) => this.#value(row));
    } catch (error) {
      throw named(error);
    }
  }

  get(...parameters: unknown[]): unknown {
    try {
      return this.#value(this.#statement.get(...positional(parameters)));
    } catch (error) {
      throw named(error);
    }
  }

  run(...parameters: unknown[]): SqliteRunResult {
    try {
      return this.#statement.run(...positional(parameters));
    } catch (error) {
      throw named(error);
    }
  }

  *iterate(...parameters: unknown[]): IterableIterator<unknown> {
    try {
      for (const row of this.#statement.iterate(...positional(parameters))) yield this.#value(row);
    } catch (error) {
      throw named(error);
    }
  }

  pluck(): SqliteStatement {
    return new NodeSqliteStatement(this.#statement, true);
  }
}

function cantOpen(file: string): Error {
  return Object.assign(new Error(`unable to open database file: ${file}`), {
    code: 'SQLITE_CANTOPEN',
  });
}

function openNodeSqlite(sqlite: NodeSqlite, file: string, options: SqliteOpenOptions) {
  if (options.fileMustExist && !existsSync(file)) throw cantOpen(file);
  let db: NodeDatabase;
  try {
    db = new sqlite.DatabaseSync(file, { readOnly: options.readonly ?? false });
    db.exec(`PRAGMA busy_timeout = ${Math.trunc(options.timeout ?? 5000)}`);
    // better-sqlite3's build default (SQLITE_DEFAULT_CACHE_SIZE=-16000): a
    // 16 MB page cache per connection instead of SQLite's 2 MB.
    db.exec('PRAGMA cache_size = -16000');
  } catch (error) {
    throw named(error);
  }
  const connection: SqliteConnection = {
    driver: 'node:sqlite',
    prepare: (sql) => {
      try {
        return new NodeSqliteStatement(db.prepare(sql));
      } catch (error) {
        throw named(error);
      }
    },
    exec: (sql) => {
      try {
        db.exec(sql);
      } catch (error) {
        throw named(error);
      }
    },
    backup: async (target) => {
      try {
        await sqlite.backup(db, target, { rate: ALL_PAGES });
      } catch (error) {
        throw named(error);
      }
    },
    close: () => db.close(),
  };
  return connection;
}

// ---- better-sqlite3 (Node 20): its own statements, unchanged ----

const requireModule = createRequire(import.meta.url);

function openBetterSqlite3(file: string, options: SqliteOpenOptions): SqliteConnection {
  const Database = requireModule('better-sqlite3') as typeof BetterSqlite3;
  const db = new Database(file, {
    readonly: options.readonly ?? false,
    fileMustExist: options.fileMustExist ?? false,
    timeout: options.timeout ?? 5000,
  });
  return {
    driver: 'better-sqlite3',
    prepare: (sql) => db.prepare(sql) as unknown as SqliteStatement,
    exec: (sql) => void db.exec(sql),
    // The first step (0 pages) only starts the backup; the next copies every page at once.
    backup: async (target) => void (await db.backup(target, { progress: () => ALL_PAGES })),
    close: () => void db.close(),
  };
}

/** Opens a SQLite database file with this Node's driver (or the one named). */
export function openSqlite(
  file: string,
  options: SqliteOpenOptions = {},
  driver: SqliteDriverName = sqliteDriver(),
): SqliteConnection {
  if (driver === 'better-sqlite3') return openBetterSqlite3(file, options);
  const sqlite = builtin();
  if (!sqlite) throw new Error(`node:sqlite is not usable on Node ${process.version}`);
  return openNodeSqlite(sqlite, file, options);
}
