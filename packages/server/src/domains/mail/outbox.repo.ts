import type { Kysely, Selectable } from 'kysely';
import type { Database, OutboxTable } from '../../db/schema.js';

export type OutboxRow = Selectable<OutboxTable>;

export async function insertOutboxMessage(
  db: Kysely<Database>,
  message: { id: string; kind: string; payload: string; at: string },
): Promise<void> {
  await db
    .insertInto('outbox')
    .values({
      id: message.id,
      kind: message.kind,
      payload: message.payload,
      status: 'pending',
      attempts: 0,
      next_attempt_at: message.at,
      created_at: message.at,
    })
    .execute();
}

/** Pending messages whose time has come and that no worker holds a live lease on. */
export async function findDueMessageIds(
  db: Kysely<Database>,
  at: string,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .selectFrom('outbox')
    .select('id')
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', at)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', at)]))
    .orderBy('next_attempt_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Claims one message for `leaseUntil` with a conditional update: of several
 * workers (or server instances) racing for it, exactly one sees a changed row.
 * PostgreSQL re-checks the condition after waiting on the row lock; SQLite
 * runs one writer at a time. Counts the attempt at claim time, so a worker
 * that dies mid-delivery still uses one up.
 */
export async function claimMessage(
  db: Kysely<Database>,
  id: string,
  at: string,
  leaseUntil: string,
): Promise<OutboxRow | undefined> {
  const result = await db
    .updateTable('outbox')
    .set((eb) => ({ locked_until: leaseUntil, attempts: eb('attempts', '+', 1) }))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', at)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', at)]))
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return undefined;
  return db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Delivered: the body (which may carry a one-time invitation link) is replaced by `keptPayload`. */
export async function markSent(
  db: Kysely<Database>,
  id: string,
  at: string,
  keptPayload: string,
): Promise<void> {
  await db
    .updateTable('outbox')
    .set({
      status: 'sent',
      sent_at: at,
      locked_until: null,
      last_error: null,
      payload: keptPayload,
    })
    .where('id', '=', id)
    .execute();
}

export async function markRetry(
  db: Kysely<Database>,
  id: string,
  nextAttemptAt: string,
  error: string,
): Promise<void> {
  await db
    .updateTable('outbox')
    .set({ next_attempt_at: nextAttemptAt, locked_until: null, last_error: error })
    .where('id', '=', id)
    .execute();
}

export async function markFailed(db: Kysely<Database>, id: string, error: string): Promise<void> {
  await db
    .updateTable('outbox')
    .set({ status: 'failed', locked_until: null, last_error: error })
    .where('id', '=', id)
    .execute();
}

/** How many e-mails are in the outbox with this status (the metrics' backlog gauges). */
export async function countOutbox(
  db: Kysely<Database>,
  status: 'pending' | 'failed',
): Promise<number> {
  const { n } = await db
    .selectFrom('outbox')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('status', '=', status)
    .executeTakeFirstOrThrow();
  return Number(n);
}
