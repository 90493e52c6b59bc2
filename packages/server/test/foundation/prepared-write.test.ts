import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Insertable } from 'kysely';
import { preparedWrite } from '../../src/db/prepared-query.js';
import type { AuditEventTable, ServerSettingTable } from '../../src/db/schema.js';
import { createTestDb, DIALECTS, type TestDb } from '../support/db.js';

const NOW = '2026-11-23T12:00:00.000Z';

for (const dialect of DIALECTS) {
  // `preparedWrite` compiles a write once per shape and binds each call's values
  // in place of markers: every value must still reach the database as given.
  describe(`preparedWrite (${dialect})`, () => {
    let t: TestDb;
    before(async () => (t = await createTestDb(dialect)));
    after(async () => t.cleanup());

    let settingBuilds = 0;
    const writeSetting = preparedWrite((db, variant, row: Insertable<ServerSettingTable>) => {
      settingBuilds++;
      return variant === 'insert'
        ? db.insertInto('server_settings').values(row)
        : db.updateTable('server_settings').set({ value: row.value }).where('name', '=', row.name);
    });

    let auditBuilds = 0;
    const appendEvents = preparedWrite((db, _variant, rows: Insertable<AuditEventTable>[]) => {
      auditBuilds++;
      return db.insertInto('audit_events').values(rows);
    });

    const event = (n: number, extra: Partial<Insertable<AuditEventTable>> = {}) => ({
      id: `evt_prepared_${n}`,
      project_id: null,
      action: `test.action_${n}`,
      actor_id: null,
      credential_kind: null,
      credential_id: null,
      ip: `10.0.0.${n % 250}`,
      request_id: `req-${n}`,
      target_type: null,
      target_id: null,
      data: JSON.stringify({ n, quote: "it's" }),
      created_at: NOW,
      ...extra,
    });

    const settings = () =>
      t.db.kysely.selectFrom('server_settings').select(['name', 'value']).orderBy('name').execute();

    it('one build per shape and variant; each call binds its own values', async () => {
      for (const name of ['a', 'b', 'c']) {
        await writeSetting(t.db.kysely, 'insert', { name, value: `v-${name}`, created_at: NOW });
      }
      assert.equal(settingBuilds, 1);
      await writeSetting(t.db.kysely, 'update', { name: 'b', value: 'changed', created_at: NOW });
      await writeSetting(t.db.kysely, 'update', { name: 'c', value: "o'clock", created_at: NOW });
      assert.equal(settingBuilds, 2, 'the variant is part of the shape');
      assert.deepEqual(await settings(), [
        { name: 'a', value: 'v-a' },
        { name: 'b', value: 'changed' },
        { name: 'c', value: "o'clock" },
      ]);
    });

    it('nulls are values; a field left undefined is a new shape and leaves its column out', async () => {
      await appendEvents(t.db.kysely, '', [event(1)]);
      await appendEvents(t.db.kysely, '', [
        event(2, { target_type: 'secret', target_id: 'sec_x' }),
      ]);
      assert.equal(auditBuilds, 1);
      await appendEvents(t.db.kysely, '', [event(3, { ip: undefined })]);
      assert.equal(auditBuilds, 2);
      await appendEvents(t.db.kysely, '', [event(4), event(5)]);
      assert.equal(auditBuilds, 3, 'an array of another length is another shape');
      const stored = await t.db.kysely
        .selectFrom('audit_events')
        .select(['id', 'ip', 'target_type', 'target_id', 'data'])
        .where('id', 'like', 'evt_prepared_%')
        .orderBy('id')
        .execute();
      assert.deepEqual(stored, [
        {
          id: 'evt_prepared_1',
          ip: '10.0.0.1',
          target_type: null,
          target_id: null,
          data: event(1).data,
        },
        {
          id: 'evt_prepared_2',
          ip: '10.0.0.2',
          target_type: 'secret',
          target_id: 'sec_x',
          data: event(2).data,
        },
        { id: 'evt_prepared_3', ip: null, target_type: null, target_id: null, data: event(3).data },
        {
          id: 'evt_prepared_4',
          ip: '10.0.0.4',
          target_type: null,
          target_id: null,
          data: event(4).data,
        },
        {
          id: 'evt_prepared_5',
          ip: '10.0.0.5',
          target_type: null,
          target_id: null,
          data: event(5).data,
        },
      ]);
    });

    it('keeps the shapes used most recently; the others are built again and still write what they are given', async () => {
      const bulk = (k: number) => event(k, { action: 'test.bulk' });
      const write = (length: number) =>
        appendEvents(
          t.db.kysely,
          'bulk',
          Array.from({ length }, () => bulk(n++)),
        ).then(() => (expected += length));
      let n = 100;
      let expected = 0;
      // 70 shapes through a cache of 64: lengths 1 to 6 are the least recently used.
      for (let length = 1; length <= 70; length++) await write(length);
      const before = auditBuilds;
      await write(70);
      await write(7);
      assert.equal(auditBuilds, before, 'recently used shapes are kept');
      await write(1);
      assert.equal(auditBuilds, before + 1, 'the least recently used were dropped');
      await write(1);
      // Length 1 came back by dropping the least recently used shape (8; 7 was used again).
      await write(8);
      await write(7);
      assert.equal(auditBuilds, before + 2, 'the cache does not grow past its bound');
      const stored = await t.db.kysely
        .selectFrom('audit_events')
        .select(['id', 'request_id', 'data'])
        .where('action', '=', 'test.bulk')
        .execute();
      assert.equal(stored.length, expected);
      for (const row of stored) {
        const k = Number(/^evt_prepared_(\d+)/.exec(row.id)![1]);
        assert.deepEqual(row, { id: row.id, request_id: `req-${k}`, data: event(k).data });
      }
    });
  });
}
