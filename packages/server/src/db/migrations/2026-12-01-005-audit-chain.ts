import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';

// Frozen in time: never imports application code. Runs on SQLite and PostgreSQL.
// The audit log becomes tamper-evident: one hash chain per project (and one for
// events without a project). Each event gets its position in the chain
// (`chain_seq`), the previous event's hash (`prev_hash`) and its own (`hash`);
// `audit_chain_heads` keeps each chain's last position and hash.
// Events written before this migration start the chains, in the order they were
// written (created_at, then id), hashed exactly as the application hashes new
// ones (the encoding below is a copy of domains/audit/chain.ts at this version).

const GENESIS = '0'.repeat(64);
const PAGE = 1000;

interface EventRow {
  id: string;
  project_id: string | null;
  action: string;
  actor_id: string | null;
  credential_kind: string | null;
  credential_id: string | null;
  ip: string | null;
  request_id: string | null;
  target_type: string | null;
  target_id: string | null;
  data: string;
  created_at: string;
}

function hashOf(e: EventRow, seq: number, prev: string): string {
  const canonical = JSON.stringify([
    'coffer.audit.v1',
    seq,
    e.id,
    e.project_id,
    e.action,
    e.actor_id,
    e.credential_kind,
    e.credential_id,
    e.ip,
    e.request_id,
    e.target_type,
    e.target_id,
    e.data,
    e.created_at,
    prev,
  ]);
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

/* eslint-disable @typescript-eslint/no-explicit-any */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('audit_events').addColumn('chain_seq', 'integer').execute();
  await db.schema.alterTable('audit_events').addColumn('prev_hash', 'text').execute();
  await db.schema.alterTable('audit_events').addColumn('hash', 'text').execute();
  await db.schema
    .createTable('audit_chain_heads')
    .addColumn('chain', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .execute();

  const projects = (await db
    .selectFrom('audit_events')
    .select('project_id')
    .distinct()
    .execute()) as { project_id: string | null }[];
  for (const { project_id } of projects) {
    let seq = 0;
    let prev = GENESIS;
    let after: { created_at: string; id: string } | null = null;
    for (;;) {
      let query = db
        .selectFrom('audit_events')
        .selectAll()
        .where((eb) =>
          project_id === null ? eb('project_id', 'is', null) : eb('project_id', '=', project_id),
        )
        .orderBy('created_at')
        .orderBy('id')
        .limit(PAGE);
      if (after) {
        const { created_at, id } = after;
        query = query.where((eb) =>
          eb.or([
            eb('created_at', '>', created_at),
            eb.and([eb('created_at', '=', created_at), eb('id', '>', id)]),
          ]),
        );
      }
      const rows = (await query.execute()) as EventRow[];
      for (const row of rows) {
        seq++;
        const hash = hashOf(row, seq, prev);
        await db
          .updateTable('audit_events')
          .set({ chain_seq: seq, prev_hash: prev, hash })
          .where('id', '=', row.id)
          .execute();
        prev = hash;
      }
      if (rows.length < PAGE) break;
      const last = rows[rows.length - 1]!;
      after = { created_at: last.created_at, id: last.id };
    }
    await db
      .insertInto('audit_chain_heads')
      .values({ chain: project_id ?? '', seq, hash: prev })
      .execute();
  }

  await db.schema
    .createIndex('audit_events_chain')
    .on('audit_events')
    .columns(['project_id', 'chain_seq'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('audit_events_chain').ifExists().execute();
  await db.schema.dropTable('audit_chain_heads').ifExists().execute();
  await db.schema.alterTable('audit_events').dropColumn('hash').execute();
  await db.schema.alterTable('audit_events').dropColumn('prev_hash').execute();
  await db.schema.alterTable('audit_events').dropColumn('chain_seq').execute();
}
