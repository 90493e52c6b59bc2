import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AuditBuffer, type Actor } from '../../src/domains/audit/audit.js';
import { createTestDb, DIALECTS, type TestDb } from '../support/db.js';

const token = (id: string, ip = '192.0.2.1'): Actor => ({
  principal: {
    kind: 'ci_token',
    id,
    projectId: 'proj_test',
    userId: 'usr_owner',
    scopes: {},
  },
  ip,
  requestId: `req_${id}`,
});

const read = (version: number) => ({
  projectId: null,
  action: 'secret.read',
  targetType: 'secret',
  targetId: 'sec_1',
  data: { name: 'API_KEY', version },
});

for (const dialect of DIALECTS) {
  describe(`AuditBuffer (${dialect})`, () => {
    let testDb: TestDb;
    before(async () => {
      testDb = await createTestDb(dialect);
    });
    after(async () => testDb.cleanup());

    const rows = () =>
      testDb.db.kysely.selectFrom('audit_events').selectAll().orderBy('created_at').execute();

    it('writes nothing before a flush, everything at close, identical reads as one counted event', async () => {
      const buffer = new AuditBuffer(testDb.db.kysely, { flushIntervalMs: 60_000 });
      const t0 = new Date('2026-11-22T10:00:00.000Z');
      const later = new Date('2026-11-22T10:00:01.500Z');
      buffer.record(token('cit_a'), read(1), t0, 'v1');
      buffer.record(token('cit_a'), read(1), later, 'v1');
      buffer.record(token('cit_a', '198.51.100.7'), read(1), later, 'v1'); // another IP
      buffer.record(token('cit_b'), read(1), later, 'v1'); // another credential
      buffer.record(token('cit_a'), read(2), later, 'v2'); // other content
      assert.equal((await rows()).length, 0);

      await buffer.close();
      const stored = await rows();
      assert.equal(stored.length, 4);
      const merged = stored.find(
        (r) =>
          r.credential_id === 'cit_a' && r.ip === '192.0.2.1' && JSON.parse(r.data).version === 1,
      )!;
      assert.deepEqual(JSON.parse(merged.data), {
        name: 'API_KEY',
        version: 1,
        count: 2,
        last_at: later.toISOString(),
      });
      assert.equal(merged.created_at, t0.toISOString());
      assert.equal(merged.request_id, 'req_cit_a');
      const total = stored.reduce((n, r) => n + (JSON.parse(r.data) as { count: number }).count, 0);
      assert.equal(total, 5);
    });

    it('flushes on its own once maxBatch distinct events wait', async () => {
      const buffer = new AuditBuffer(testDb.db.kysely, { flushIntervalMs: 60_000, maxBatch: 3 });
      const before = (await rows()).length;
      for (const id of ['cit_x', 'cit_y', 'cit_z'])
        buffer.record(token(id), read(1), new Date(), 'v1');
      // No flush() call: the third event started the write (the interval is a minute).
      for (let i = 0; i < 100 && (await rows()).length < before + 3; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal((await rows()).length, before + 3);
      await buffer.close();
    });
  });
}
