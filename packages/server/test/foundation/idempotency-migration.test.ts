import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Migrator, sql } from 'kysely';
import { migrateToLatest } from '../../src/db/database.js';
import { migrationProvider } from '../../src/db/migrations/index.js';
import {
  idempotencyService,
  keyLookup,
} from '../../src/domains/idempotency/idempotency.service.js';
import { hexOf } from '../../src/domains/idempotency/idempotency.repo.js';
import { newIdempotencyKey } from '@coffer/sdk';
import { createTestDb, DIALECTS, type TestDb } from '../support/db.js';

// Migration 017 stores keys as bytes and drops `owner` and `expires_at`. A key
// taken before the upgrade must still be found after it, with its result: a
// client retrying across the upgrade must not write twice.

const BEFORE = '2026-12-23-016-idempotency-keys-sqlite';

for (const dialect of DIALECTS) {
  describe(`idempotency keys across migration 017 [${dialect}]`, () => {
    let t: TestDb;
    const clock = { now: () => new Date('2026-12-24T10:00:00.000Z') };
    before(async () => {
      t = await createTestDb(dialect);
    });
    after(async () => t.cleanup());

    const request = (key: string, body: unknown) => ({
      owner: 'api_key:ak_migrated0000000000',
      key,
      method: 'POST',
      url: '/v1/projects/prj_x/things',
      body,
    });
    /** The row the code before 017 wrote for `request` (hex, the whole fingerprint). */
    const oldRow = (key: string, body: unknown, result: string, createdAt: string) => {
      const r = request(key, body);
      return {
        lookup: keyLookup(r.owner, r.key),
        owner: r.owner,
        fingerprint: createHash('sha256')
          .update([r.method, r.url, JSON.stringify(body)].join('\u0000'))
          .digest('hex'),
        result,
        created_at: createdAt,
        expires_at: new Date(Date.parse(createdAt) + 24 * 60 * 60 * 1000).toISOString(),
      };
    };

    it('converts the keys in place: a repeat finds its result, another body is refused', async () => {
      const migrator = new Migrator({ db: t.db.kysely, provider: migrationProvider });
      const down = await migrator.migrateTo(BEFORE);
      assert.equal(down.error, undefined, String(down.error));
      const timed = newIdempotencyKey(Date.parse('2026-12-24T09:00:00.000Z'));
      const random = 'a-client-key-of-its-own-making-0001';
      const body = { name: 'thing', count: 2 };
      const rows = [
        oldRow(timed, body, '~{"id":"thg_1","count":2}', '2026-12-24T09:00:00.000Z'),
        oldRow(random, body, '~{"id":"thg_2","count":2}', '2026-12-24T09:30:00.000Z'),
        // Expired a day ago: the purge's, not a repeat's.
        oldRow('an-old-key-of-the-day-before-01', body, '~{}', '2026-12-22T09:00:00.000Z'),
      ];
      // The old table's columns, as the code before 017 inserted them.
      for (const row of rows)
        await sql`insert into idempotency_keys (lookup, owner, fingerprint, result, created_at, expires_at)
          values (${row.lookup}, ${row.owner}, ${row.fingerprint}, ${row.result}, ${row.created_at}, ${row.expires_at})`.execute(
          t.db.kysely,
        );
      await migrateToLatest(t.db);

      const service = idempotencyService({ db: t.db, clock: clock as never });
      for (const [key, id] of [
        [timed, 'thg_1'],
        [random, 'thg_2'],
      ] as const) {
        const { claim, done } = await service.claim(request(key, body), {
          resultInClear: true,
        });
        assert.deepEqual(claim.committed, { value: { id, count: 2 } }, key);
        done();
        await assert.rejects(
          Promise.resolve(service.claim(request(key, { ...body, count: 3 }))),
          /idempotency_key_reused|another method, URL or body/,
        );
      }
      const stored = await t.db.kysely.selectFrom('idempotency_keys').selectAll().execute();
      assert.deepEqual(
        stored.map((row) => hexOf(row.lookup)).sort(),
        rows.map((row) => row.lookup).sort(),
      );
      for (const row of stored) assert.equal(hexOf(row.fingerprint).length, 32);
      assert.equal(await service.purgeExpired(), 1, 'the key of the day before');
    });

    it('goes back down to the hex rows, with their expiry', async () => {
      const migrator = new Migrator({ db: t.db.kysely, provider: migrationProvider });
      const down = await migrator.migrateTo(BEFORE);
      assert.equal(down.error, undefined, String(down.error));
      const rows = await sql<{ lookup: string; fingerprint: string; expires_at: string }>`
        select lookup, fingerprint, expires_at from idempotency_keys order by created_at`.execute(
        t.db.kysely,
      );
      assert.equal(rows.rows.length, 2);
      for (const row of rows.rows) {
        assert.match(row.lookup, /^[0-9a-f]{64}([0-9a-f]{12})?$/);
        assert.match(row.fingerprint, /^[0-9a-f]{32}$/);
      }
      assert.deepEqual(
        rows.rows.map((row) => row.expires_at),
        ['2026-12-25T09:00:00.000Z', '2026-12-25T09:30:00.000Z'],
      );
      await migrateToLatest(t.db);
    });

    it("a key stored before fingerprints covered the body's bytes: a repeat sent as bytes still matches", async () => {
      // Until 2026-11-28 the fingerprint hashed the parsed body serialized
      // again; now it hashes the bytes as sent. A client that spaced its JSON
      // otherwise, retrying across that upgrade, must find its result.
      const key = newIdempotencyKey(Date.parse('2026-12-24T09:45:00.000Z'));
      const body = { name: 'thing', count: 2 };
      const old = oldRow(key, body, '~{"id":"thg_3","count":2}', '2026-12-24T09:45:00.000Z');
      await t.db.kysely
        .insertInto('idempotency_keys')
        .values({
          lookup: Buffer.from(old.lookup, 'hex'),
          fingerprint: Buffer.from(old.fingerprint, 'hex').subarray(0, 16),
          result: old.result,
          created_at: old.created_at,
        })
        .execute();
      const service = idempotencyService({ db: t.db, clock: clock as never });
      const sent = (value: unknown) => ({
        ...request(key, value),
        bodyBytes: Buffer.from(JSON.stringify(value, null, 2)),
      });
      const { claim, done } = await service.claim(sent(body), {
        resultInClear: true,
      });
      assert.deepEqual(claim.committed, { value: { id: 'thg_3', count: 2 } });
      done();
      await assert.rejects(
        Promise.resolve(service.claim(sent({ ...body, count: 3 }))),
        /idempotency_key_reused|another method, URL or body/,
      );
    });
  });
}
