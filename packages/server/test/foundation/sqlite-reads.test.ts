import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openDatabase, type Db } from '../../src/db/database.js';
import { preparedQuery } from '../../src/db/prepared-query.js';
import { createTestDb, type TestDb } from '../support/db.js';

/** A hot-path read as the secrets and environments domains write them. */
const settingValue = preparedQuery((db, name: string) =>
  db.selectFrom('server_settings').select(['name', 'value']).where('name', '=', name),
);

const valueIn = async (db: Db, name: string) =>
  (await settingValue(db.kysely, name))[0]?.value ?? null;

const NOW = '2026-11-23T12:00:00.000Z';

// Hot-path reads on SQLite are served from results kept until the database
// changes (`cachedReads`): every read here must still see the latest commit,
// whoever made it.
describe('hot-path reads on SQLite see every commit at once', () => {
  let t: TestDb;
  /** A second instance on the same file: another process as far as SQLite is concerned. */
  let other: Db;
  before(async () => {
    t = await createTestDb('sqlite');
    other = await openDatabase({ kind: 'sqlite', file: join(t.dataDir, 'coffer.db') });
    await t.db.kysely
      .insertInto('server_settings')
      .values({ name: 'colour', value: 'red', created_at: NOW })
      .execute();
  });
  after(async () => {
    await other.close();
    await t.cleanup();
  });

  it('a commit on the same instance is read back at once', async () => {
    assert.equal(await valueIn(t.db, 'colour'), 'red');
    await t.db.kysely
      .updateTable('server_settings')
      .set({ value: 'green' })
      .where('name', '=', 'colour')
      .execute();
    assert.equal(await valueIn(t.db, 'colour'), 'green');
  });

  it('a commit by another instance sharing the file is read back at once', async () => {
    assert.equal(await valueIn(t.db, 'colour'), 'green');
    assert.equal(await valueIn(other, 'colour'), 'green');
    await other.kysely
      .updateTable('server_settings')
      .set({ value: 'blue' })
      .where('name', '=', 'colour')
      .execute();
    assert.equal(await valueIn(t.db, 'colour'), 'blue');
    await other.kysely.deleteFrom('server_settings').where('name', '=', 'colour').execute();
    assert.equal(await valueIn(t.db, 'colour'), null);
  });

  it('a transaction still open is not read; its commit is', async () => {
    await t.db.kysely
      .insertInto('server_settings')
      .values({ name: 'shape', value: 'square', created_at: NOW })
      .execute();
    assert.equal(await valueIn(t.db, 'shape'), 'square');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let updated!: () => void;
    const changed = new Promise<void>((resolve) => (updated = resolve));
    const transaction = t.db.kysely.transaction().execute(async (trx) => {
      await trx
        .updateTable('server_settings')
        .set({ value: 'circle' })
        .where('name', '=', 'shape')
        .execute();
      updated();
      await held;
    });
    await changed;
    assert.equal(await valueIn(t.db, 'shape'), 'square');
    release();
    await transaction;
    assert.equal(await valueIn(t.db, 'shape'), 'circle');
  });

  it('rows are shared between callers, so they cannot be changed', async () => {
    const [row] = await settingValue(t.db.kysely, 'shape');
    assert.ok(row);
    assert.throws(() => Object.assign(row, { value: 'mutated' }), TypeError);
    assert.equal(await valueIn(t.db, 'shape'), 'circle');
  });

  it('results past the kept amount are read again, never mixed up', async () => {
    // 60 values of 100,000 characters: more than the reader keeps at once.
    const names = Array.from({ length: 60 }, (_, i) => `large-${i}`);
    await t.db.kysely
      .insertInto('server_settings')
      .values(
        names.map((name, i) => ({ name, value: String(i % 10).repeat(100_000), created_at: NOW })),
      )
      .execute();
    for (let round = 0; round < 2; round++) {
      for (const [i, name] of names.entries()) {
        assert.equal(await valueIn(t.db, name), String(i % 10).repeat(100_000));
      }
    }
  });
  it('foreign commits: unchanged by reads and by its own commits, changed by every commit of another instance', async () => {
    const count = () => t.db.foreignCommits!();
    const before = count();
    assert.equal(count(), before, 'nothing committed: the same');
    await valueIn(other, 'colour');
    assert.equal(count(), before, 'a read elsewhere is no commit');
    await t.db.kysely
      .insertInto('server_settings')
      .values({ name: 'own', value: 'x', created_at: NOW })
      .execute();
    assert.equal(count(), before, 'its own commit is not foreign');
    let last = before;
    for (let i = 0; i < 20; i++) {
      await other.kysely
        .insertInto('server_settings')
        .values({ name: `foreign-${i}`, value: 'x', created_at: NOW })
        .execute();
      const now = count();
      assert.notEqual(now, last, `foreign commit ${i} seen at once`);
      assert.equal(count(), now, 'and the same until the next');
      last = now;
      // Its own commits in between change nothing.
      await t.db.kysely
        .insertInto('server_settings')
        .values({ name: `own-${i}`, value: 'x', created_at: NOW })
        .execute();
      assert.equal(count(), now);
    }
  });
});
