import type { Insertable, Kysely, Selectable } from 'kysely';
import type { AuditEventTable, Database } from '../../db/schema.js';
import { offsetOf, type ListParams } from '../../http/pagination.js';

export type AuditEventRow = Selectable<AuditEventTable>;

export interface AuditFilter {
  action?: string;
  actorId?: string;
  /** Inclusive lower bound, ISO 8601. */
  since?: string;
  /** Exclusive upper bound, ISO 8601. */
  until?: string;
}

function filtered(db: Kysely<Database>, projectId: string, filter: AuditFilter) {
  let query = db.selectFrom('audit_events').where('project_id', '=', projectId);
  if (filter.action !== undefined) query = query.where('action', '=', filter.action);
  if (filter.actorId !== undefined) query = query.where('actor_id', '=', filter.actorId);
  if (filter.since !== undefined) query = query.where('created_at', '>=', filter.since);
  if (filter.until !== undefined) query = query.where('created_at', '<', filter.until);
  return query;
}

export async function listAuditEvents(
  db: Kysely<Database>,
  projectId: string,
  filter: AuditFilter,
  params: ListParams<'created_at'>,
): Promise<{ rows: AuditEventRow[]; total: number }> {
  const rows = await filtered(db, projectId, filter)
    .selectAll()
    .orderBy('created_at', params.order)
    // The clock can give two events of one request the same millisecond; the
    // chain's position is their true order.
    .orderBy('chain_seq', params.order)
    .orderBy('id', params.order)
    .limit(params.per_page)
    .offset(offsetOf(params))
    .execute();
  const { total } = await filtered(db, projectId, filter)
    .select((eb) => eb.fn.countAll().as('total'))
    .executeTakeFirstOrThrow();
  return { rows, total: Number(total) };
}

/** Inserts audit events (already chained, see `chain.ts`). */
export async function insertAuditEvents(
  db: Kysely<Database>,
  rows: readonly Insertable<AuditEventTable>[],
): Promise<void> {
  await db.insertInto('audit_events').values(rows).execute();
}
