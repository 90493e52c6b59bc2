import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { migrationProvider } from '../db/migrations/index.js';
import { openSqlite, type SqliteConnection } from '../db/sqlite-driver.js';

/** An operator's mistake or a refusal: printed as one line, exit code 1. */
export class OpsError extends Error {
  override name = 'OpsError';
}

/** `PRAGMA integrity_check`'s first line: `ok` for an intact database. */
const integrityCheck = (db: SqliteConnection): unknown =>
  db.prepare('PRAGMA integrity_check').pluck().get();

/** Writes the file's data to disk, and its directory entry (after a rename). */
function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A temporary name next to `file`, so the final rename stays on one file system. */
const temporaryFor = (file: string) =>
  join(dirname(file), `.${basename(file)}.${process.pid}.${Date.now()}.tmp`);

function removeQuietly(file: string): void {
  for (const path of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`])
    rmSync(path, { force: true });
}

/**
 * An online, consistent copy of a live SQLite database, through SQLite's
 * backup API: the whole database is copied in ONE step, i.e. inside one read
 * transaction, so the copy is exactly the database as it stood when that step
 * began (every commit before it, none after), while the server keeps reading
 * and writing (WAL readers and the writer do not block each other). A write
 * acknowledged before the backup started was committed before it, so it is in
 * the copy. The copy is written to a temporary file (mode 0600) beside `target`,
 * switched to a single-file journal, checked (`PRAGMA integrity_check`),
 * flushed to disk and renamed into place; a failure leaves no partial file.
 */
export async function backupSqlite(
  databaseFile: string,
  target: string,
): Promise<{ file: string; bytes: number }> {
  if (!existsSync(databaseFile)) throw new OpsError(`no database at ${databaseFile}`);
  const file = resolve(target);
  if (!existsSync(dirname(file))) throw new OpsError(`directory ${dirname(file)} does not exist`);
  const temporary = temporaryFor(file);
  // Created empty with mode 0600 first: SQLite then writes into it, keeping the mode.
  closeSync(openSync(temporary, 'wx', 0o600));
  try {
    const source = openSqlite(databaseFile, { fileMustExist: true });
    source.exec('PRAGMA busy_timeout = 5000');
    try {
      await source.backup(temporary);
    } finally {
      source.close();
    }
    const copy = openSqlite(temporary, { fileMustExist: true });
    try {
      copy.exec('PRAGMA journal_mode = DELETE');
      const check = integrityCheck(copy);
      if (check !== 'ok')
        throw new OpsError(`the copy failed its integrity check: ${String(check)}`);
    } finally {
      copy.close();
    }
    fsyncPath(temporary);
    renameSync(temporary, file);
    fsyncPath(dirname(file));
    return { file, bytes: statSync(file).size };
  } catch (err) {
    removeQuietly(temporary);
    throw err;
  }
}

/** What `checkBackupFile` found: the migrations the file has. */
export interface BackupInfo {
  migrations: string[];
}

/**
 * Refuses a file that is not an intact Coffer SQLite database: it must open as
 * SQLite, pass `PRAGMA integrity_check`, and have Coffer's migrations table
 * with only migrations this version knows (a backup of a newer Coffer would
 * not run here).
 */
export async function checkBackupFile(file: string): Promise<BackupInfo> {
  if (!existsSync(file)) throw new OpsError(`no such file: ${file}`);
  let db: SqliteConnection;
  try {
    db = openSqlite(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new OpsError(`${file} is not a SQLite database (${(err as Error).message})`);
  }
  try {
    let check: unknown;
    try {
      check = integrityCheck(db);
    } catch (err) {
      throw new OpsError(`${file} is not a SQLite database (${(err as Error).message})`);
    }
    if (check !== 'ok') throw new OpsError(`${file} failed its integrity check: ${String(check)}`);
    const table = db
      .prepare("select name from sqlite_master where type = 'table' and name = 'kysely_migration'")
      .get();
    if (!table) throw new OpsError(`${file} is not a Coffer database (no migrations table)`);
    const migrations = (
      db.prepare('select name from kysely_migration order by name').all() as { name: string }[]
    ).map((m) => m.name);
    if (migrations.length === 0)
      throw new OpsError(`${file} is not a Coffer database (no migrations)`);
    const known = new Set(Object.keys(await migrationProvider.getMigrations()));
    const unknown = migrations.find((name) => !known.has(name));
    if (unknown) {
      throw new OpsError(
        `${file} was made by a newer Coffer (migration ${unknown} is unknown to this version)`,
      );
    }
    return { migrations };
  } finally {
    db.close();
  }
}

/** Rows that make a database worth keeping: any user, project or audit event. */
function holdsData(db: SqliteConnection): boolean {
  const tables = new Set(
    (
      db.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]
    ).map((t) => t.name),
  );
  return ['users', 'projects', 'audit_events'].some(
    (table) =>
      tables.has(table) && db.prepare(`select 1 from ${table} limit 1`).get() !== undefined,
  );
}

/**
 * Restores a backup into a stopped instance's database file. Refuses when a
 * process holds the database (an exclusive lock cannot be taken: a running
 * server keeps it open), when the backup is not an intact Coffer database, and
 * when the database already holds data, unless `force`. The backup is copied
 * beside the database (mode 0600), flushed, and renamed over it; the old
 * database's WAL and shared-memory files are removed first, since they belong
 * to the old database and would otherwise be replayed onto the restored one.
 * The server migrates the restored database when it starts.
 */
export async function restoreSqlite(
  backupFile: string,
  databaseFile: string,
  options: { force: boolean },
): Promise<BackupInfo> {
  const source = resolve(backupFile);
  const info = await checkBackupFile(source);
  if (existsSync(databaseFile)) {
    const lock = openSqlite(databaseFile, { fileMustExist: true, timeout: 0 });
    try {
      lock.exec('PRAGMA locking_mode = EXCLUSIVE');
      lock.exec('begin exclusive');
    } catch (err) {
      lock.close();
      if ((err as { code?: string }).code?.startsWith('SQLITE_BUSY')) {
        throw new OpsError(
          `the database ${databaseFile} is in use (is a Coffer server running on it?); stop it first`,
        );
      }
      throw err;
    }
    const refuse = holdsData(lock) && !options.force;
    // Closed before the swap: as the last connection it checkpoints the old
    // database, whose files are about to be replaced.
    lock.exec('rollback');
    lock.close();
    if (refuse) {
      throw new OpsError(
        `the database ${databaseFile} is not empty; pass --force to replace it with the backup`,
      );
    }
  }
  const temporary = temporaryFor(databaseFile);
  try {
    closeSync(openSync(temporary, 'wx', 0o600));
    const from = openSqlite(source, { readonly: true, fileMustExist: true });
    try {
      await from.backup(temporary);
    } finally {
      from.close();
    }
    const copy = openSqlite(temporary, { fileMustExist: true });
    try {
      copy.exec('PRAGMA journal_mode = DELETE');
    } finally {
      copy.close();
    }
    fsyncPath(temporary);
    // The old database's WAL and shared memory must not outlive it.
    rmSync(`${databaseFile}-wal`, { force: true });
    rmSync(`${databaseFile}-shm`, { force: true });
    rmSync(`${databaseFile}-journal`, { force: true });
    renameSync(temporary, databaseFile);
    fsyncPath(dirname(databaseFile));
  } catch (err) {
    removeQuietly(temporary);
    throw err;
  }
  return info;
}
