import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { GATHER_TURNS, GroupCommit } from '../../src/db/group-commit.js';
import type { Database } from '../../src/db/schema.js';
import { createTestDb, type TestDb } from '../support/db.js';

// The SQLite group commit: writes that arrive together share one transaction
// and one fsync. Which writes make a group decides how many fsyncs a load
// costs, so what a group gathers is checked here on a real SQLite database.

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the SQLite group commit', () => {
  let t: TestDb;
  let transactions = 0;
  let counting: Kysely<Database>;
  before(async () => {
    t = await createTestDb('sqlite');
    await sql`create table gathered (name text primary key)`.execute(t.db.kysely);
    const kysely = t.db.kysely;
    // The only call GroupCommit makes on its handle: one per group.
    counting = {
      startTransaction: () => (transactions++, kysely.startTransaction()),
    } as unknown as Kysely<Database>;
  });
  after(async () => t.cleanup());

  const write = (name: string) => async (trx: Kysely<Database>) => {
    await trx
      .insertInto('gathered' as never)
      .values({ name } as never)
      .execute();
    return name;
  };

  it('gathers writes that keep arriving, a turn of the event loop apart, into one group', async () => {
    transactions = 0;
    const group = new GroupCommit(counting);
    const written = [group.run(write('a'))];
    for (const name of ['b', 'c', 'd']) {
      await nextTurn();
      written.push(group.run(write(name)));
    }
    assert.deepEqual(await Promise.all(written), ['a', 'b', 'c', 'd']);
    assert.equal(transactions, 1, 'one transaction, one commit for the four');
    const rows = await sql<{ n: number }>`select count(*) as n from gathered`.execute(t.db.kysely);
    assert.equal(Number(rows.rows[0]!.n), 4);
  });

  it('does not wait for a stream of writes beyond its turns', async () => {
    transactions = 0;
    const group = new GroupCommit(counting);
    const written: Promise<string>[] = [];
    let firstDone = -1;
    const turns = GATHER_TURNS * 3;
    for (let turn = 0; turn < turns; turn++) {
      const done = group.run(write(`stream-${turn}`));
      if (turn === 0) void done.then(() => (firstDone = written.length));
      written.push(done);
      await nextTurn();
    }
    await Promise.all(written);
    assert.ok(transactions >= 2, `${transactions} transactions for ${turns} writes`);
    assert.ok(
      firstDone > 0 && firstDone < turns,
      `the first write was answered after ${firstDone} of ${turns} had arrived`,
    );
  });
});
