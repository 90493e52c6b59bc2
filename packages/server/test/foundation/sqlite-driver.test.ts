import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { migrateToLatest, openDatabase, type Db } from '../../src/db/database.js';
import { preparedQuery } from '../../src/db/prepared-query.js';
import { openSqlite, sqliteDriver } from '../../src/db/sqlite-driver.js';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { backupSqlite, checkBackupFile, restoreSqlite } from '../../src/ops/backup.js';

const NOW = '2026-11-24T12:00:00.000Z';

const settingValue = preparedQuery((db, name: string) =>
  db.selectFrom('server_settings').select(['name', 'value']).where('name', '=', name),
);

const settingsIn = (db: Db) =>
  db.kysely.selectFrom('server_settings').select(['name', 'value']).orderBy('name').execute();

/** The settings after the transactions below. */
const BOTH_SETTINGS = [
  { name: 'colour', value: 'blue' },
  { name: 'shape', value: 'square' },
];

const pragma = async (db: Db, name: string): Promise<unknown> => {
  const { rows } = await sql<Record<string, unknown>>`${sql.raw(`PRAGMA ${name}`)}`.execute(
    db.kysely,
  );
  return Object.values(rows[0] ?? {})[0];
};

/** Each test is reported as skipped, with this reason, where node:sqlite is not the driver. */
const skip =
  sqliteDriver() === 'node:sqlite'
    ? false
    : `Node ${process.version} has no node:sqlite with what Coffer needs (StatementSync#columns, backup): SQLite runs on better-sqlite3 here`;

// On Node 24 (and any Node whose node:sqlite has what Coffer needs) the server
// runs SQLite on Node's built-in driver; the rest of the suite then goes through
// it too, and this file pins down what the better-sqlite3 path always did.
describe('SQLite on node:sqlite', () => {
  let dir: string;
  let file: string;
  let db: Db;
  before(async () => {
    if (skip) return;
    dir = mkdtempSync(join(tmpdir(), 'coffer-node-sqlite-'));
    file = join(dir, 'coffer.db');
    db = await openDatabase({ kind: 'sqlite', file });
    await migrateToLatest(db);
  });
  after(async () => {
    await db?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('opens the server database with its pragmas', { skip }, async () => {
    assert.equal(sqliteDriver(), 'node:sqlite');
    assert.equal(await pragma(db, 'journal_mode'), 'wal');
    assert.equal(await pragma(db, 'synchronous'), 2); // FULL
    assert.equal(await pragma(db, 'foreign_keys'), 1);
    assert.equal(await pragma(db, 'busy_timeout'), 5000);
    assert.equal(await pragma(db, 'cache_size'), -16000);
    await db.ping();
  });

  it(
    'writes and reads rows as better-sqlite3 did: plain objects, numbers, counts',
    { skip },
    async () => {
      const inserted = await db.kysely
        .insertInto('server_settings')
        .values({ name: 'colour', value: 'red', created_at: NOW })
        .executeTakeFirst();
      assert.equal(typeof inserted.insertId, 'bigint');
      const updated = await db.kysely
        .updateTable('server_settings')
        .set({ value: 'green' })
        .where('name', '=', 'colour')
        .executeTakeFirst();
      assert.equal(updated.numUpdatedRows, 1n);

      const rows = await db.kysely.selectFrom('server_settings').selectAll().execute();
      assert.deepEqual(rows, [{ name: 'colour', value: 'green', created_at: NOW }]);
      assert.equal(Object.getPrototypeOf(rows[0]), Object.prototype);
      const count = await db.kysely
        .selectFrom('server_settings')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(count.n, 1);

      // The hot-path reader (the second, read-only connection) sees the commit.
      assert.deepEqual(await settingValue(db.kysely, 'colour'), [
        { name: 'colour', value: 'green' },
      ]);
    },
  );

  it('reports constraint violations with better-sqlite3 codes', { skip }, async () => {
    await assert.rejects(
      db.kysely
        .insertInto('server_settings')
        .values({ name: 'colour', value: 'blue', created_at: NOW })
        .execute(),
      (error: { code?: string; message?: string }) =>
        error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' &&
        /UNIQUE constraint failed/.test(error.message ?? ''),
    );
    // Foreign keys are enforced.
    await sql`create table parents (id text primary key)`.execute(db.kysely);
    await sql`create table children (parent text references parents (id))`.execute(db.kysely);
    await assert.rejects(
      sql`insert into children (parent) values ('none')`.execute(db.kysely),
      (error: { code?: string }) => error.code === 'SQLITE_CONSTRAINT_FOREIGNKEY',
    );
    await sql`drop table children`.execute(db.kysely);
    await sql`drop table parents`.execute(db.kysely);
  });

  it('commits a transaction whole and rolls a failed one back whole', { skip }, async () => {
    await db.kysely.transaction().execute(async (trx) => {
      await trx
        .insertInto('server_settings')
        .values({ name: 'shape', value: 'square', created_at: NOW })
        .execute();
      await trx
        .updateTable('server_settings')
        .set({ value: 'blue' })
        .where('name', '=', 'colour')
        .execute();
    });
    await assert.rejects(
      db.kysely.transaction().execute(async (trx) => {
        await trx.deleteFrom('server_settings').execute();
        throw new Error('changed my mind');
      }),
      /changed my mind/,
    );
    assert.deepEqual(await settingsIn(db), BOTH_SETTINGS);
    assert.deepEqual(await settingValue(db.kysely, 'shape'), [{ name: 'shape', value: 'square' }]);
  });

  it('backs up the live database, checks the copy and restores it', { skip }, async () => {
    const copy = join(dir, 'backup.db');
    const { file: written, bytes } = await backupSqlite(file, copy);
    assert.equal(written, copy);
    assert.ok(bytes > 0);
    const info = await checkBackupFile(copy);
    assert.deepEqual(info.migrations, Object.keys(await migrationProvider.getMigrations()).sort());
    const check = openSqlite(copy, { readonly: true });
    try {
      assert.equal(check.prepare('PRAGMA integrity_check').pluck().get(), 'ok');
      assert.equal(check.prepare('PRAGMA journal_mode').pluck().get(), 'delete');
    } finally {
      check.close();
    }

    // The server holds its database: a restore over it is refused.
    await assert.rejects(restoreSqlite(copy, file, { force: true }), /is in use/);

    const restoredFile = join(dir, 'restored.db');
    await restoreSqlite(copy, restoredFile, { force: false });
    const restored = await openDatabase({ kind: 'sqlite', file: restoredFile });
    try {
      assert.deepEqual(await settingsIn(restored), BOTH_SETTINGS);
    } finally {
      await restored.close();
    }
    await assert.rejects(checkBackupFile(join(dir, 'missing.db')), /no such file/);
  });

  it('never loads better-sqlite3', { skip }, () => {
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) =>
      path.includes(`${join('node_modules', 'better-sqlite3')}`),
    );
    assert.deepEqual(loaded, []);
  });
});
