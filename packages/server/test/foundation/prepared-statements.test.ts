import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { createTestDb, onlyOn, POSTGRES_URL, type TestDb } from '../support/db.js';
import { serviceMissing } from './server-process.js';

// PGlite is a different driver; only the pool of a real server prepares statements.
describe('PostgreSQL prepared statements', onlyOn('postgres'), () => {
  let testDb: TestDb | null = null;
  before(async () => {
    if (POSTGRES_URL) testDb = await createTestDb('postgres');
  });
  after(async () => testDb?.cleanup());

  /** Runs `check` in one transaction (one connection) of a real PostgreSQL database. */
  async function onOneConnection(t: TestContext, check: (trx: Kysely<Database>) => Promise<void>) {
    if (!testDb) return serviceMissing(t, 'A real PostgreSQL server (COFFER_TEST_DATABASE_URL)');
    await testDb.db.kysely.transaction().execute(check);
  }

  it('repeated statements are prepared once per connection and still bind each call’s values', (t) =>
    onOneConnection(t, async (trx) => {
      for (const n of [1, 2, 3]) {
        const { rows } = await sql<{ n: number }>`select ${n}::int + 1 as n`.execute(trx);
        assert.deepEqual(rows, [{ n: n + 1 }]);
      }
      const { rows } = await sql<{ name: string; statement: string }>`
        select name, statement from pg_prepared_statements where statement like ${'%::int + 1 as n'}
      `.execute(trx);
      assert.equal(rows.length, 1, 'the statement is prepared once, not once per call');
      assert.match(rows[0]!.name, /^coffer_\d+$/);
    }));

  it('past the bound, new statements run unprepared and each connection keeps at most the bound', (t) =>
    onOneConnection(t, async (trx) => {
      for (let i = 0; i < 1_050; i++) {
        const { rows } = await sql<{
          n: number;
        }>`select ${i}::int as n, ${sql.lit(i)} as text_id`.execute(trx);
        assert.equal(rows[0]!.n, i);
      }
      const { rows } = await sql<{ count: string }>`
        select count(*) as count from pg_prepared_statements
      `.execute(trx);
      assert.ok(Number(rows[0]!.count) <= 1_000, `${rows[0]!.count} statements prepared`);
    }));
});
