/**
 * Migrated databases made once per test run and copied for every test database
 * (`createTestDb`): a SQLite file, and a PostgreSQL database when
 * `COFFER_TEST_DATABASE_URL` names a real server (copied with `CREATE DATABASE …
 * TEMPLATE`). scripts/test.mjs runs `template-db.ts create` before the test files
 * (it prints the variables that point the harness at them) and `template-db.ts
 * drop` after. Without them each test database is migrated from empty, as before.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';

export const SQLITE_TEMPLATE = 'COFFER_TEST_SQLITE_TEMPLATE';
export const POSTGRES_TEMPLATE = 'COFFER_TEST_POSTGRES_TEMPLATE';

async function admin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function create(): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  const dir = mkdtempSync(join(tmpdir(), 'coffer-test-template-'));
  const file = join(dir, 'coffer.db');
  const sqlite = await openDatabase({ kind: 'sqlite', file });
  await migrateToLatest(sqlite);
  // Closing the last connection checkpoints the WAL into the file: one file to copy.
  await sqlite.close();
  env[SQLITE_TEMPLATE] = file;

  const base = process.env.COFFER_TEST_DATABASE_URL;
  // A run on SQLite only (`DIALECTS=sqlite`) makes no PostgreSQL database.
  if (base && (process.env.DIALECTS ?? 'postgres').includes('postgres')) {
    // The name carries its creation time: a run killed before its drop leaves its
    // database behind, and the next run drops those older than a day.
    const name = `coffer_template_${Math.floor(Date.now() / 1000)}_${randomBytes(6).toString('hex')}`;
    await admin(base, async (c) => {
      const { rows } = await c.query<{ datname: string }>(
        "select datname from pg_database where datname like 'coffer_template_%'",
      );
      const dayAgo = Date.now() / 1000 - 86_400;
      for (const { datname } of rows) {
        const made = /^coffer_template_(\d+)_[0-9a-f]+$/.exec(datname);
        if (made && Number(made[1]) < dayAgo)
          await c.query(`drop database if exists ${datname} with (force)`);
      }
      await c.query(`create database ${name}`);
    });
    const url = new URL(base);
    url.pathname = `/${name}`;
    const db = await openDatabase({ kind: 'postgres', url: url.toString(), maxConnections: 1 });
    await migrateToLatest(db);
    await db.close();
    env[POSTGRES_TEMPLATE] = name;
  }
  return env;
}

async function drop(): Promise<void> {
  const file = process.env[SQLITE_TEMPLATE];
  if (file) rmSync(join(file, '..'), { recursive: true, force: true });
  const name = process.env[POSTGRES_TEMPLATE];
  const base = process.env.COFFER_TEST_DATABASE_URL;
  if (name && base && /^coffer_template_\d+_[0-9a-f]+$/.test(name))
    await admin(base, (c) => c.query(`drop database if exists ${name} with (force)`));
}

const command = process.argv[2];
if (command === 'create') process.stdout.write(JSON.stringify({ env: await create() }) + '\n');
else if (command === 'drop') await drop();
