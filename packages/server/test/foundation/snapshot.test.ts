import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { inSnapshot } from '../../src/db/database.js';
import { createTestDb, onlyOn, POSTGRES_URL, type TestDb } from '../support/db.js';

/**
 * Reads that answer together (a page of webhook deliveries and their attempts)
 * run in one snapshot: on PostgreSQL's default read-committed isolation, each
 * statement sees every commit before it, so a commit between two reads showed
 * an attempt whose delivery still read as pending.
 */
describe(
  'inSnapshot: reads in one snapshot (PostgreSQL)',
  POSTGRES_URL ? onlyOn('postgres') : { skip: 'no PostgreSQL server (COFFER_TEST_DATABASE_URL)' },
  () => {
    let testDb: TestDb;
    const count = async (db: TestDb['db']['kysely']) =>
      Number(
        (await sql<{ n: string }>`select count(*) as n from snapshot_probe`.execute(db)).rows[0]!.n,
      );
    const insert = () => sql`insert into snapshot_probe values (1)`.execute(testDb.db.kysely);

    before(async () => {
      testDb = await createTestDb('postgres');
      await sql`create table snapshot_probe (n integer)`.execute(testDb.db.kysely);
    });
    after(async () => testDb.cleanup());

    it('a commit between two reads is seen by neither', async () => {
      const seen = await inSnapshot(testDb.db.kysely, testDb.db.dialect, async (trx) => {
        const first = await count(trx);
        await insert(); // another connection of the pool, committed at once
        return [first, await count(trx)];
      });
      assert.deepEqual(seen, [0, 0]);
      assert.equal(await count(testDb.db.kysely), 1, 'the insert committed');
    });

    it('without it, the second read sees the commit (what the snapshot prevents)', async () => {
      const seen = await testDb.db.kysely.transaction().execute(async (trx) => {
        const first = await count(trx);
        await insert();
        return [first, await count(trx)];
      });
      assert.deepEqual(seen, [1, 2]);
    });
  },
);
