import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { migrateToLatest, openDatabase, type Db, type DialectName } from '../../src/db/database.js';
import { PGliteDialect } from './pglite-dialect.js';

/**
 * The dialects every database test runs on: `DIALECTS=sqlite,postgres` by
 * default. PostgreSQL is the real server at `COFFER_TEST_DATABASE_URL` when set
 * (CI sets it), otherwise an in-process PGlite.
 */
export const DIALECTS: DialectName[] = (process.env.DIALECTS ?? 'sqlite,postgres')
  .split(',')
  .map((d) => d.trim())
  .filter((d): d is DialectName => d === 'sqlite' || d === 'postgres');

export const POSTGRES_URL = process.env.COFFER_TEST_DATABASE_URL || null;

/**
 * The options of a test (or suite) of one dialect only, such as a real server
 * process on SQLite or a PostgreSQL feature: skipped, saying why, when
 * `DIALECTS` leaves that dialect out. (CI splits the dialects between its
 * Node 20 and Node 24 passes, so that each test runs once.)
 */
export function onlyOn(dialect: DialectName): { skip?: string } {
  return DIALECTS.includes(dialect)
    ? {}
    : { skip: `${dialect} is not in this run's DIALECTS (${DIALECTS.join(',')})` };
}

/**
 * Migrated databases to copy instead of migrating each test database from empty
 * (made once per run by scripts/test.mjs, see template-db.ts): a SQLite file, a
 * PostgreSQL database on the server at `POSTGRES_URL`.
 */
const SQLITE_TEMPLATE = process.env.COFFER_TEST_SQLITE_TEMPLATE || null;
const POSTGRES_TEMPLATE = process.env.COFFER_TEST_POSTGRES_TEMPLATE || null;

export interface TestDb {
  db: Db;
  dialect: DialectName;
  /** A directory of its own, for the SQLite file, TLS material and the outbox. */
  dataDir: string;
  /** A PostgreSQL URL of this test's own database (real server only), for child processes. */
  databaseUrl: string | null;
  cleanup(): Promise<void>;
}

/** A fresh, migrated database of its own: a new SQLite file, or a new PostgreSQL database. */
export async function createTestDb(dialect: DialectName): Promise<TestDb> {
  const dataDir = mkdtempSync(join(tmpdir(), `coffer-test-${dialect}-`));
  const removeDir = () => rmSync(dataDir, { recursive: true, force: true });
  if (dialect === 'sqlite') {
    const file = join(dataDir, 'coffer.db');
    if (SQLITE_TEMPLATE) copyFileSync(SQLITE_TEMPLATE, file);
    const db = await openDatabase({ kind: 'sqlite', file });
    // On a copy of the template this finds nothing left to do.
    await migrateToLatest(db);
    return {
      db,
      dialect,
      dataDir,
      databaseUrl: null,
      cleanup: async () => (await closeQuietly(db), removeDir()),
    };
  }
  if (POSTGRES_URL) {
    const name = `coffer_test_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await createDatabase(admin, name);
    await admin.end();
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${name}`;
    const db = await openDatabase({ kind: 'postgres', url: url.toString(), maxConnections: 10 });
    await migrateToLatest(db);
    return {
      db,
      dialect,
      dataDir,
      databaseUrl: url.toString(),
      cleanup: async () => {
        await closeQuietly(db);
        const drop = new pg.Client({ connectionString: POSTGRES_URL });
        await drop.connect();
        await drop.query(`drop database if exists ${name} with (force)`);
        await drop.end();
        removeDir();
      },
    };
  }
  const pglite = new PGlite();
  const db = await openDatabase({
    kind: 'postgres-dialect',
    dialect: new PGliteDialect(pglite),
    close: () => pglite.close(),
  });
  await migrateToLatest(db);
  return {
    db,
    dialect,
    dataDir,
    databaseUrl: null,
    cleanup: async () => (await closeQuietly(db), removeDir()),
  };
}

/**
 * A new database: a copy of the run's migrated template when there is one. Two
 * copies of one template started at the same moment can collide on the template
 * (`55006`, source database is being accessed): then again.
 */
async function createDatabase(admin: pg.Client, name: string): Promise<void> {
  if (!POSTGRES_TEMPLATE) {
    await admin.query(`create database ${name}`);
    return;
  }
  for (let attempt = 0; ; attempt++) {
    try {
      await admin.query(`create database ${name} template ${POSTGRES_TEMPLATE}`);
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== '55006' || attempt >= 50) throw err;
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 80));
    }
  }
}

/** Tests may close (or break) the database on purpose; cleanup must still succeed. */
async function closeQuietly(db: Db): Promise<void> {
  await db.close().catch(() => undefined);
}
