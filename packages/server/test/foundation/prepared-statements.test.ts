import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { createTestDb, POSTGRES_URL } from '../support/db.js';
import { serviceMissing } from './server-process.js';

describe('PostgreSQL prepared statements', () => {
  it('repeated statements are prepared once per connection and still bind each call’s values', async (t) => {
    if (!POSTGRES_URL) {
      // PGlite is a different driver; only the pool of a real server prepares statements.
      serviceMissing('A real PostgreSQL server (COFFER_TEST_DATABASE_URL)');
      return;
    }
    const testDb = await createTestDb('postgres');
    t.after(() => testDb.cleanup());
    const db = testDb.db.kysely;

    await db.transaction().execute(async (trx) => {
      // One connection: the same text with different values, then what that connection holds.
      for (const n of [1, 2, 3]) {
        const { rows } = await sql<{ n: number }>`select ${n}::int + 1 as n`.execute(trx);
        assert.deepEqual(rows, [{ n: n + 1 }]);
      }
      const { rows } = await sql<{ name: string; statement: string }>`
        select name, statement from pg_prepared_statements where statement like ${'%::int + 1 as n'}
      `.execute(trx);
      assert.equal(rows.length, 1, 'the statement is prepared once, not once per call');
      assert.match(rows[0]!.name, /^coffer_\d+$/);
    });
  });

  it('past the bound, new statements run unprepared and each connection keeps at most the bound', async (t) => {
    if (!POSTGRES_URL) {
      serviceMissing('A real PostgreSQL server (COFFER_TEST_DATABASE_URL)');
      return;
    }
    const testDb = await createTestDb('postgres');
    t.after(() => testDb.cleanup());
    const db = testDb.db.kysely;

    await db.transaction().execute(async (trx) => {
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
    });
  });
});
