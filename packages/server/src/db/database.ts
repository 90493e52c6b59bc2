import { closeSync, mkdirSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import {
  Kysely,
  Migrator,
  PostgresDialect,
  SqliteDialect,
  sql,
  type Dialect,
  type KyselyConfig,
  type LogEvent,
  type PostgresPool,
  type PostgresPoolClient,
  type SqliteDatabase,
  type Transaction,
  type TransactionBuilder,
} from 'kysely';
import type pg from 'pg';
import type { Database } from './schema.js';
import { migrationProvider } from './migrations/index.js';
import { idLiteral, isId } from '../ids.js';
import { DEFAULT_DATABASE_POOL_SIZE } from '../config.js';
import { openSqlite, type SqliteConnection, type SqliteStatement } from './sqlite-driver.js';
import { claimedTransaction, type WriteClaim } from './write-claims.js';

export type DialectName = 'sqlite' | 'postgres';

export interface Db {
  readonly kysely: Kysely<Database>;
  readonly dialect: DialectName;
  /** Checks the database answers (used by `/readyz`). */
  ping(): Promise<void>;
  /** PostgreSQL: the pool's connections (for the metrics). */
  poolCounts?(): { total: number; idle: number; waiting: number };
  /** Statements sent to the database since it was opened (for the metrics). */
  readonly statements: StatementCounts;
  /**
   * SQLite: `PRAGMA data_version` of the writing connection, which changes
   * whenever another connection (another process) commits, never for this
   * connection's own commits. What `LocalChangeTokens` checks once per turn
   * of the event loop with reads in it; the pragma itself runs only when the
   * WAL-index header shows a commit since the last check (`walIndexHeader`).
   */
  foreignCommits?(): number;
  close(): Promise<void>;
}

/**
 * Statements run on the database: reads (`select`) and everything else
 * (writes, `begin`, `commit`, locks). On SQLite a read answered from the
 * reader's results (`cachedReads`) is not a statement; the `PRAGMA
 * data_version` checks are not counted either (they read a counter in memory).
 */
export interface StatementCounts {
  select: number;
  other: number;
}

/** Kysely's `log`, counting every statement it executes. */
function countingStatements(counts: StatementCounts): (event: LogEvent) => void {
  return (event) => {
    const text = event.query.sql;
    let i = 0;
    while (text.charCodeAt(i) <= 32) i++;
    if (text.slice(i, i + 6).toLowerCase() === 'select') counts.select++;
    else counts.other++;
  };
}

type DatabaseTarget =
  | { kind: 'sqlite'; file: string }
  | { kind: 'postgres'; url: string; maxConnections?: number }
  /** Any Kysely PostgreSQL-compatible dialect (the test suite uses an in-process PGlite). */
  | { kind: 'postgres-dialect'; dialect: Dialect; close?: () => Promise<void> };

/** The embedded default: a SQLite file in the data directory, unless `DATABASE_URL` is set. */
export function targetFromConfig(config: {
  dataDir: string;
  databaseUrl: string | null;
  databasePoolSize: number;
}): DatabaseTarget {
  if (config.databaseUrl)
    return { kind: 'postgres', url: config.databaseUrl, maxConnections: config.databasePoolSize };
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  return { kind: 'sqlite', file: join(config.dataDir, 'coffer.db') };
}

export async function openDatabase(target: DatabaseTarget): Promise<Db> {
  // Each driver is loaded only for the database it serves: an operator on the
  // embedded default never pays pg's memory, nor a PostgreSQL one SQLite's.
  if (target.kind === 'sqlite') {
    const sqlite = openSqlite(target.file);
    // WAL for concurrent readers; FULL so an acknowledged write survives power loss
    // and kill -9; a busy timeout so a second process waits instead of failing.
    sqlite.exec('PRAGMA journal_mode = WAL');
    sqlite.exec('PRAGMA synchronous = FULL');
    sqlite.exec('PRAGMA foreign_keys = ON');
    sqlite.exec('PRAGMA busy_timeout = 5000');
    const reader = openSqlite(target.file, { readonly: true });
    reader.exec('PRAGMA busy_timeout = 5000');
    const statements: StatementCounts = { select: 0, other: 0 };
    const kysely = new SqliteKysely(
      {
        dialect: new SqliteDialect({ database: withStatementCache(sqlite) }),
        log: countingStatements(statements),
      },
      cachedReads(reader, statements),
    );
    const dataVersion = sqlite.prepare('PRAGMA data_version').pluck();
    let version = Number(dataVersion.get()); // in WAL mode by now, with its -shm file
    const walIndex = walIndexHeader(target.file);
    return {
      kysely,
      dialect: 'sqlite',
      statements,
      // The pragma takes and drops a WAL read lock; the header tells, for less,
      // that nobody has committed since it was last read.
      foreignCommits: () => {
        if (walIndex.changed()) version = Number(dataVersion.get());
        return version;
      },
      ping: async () => {
        sqlite.prepare('select 1').get();
      },
      // The reader first: the last connection to close checkpoints and removes the WAL.
      close: async () => {
        walIndex.close();
        reader.close();
        await kysely.destroy();
      },
    };
  }
  if (target.kind === 'postgres') {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({
      connectionString: target.url,
      max: target.maxConnections ?? DEFAULT_DATABASE_POOL_SIZE,
      // Waiting for a free connection (every one busy, or PostgreSQL not
      // answering) fails the request after this long instead of holding it,
      // and everything queued behind it, forever.
      connectionTimeoutMillis: POOL_WAIT_MS,
    });
    // An idle pooled connection that the server ends (restart, failover, admin
    // termination) is emitted here; unhandled it would crash the process. The
    // pool drops that connection and opens a new one for the next query, and a
    // query that fails meanwhile surfaces as that request's 500.
    pool.on('error', () => undefined);
    const statements: StatementCounts = { select: 0, other: 0 };
    const kysely = new ClaimingKysely({
      dialect: new PostgresDialect({ pool: preparingStatements(pool) }),
      log: countingStatements(statements),
    });
    return {
      ...postgresDb(kysely, statements),
      poolCounts: () => ({
        total: pool.totalCount,
        idle: pool.idleCount,
        waiting: pool.waitingCount,
      }),
    };
  }
  const statements: StatementCounts = { select: 0, other: 0 };
  const kysely = new ClaimingKysely({
    dialect: target.dialect,
    log: countingStatements(statements),
  });
  const db = postgresDb(kysely, statements);
  return {
    ...db,
    close: async () => {
      await kysely.destroy();
      await target.close?.();
    },
  };
}

/** Bytes of the WAL-index header's first copy at the start of the `-shm` file. */
const WAL_INDEX_HEADER_BYTES = 48;

/**
 * Whether any connection, of any process, may have committed to the SQLite
 * database in `file` since the last call. In WAL mode every commit rewrites
 * the WAL-index header at the start of the `-shm` file (its change counter
 * and frame count, and salts when the WAL restarts), which every connection
 * to the database maps in shared memory; reading those 48 bytes with one
 * `pread` costs far less than a pragma that takes a WAL read lock. Unchanged
 * bytes mean no commit finished since they were last read; changed ones (or a
 * torn read while a commit writes them) mean "maybe": ask SQLite. The file
 * stays while this process has the database open (SQLite removes it only when
 * the last connection closes), and when it cannot be read the answer is
 * always "maybe".
 */
function walIndexHeader(file: string): { changed(): boolean; close(): void } {
  let fd: number | null = null;
  try {
    fd = openSync(`${file}-shm`, 'r');
  } catch {
    // No shared memory file (not WAL): ask SQLite every time.
  }
  let seen = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  let now = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  let known = false;
  return {
    changed() {
      if (fd === null) return true;
      let read = 0;
      try {
        read = readSync(fd, now, 0, WAL_INDEX_HEADER_BYTES, 0);
      } catch {
        return true;
      }
      if (read === WAL_INDEX_HEADER_BYTES && known && now.equals(seen)) return false;
      [seen, now] = [now, seen];
      known = read === WAL_INDEX_HEADER_BYTES;
      return true;
    },
    close() {
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}

/** A prepared statement per distinct SQL text, bounded (oldest out first). */
function statementCache(sqlite: SqliteConnection, max = 1000): (sql: string) => SqliteStatement {
  const statements = new Map<string, SqliteStatement>();
  return (sql) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = sqlite.prepare(sql);
      if (statements.size >= max) statements.delete(statements.keys().next().value!);
      statements.set(sql, statement);
    }
    return statement;
  };
}

/**
 * Prepares each distinct SQL text once. With either SQLite driver, preparing costs
 * more than running a small indexed query, and requests repeat the same few
 * statements. Kysely runs a statement to completion (`all`/`run`) before the
 * next query on the connection, so a cached statement is never busy when it is
 * reused (streaming queries would be).
 */
function withStatementCache(sqlite: SqliteConnection): SqliteDatabase {
  const prepare = statementCache(sqlite);
  return { close: () => sqlite.close(), prepare };
}

/**
 * A SQLite database's Kysely handle with its second, read-only connection.
 * Kysely's SQLite driver queues every query behind the one connection (a
 * transaction holds it across awaits), and its per-query machinery costs more
 * than the indexed lookup itself. The hottest reads (`preparedQuery`) run
 * here instead, synchronously: in WAL mode a read sees exactly what was
 * committed when it started — never a transaction still open on the writing
 * connection — and every write is committed before it is acknowledged.
 */
/**
 * The database's Kysely handle: its `transaction()` runs each write
 * transaction under the current request's idempotency claim
 * (`claimedTransaction`, db/write-claims.ts), so no service has to.
 */
class ClaimingKysely extends Kysely<Database> {
  override transaction(): TransactionBuilder<Database> {
    return claiming(super.transaction());
  }
}

/** A transaction builder whose `execute` is claimed; its other methods return claimed builders too. */
function claiming(builder: TransactionBuilder<Database>): TransactionBuilder<Database> {
  return new Proxy(builder, {
    get(target, property, receiver) {
      if (property === 'execute') {
        return <T>(callback: (trx: Transaction<Database>) => Promise<T>) =>
          claimedTransaction<T>(
            (work) => target.execute((trx) => work(trx)),
            (trx) => callback(trx as Transaction<Database>),
          );
      }
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result && typeof result === 'object' && 'execute' in result
          ? claiming(result as TransactionBuilder<Database>)
          : result;
      };
    },
  });
}

class SqliteKysely extends ClaimingKysely {
  constructor(
    config: KyselyConfig,
    readonly reader: SqliteReader,
  ) {
    super(config);
  }
}

/** Runs a read-only statement on a SQLite database's reader (see `cachedReads`). */
type SqliteReader = (sql: string, values: readonly unknown[]) => readonly unknown[];

/**
 * The reader of `db` when it is a SQLite database's own handle: not a
 * transaction, nor a handle derived from it (`withPlugin`…), which Kysely
 * builds as plain instances.
 */
export function sqliteReader(db: Kysely<Database>): SqliteReader | undefined {
  return db instanceof SqliteKysely ? db.reader : undefined;
}

/**
 * What the reader keeps at most: results, and characters in their text
 * columns (a secret value is up to ~87,000). Past either, all are dropped at once.
 */
const MAX_CACHED_READS = 2_000;
const MAX_CACHED_READ_CHARS = 4_000_000;

/** Characters in a result's text columns: what its strings weigh, roughly. */
function charsIn(rows: readonly object[]): number {
  let chars = 0;
  for (const row of rows) {
    for (const value of Object.values(row)) if (typeof value === 'string') chars += value.length;
  }
  return chars;
}

/**
 * Reads on the read-only connection, each result kept until the database
 * changes: `PRAGMA data_version` on this connection changes whenever any
 * other connection commits, this process's writer or another process sharing
 * the file, and never otherwise. It is read before the query, so a commit
 * landing in between makes the result newer than its version (one extra miss
 * later), never older. The same statement with the same values on an
 * unchanged database returns the same rows, so a hit is exactly what the
 * query would return now, at the cost of that one pragma instead of the
 * query's index searches. Rows are frozen: callers share them.
 */
function cachedReads(reader: SqliteConnection, counts: StatementCounts): SqliteReader {
  const statement = statementCache(reader);
  const version = reader.prepare('PRAGMA data_version').pluck();
  let seen: unknown = null;
  let size = 0;
  let chars = 0;
  const results = new Map<string, Map<string, readonly unknown[]>>();
  return (sql, values) => {
    const now = version.get();
    if (now !== seen || size >= MAX_CACHED_READS || chars >= MAX_CACHED_READ_CHARS) {
      results.clear();
      size = 0;
      chars = 0;
      seen = now;
    }
    let bySql = results.get(sql);
    if (!bySql) results.set(sql, (bySql = new Map()));
    const key = JSON.stringify(values);
    let rows = bySql.get(key);
    if (!rows) {
      counts.select++;
      const read = statement(sql).all(values) as object[];
      rows = Object.freeze(read.map((r) => Object.freeze(r)));
      bySql.set(key, rows);
      size++;
      chars += charsIn(read);
    }
    return rows;
  };
}

/** How long a request waits for a free PostgreSQL connection before it fails (a 500, logged). */
export const POOL_WAIT_MS = 10_000;

/** Distinct SQL texts a pool prepares; beyond them (or for longer texts) statements are parsed each time. */
const MAX_PREPARED_TEXTS = 1000;
const MAX_PREPARED_LENGTH = 8000;

/**
 * The pool as Kysely sees it, with every parameterised statement sent as a
 * named prepared statement: PostgreSQL parses and plans each distinct SQL text
 * once per connection instead of on every execution (a request repeats the
 * same few). Texts are named in order of first use, up to
 * `MAX_PREPARED_TEXTS` short ones per pool, so the statements each server
 * connection keeps stay bounded; multi-row inserts of varying size and
 * anything past the bound run unnamed as before.
 */
function preparingStatements(pool: pg.Pool): PostgresPool {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (
      name === undefined &&
      names.size < MAX_PREPARED_TEXTS &&
      text.length <= MAX_PREPARED_LENGTH
    ) {
      name = `coffer_${names.size}`;
      names.set(text, name);
    }
    return name;
  };
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let wrapper = wrappers.get(client);
    if (!wrapper) {
      wrapper = {
        // Kysely calls query(sql, parameters); it passes a cursor only for streaming, which Coffer never does.
        query: ((text: string, values?: unknown[]) => {
          const name = values?.length ? nameOf(text) : undefined;
          return name ? client.query({ name, text, values }) : client.query(text, values);
        }) as unknown as PostgresPoolClient['query'],
        release: () => client.release(),
      };
      wrappers.set(client, wrapper);
    }
    return wrapper;
  };
  return {
    connect: async () => wrap(await pool.connect()),
    end: () => pool.end(),
  };
}

function postgresDb(kysely: Kysely<Database>, statements: StatementCounts): Db {
  return {
    kysely,
    dialect: 'postgres',
    statements,
    ping: async () => {
      await sql`select 1`.execute(kysely);
    },
    close: () => kysely.destroy(),
  };
}

/** The names of the migrations applied to the database (none before the first). */
export async function appliedMigrations(db: Db): Promise<string[]> {
  const rows = await db.kysely
    .selectFrom('kysely_migration' as never)
    .select('name' as never)
    .execute()
    .catch(() => []);
  return (rows as { name: string }[]).map((m) => m.name);
}

export async function migrateToLatest(db: Db): Promise<void> {
  const migrator = new Migrator({ db: db.kysely, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const cause = error instanceof Error ? error.message : String(error ?? '');
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${cause}`);
  }
}

/**
 * The project's lock on PostgreSQL: an advisory transaction lock on the
 * project id's hash (another project sharing the hash only waits a little
 * longer). Shared by secret writers, exclusive for everything that must not
 * interleave with them. Advisory locks queue fairly — a shared request waits
 * behind an exclusive one already waiting — so a stream of writes can never
 * starve a re-key, as shared row locks could.
 */
export const PROJECT_LOCK_SPACE = 0x434f4646; // "COFF"

/**
 * The statement that takes a project's lock, shared or exclusive: the one
 * place its key is spelled, so writers and what excludes them always meet on
 * the same lock. The project id is written into the SQL (the shared lock
 * travels in a parameterless simple query, see `inSharedProjectTransaction`),
 * so only a well-formed id (`proj_` and 20 base62 characters) is accepted.
 */
function projectLockStatement(projectId: string, mode: 'shared' | 'exclusive'): string {
  const lock = mode === 'shared' ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
  return `select ${lock}(${PROJECT_LOCK_SPACE}, hashtext(${idLiteral('project', projectId)}))`;
}

/**
 * Serialises writers of one project inside a transaction: waits for the
 * project's secret writers to finish and keeps new ones out until commit.
 * PostgreSQL takes the project's lock exclusively (and a row lock on the
 * project); SQLite already runs one write transaction at a time.
 * Rules that read-then-write (last admin, vault epoch) call this first.
 */
export async function lockProject(
  trx: Kysely<Database>,
  dialect: DialectName,
  projectId: string,
): Promise<boolean> {
  if (!isId('project', projectId)) return false; // no such project can exist
  let query = trx.selectFrom('projects').select('id').where('id', '=', projectId);
  if (dialect === 'postgres') {
    await sql.raw(projectLockStatement(projectId, 'exclusive')).execute(trx);
    query = query.forUpdate();
  }
  return (await query.executeTakeFirst()) !== undefined;
}

/**
 * Runs `work` in one consistent snapshot: a repeatable-read transaction on
 * PostgreSQL, a read transaction on SQLite. Reads that answer together (a page
 * and what belongs to its rows) use it, so a commit between two of their
 * statements cannot show half of a change.
 */
export function inSnapshot<T>(
  db: Kysely<Database>,
  dialect: DialectName,
  work: (trx: Kysely<Database>) => Promise<T>,
): Promise<T> {
  let transaction = db.transaction();
  if (dialect === 'postgres') transaction = transaction.setIsolationLevel('repeatable read');
  return transaction.execute(work);
}

/**
 * Runs `work` in a PostgreSQL transaction that holds the project's lock SHARED
 * until it ends: secret writers of one project run side by side, while
 * anything that takes `lockProject` (re-key, a role change, deleting an
 * environment) waits for them and they for it. Read what the lock protects
 * (the key epoch, the caller's membership) in a statement of `work`, whose
 * snapshot is taken after the wait. (SQLite runs one write transaction at a
 * time anyway.)
 *
 * The transaction's start and the lock share ONE round trip: a simple-protocol
 * `begin; select pg_advisory_xact_lock_shared(…)`, which takes no parameters
 * (so a malformed project id is refused before anything is sent; see
 * `projectLockStatement`).
 *
 * `lastStatement`, given `work`'s result, is a parameterless statement sent in
 * ONE round trip with the commit. For a lock other transactions queue on (a
 * hot row): taken there, it is held only while PostgreSQL commits, not also
 * while the answer to the statement that took it crosses to this process and
 * waits for a busy event loop to send the commit. Any value written into it
 * must be validated by the caller, as the project id is here. A request's
 * idempotency key (db/write-claims.ts) travels in the same round trip: `claim`,
 * or the claim of the request being handled when none is given.
 */
export async function inSharedProjectTransaction<T>(
  kysely: Kysely<Database>,
  projectId: string,
  work: (trx: Kysely<Database>) => Promise<T>,
  lastStatement?: (result: T) => string,
  claim?: WriteClaim,
): Promise<T> {
  const begin = `begin; ${projectLockStatement(projectId, 'shared')}`;
  return claimedTransaction(transact, work, claim, { recordWithCommit: true });
  function transact(claimed: typeof work, recordedBy?: WriteClaim) {
    return kysely.connection().execute(async (conn) => {
      try {
        await sql.raw(begin).execute(conn);
        const result = await claimed(conn);
        // The idempotency key first: a key another request committed fails it
        // before the environment's row is locked.
        const commit = [recordedBy?.recordStatement(result), lastStatement?.(result), 'commit']
          .filter(Boolean)
          .join('; ');
        await sql.raw(commit).execute(conn);
        return result;
      } catch (error) {
        // Also after a failed commit, which has already ended the transaction.
        await sql`rollback`.execute(conn).catch(() => undefined);
        throw error;
      }
    });
  }
}

/** `count(*)` is a bigint (a string through `pg`) on PostgreSQL and a number on SQLite. */
export const toCount = (value: string | number | bigint | null | undefined): number =>
  Number(value ?? 0);
