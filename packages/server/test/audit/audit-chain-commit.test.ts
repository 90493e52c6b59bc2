import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Insertable } from 'kysely';
import { inSharedProjectTransaction } from '../../src/db/database.js';
import type { AuditEventTable } from '../../src/db/schema.js';
import { insertAuditRows } from '../../src/domains/audit/audit.js';
import { auditChainStatement, verifyAuditChains } from '../../src/domains/audit/chain.js';
import { newId } from '../../src/ids.js';
import { createTestDb, DIALECTS, type TestDb } from '../support/db.js';

// PostgreSQL chains a secret write's audit events with its commit: the events are
// inserted unchained and `coffer_audit_chain` (migration 2026-12-11-011), sent in
// the commit's round trip, places and hashes them in the database. Its hashes must
// be exactly the application's (verify recomputes them in JS), and concurrent
// writers on separate connections must leave one gap-free chain.

const event = (
  projectId: string,
  data: Record<string, unknown>,
  overrides: Partial<Insertable<AuditEventTable>> = {},
): Insertable<AuditEventTable> => ({
  id: newId('auditEvent'),
  project_id: projectId,
  action: 'secret.updated',
  actor_id: newId('user'),
  credential_kind: 'api_key',
  credential_id: newId('apiKey'),
  ip: '203.0.113.7',
  request_id: `req-${Math.random().toString(36).slice(2)}`,
  target_type: 'secret',
  target_id: newId('secret'),
  data: JSON.stringify(data),
  created_at: new Date().toISOString(),
  ...overrides,
});

/** A write the way the secrets service does it: insert unchained, chain with the commit. */
function chainedWrite(t: TestDb, projectId: string, rows: Insertable<AuditEventTable>[]) {
  return inSharedProjectTransaction(
    t.db.kysely,
    projectId,
    async (trx) => {
      await trx.insertInto('audit_events').values(rows).execute();
      return rows;
    },
    (written) => auditChainStatement(written),
  );
}

if (DIALECTS.includes('postgres')) {
  describe('audit chain taken with the commit (postgres)', () => {
    let t: TestDb;
    before(async () => {
      t = await createTestDb('postgres');
    });
    after(async () => t.cleanup());

    const seqs = async (projectId: string) =>
      (
        await t.db.kysely
          .selectFrom('audit_events')
          .select(['chain_seq', 'hash'])
          .where('project_id', '=', projectId)
          .orderBy('chain_seq')
          .execute()
      ).map((r) => {
        assert.ok(r.hash, 'every committed event is chained');
        return r.chain_seq;
      });

    it('hashes exactly as the application does, whatever the strings hold', async () => {
      const project = newId('project');
      const awkward = [
        'quote " backslash \\ slash / tab \t newline \n return \r',
        'controls \u0000x\u0001\u0008\u000b\u000c\u001f\u007f',
        'unicode é ü 漢字 emoji 🔐 separators \u2028 \u2029 bom \ufeff',
      ];
      const rows = awkward.map((text, i) =>
        event(project, { text, i }, { ip: null, target_id: null, action: `a"\\${text}` }),
      );
      // A NUL cannot reach a PostgreSQL text column; the data above carries it JSON-escaped.
      for (const row of rows) row.action = row.action!.split('\u0000').join('');
      await chainedWrite(t, project, rows);
      const report = (await verifyAuditChains(t.db.kysely, 'postgres')).find(
        (r) => r.projectId === project,
      );
      assert.equal(report?.broken, undefined, JSON.stringify(report));
      assert.equal(report?.events, 3);
      assert.deepEqual(await seqs(project), [1, 2, 3]);
    });

    it('leaves one gap-free chain from concurrent writers on separate connections', async () => {
      const project = newId('project');
      // Writers through the commit (1 to 3 events each) and through insertAuditRows
      // (the other domains' and the buffered reads' path), all at once.
      const writes = Array.from({ length: 40 }, (_, i) =>
        i % 5 === 4
          ? insertAuditRows(t.db.kysely, [event(project, { i }), event(project, { i, n: 2 })])
          : chainedWrite(
              t,
              project,
              Array.from({ length: (i % 3) + 1 }, (_, n) => event(project, { i, n })),
            ),
      );
      await Promise.all(writes);
      const count = Array.from({ length: 40 }, (_, i) => (i % 5 === 4 ? 2 : (i % 3) + 1)).reduce(
        (a, b) => a + b,
      );
      const report = (await verifyAuditChains(t.db.kysely, 'postgres')).find(
        (r) => r.projectId === project,
      );
      assert.equal(report?.broken, undefined, JSON.stringify(report));
      assert.equal(report?.events, count);
      assert.deepEqual(
        await seqs(project),
        Array.from({ length: count }, (_, i) => i + 1),
      );
    });

    it('rolls the whole write back when its events cannot be chained', async () => {
      const project = newId('project');
      await chainedWrite(t, project, [event(project, { first: true })]);
      const stray = event(project, { stray: true });
      // An id the transaction did not insert: the function refuses, nothing commits.
      await assert.rejects(
        inSharedProjectTransaction(
          t.db.kysely,
          project,
          async (trx) => {
            await trx.insertInto('audit_events').values(stray).execute();
            return [stray, event(project, { never: 'inserted' })];
          },
          (rows) => auditChainStatement(rows),
        ),
        /coffer_audit_chain/,
      );
      const left = await t.db.kysely
        .selectFrom('audit_events')
        .select('id')
        .where('id', '=', stray.id)
        .execute();
      assert.deepEqual(left, []);
      assert.deepEqual(await seqs(project), [1]);
    });

    it('writes nothing but checked ids into the statement', () => {
      const project = newId('project');
      assert.throws(
        () => auditChainStatement([{ ...event(project, {}), id: "evt_x'); drop table x; --" }]),
        /not an auditEvent id/,
      );
      assert.throws(() => auditChainStatement([event("proj_x', 'y", {})]), /not a project id/);
      assert.equal(auditChainStatement([]), '');
    });
  });
}
