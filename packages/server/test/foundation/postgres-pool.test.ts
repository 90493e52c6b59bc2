import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.js';
import { openDatabase, targetFromConfig } from '../../src/db/database.js';
import { createTestDb, onlyOn, POSTGRES_URL, type TestDb } from '../support/db.js';
import { serviceMissing } from './server-process.js';

// PGlite has one connection and no pool; only a real server shows the bound.
describe('PostgreSQL connection pool', onlyOn('postgres'), () => {
  let testDb: TestDb | null = null;
  before(async () => {
    if (POSTGRES_URL) testDb = await createTestDb('postgres');
  });
  after(async () => testDb?.cleanup());

  it('DATABASE_POOL_SIZE bounds the connections one instance uses at once', async (t) => {
    if (!testDb?.databaseUrl)
      return serviceMissing(t, 'A real PostgreSQL server (COFFER_TEST_DATABASE_URL)');
    const config = loadConfig({ DATABASE_URL: testDb.databaseUrl, DATABASE_POOL_SIZE: '3' });
    const db = await openDatabase(targetFromConfig(config));
    try {
      const marker = `pool-test-${process.pid}`;
      const queries = Array.from({ length: 12 }, () =>
        sql`select pg_sleep(0.2), ${marker}::text as marker`.execute(db.kysely),
      );
      // While they run: how many of this database's backends are running one.
      let busiest = 0;
      for (let i = 0; i < 10; i++) {
        const { rows } = await sql<{ running: string }>`
          select count(*) as running from pg_stat_activity
          where datname = current_database() and state = 'active' and query like ${'%pg_sleep%'}
            and pid <> pg_backend_pid()
        `.execute(testDb.db.kysely);
        busiest = Math.max(busiest, Number(rows[0]!.running));
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
      await Promise.all(queries);
      assert.equal(busiest, 3, 'the pool runs three queries at a time, never more');
    } finally {
      await db.close();
    }
  });
});
