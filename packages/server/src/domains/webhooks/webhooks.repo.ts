import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import { toCount } from '../../db/database.js';
import type {
  Database,
  WebhookAttemptTable,
  WebhookDeliveryTable,
  WebhookTable,
} from '../../db/schema.js';
import { offsetOf, type ListParams } from '../../http/pagination.js';
import { newId } from '../../ids.js';

type Db = Kysely<Database>;
export type WebhookRow = Selectable<WebhookTable>;
export type DeliveryRow = Selectable<WebhookDeliveryTable>;
export type AttemptRow = Selectable<WebhookAttemptTable>;

export const insertWebhook = (db: Db, row: Insertable<WebhookTable>) =>
  db.insertInto('webhooks').values(row).execute();

export const findWebhook = (db: Db, projectId: string, id: string) =>
  db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .executeTakeFirst();

export const webhookById = (db: Db, id: string) =>
  db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();

export async function listWebhooks(
  db: Db,
  projectId: string,
  params: ListParams<'created_at' | 'url'>,
): Promise<{ rows: WebhookRow[]; total: number }> {
  const base = db.selectFrom('webhooks').where('project_id', '=', projectId);
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy(params.sort, params.order)
      .orderBy('id', params.order)
      .limit(params.per_page)
      .offset(offsetOf(params))
      .execute(),
    base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: toCount(count.n as number | string) };
}

/** Every enabled webhook of a project (or of every project), for turning events into deliveries. */
export function enabledWebhooks(db: Db, projectId: string | null): Promise<WebhookRow[]> {
  let query = db.selectFrom('webhooks').selectAll().where('enabled', '=', 1);
  if (projectId !== null) query = query.where('project_id', '=', projectId);
  return query.orderBy('id').execute();
}

export const updateWebhook = (db: Db, id: string, changes: Updateable<WebhookTable>) =>
  db.updateTable('webhooks').set(changes).where('id', '=', id).execute();

export const deleteWebhook = (db: Db, id: string) =>
  db.deleteFrom('webhooks').where('id', '=', id).execute();

/**
 * Moves a webhook's cursor from `from` to `to` only if no one else moved it:
 * of two instances turning the same events into deliveries, one wins, and the
 * other's transaction (with its deliveries) is rolled back.
 */
export async function advanceCursor(
  db: Db,
  id: string,
  from: string | null,
  to: string,
): Promise<boolean> {
  const result = await db
    .updateTable('webhooks')
    .set({ event_cursor: to })
    .where('id', '=', id)
    .where('enabled', '=', 1)
    .where((eb) => (from === null ? eb('event_cursor', 'is', null) : eb('event_cursor', '=', from)))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export interface NewDelivery {
  eventId: string | null;
  eventKind: string;
  /** The body as it will be sent, with `webhookId` placeholders already resolved. */
  payload: (deliveryId: string) => string;
}

/**
 * Appends deliveries to a webhook's queue, after those already in it: the
 * webhook's row is updated first (its `delivery_seq`), which serializes
 * writers of one queue on PostgreSQL; SQLite has one writer anyway.
 */
export async function enqueueDeliveries(
  db: Db,
  webhookId: string,
  deliveries: readonly NewDelivery[],
  at: string,
): Promise<DeliveryRow[]> {
  if (deliveries.length === 0) return [];
  const reserved = await db
    .updateTable('webhooks')
    .set((eb) => ({ delivery_seq: eb('delivery_seq', '+', deliveries.length) }))
    .where('id', '=', webhookId)
    .returning('delivery_seq')
    .executeTakeFirstOrThrow();
  const first = reserved.delivery_seq - deliveries.length + 1;
  const rows = deliveries.map((d, i): DeliveryRow => {
    const id = newId('webhookDelivery');
    return {
      id,
      webhook_id: webhookId,
      seq: first + i,
      event_id: d.eventId,
      event_kind: d.eventKind,
      payload: d.payload(id),
      status: 'pending',
      attempts: 0,
      next_attempt_at: at,
      last_status_code: null,
      last_error: null,
      created_at: at,
      finished_at: null,
    };
  });
  await db.insertInto('webhook_deliveries').values(rows).execute();
  return rows;
}

/**
 * Enabled webhooks whose oldest pending delivery is due and whose queue no
 * worker holds: a later delivery waits for the one before it (order per webhook).
 */
export async function findDueWebhookIds(db: Db, at: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .select('d.webhook_id')
    .where('d.status', '=', 'pending')
    .where('d.next_attempt_at', '<=', at)
    .where('w.enabled', '=', 1)
    .where((eb) => eb.or([eb('w.locked_until', 'is', null), eb('w.locked_until', '<=', at)]))
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('webhook_deliveries as e')
            .select('e.id')
            .whereRef('e.webhook_id', '=', 'd.webhook_id')
            .where('e.status', '=', 'pending')
            .whereRef('e.seq', '<', 'd.seq'),
        ),
      ),
    )
    .orderBy('d.next_attempt_at')
    .limit(limit)
    .execute();
  return [...new Set(rows.map((r) => r.webhook_id))];
}

/**
 * Claims a webhook's queue until `leaseUntil` with a conditional update: of
 * several workers (or instances) racing for it, exactly one changes the row
 * (PostgreSQL re-checks the condition after waiting on the row lock).
 */
export async function claimWebhook(
  db: Db,
  id: string,
  at: string,
  leaseUntil: string,
): Promise<WebhookRow | undefined> {
  const result = await db
    .updateTable('webhooks')
    .set({ locked_until: leaseUntil })
    .where('id', '=', id)
    .where('enabled', '=', 1)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', at)]))
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return undefined;
  return webhookById(db, id);
}

/** Extends a lease this worker holds; false when it lost it (expired and taken). */
export async function renewLease(
  db: Db,
  id: string,
  held: string,
  leaseUntil: string,
): Promise<boolean> {
  const result = await db
    .updateTable('webhooks')
    .set({ locked_until: leaseUntil })
    .where('id', '=', id)
    .where('locked_until', '=', held)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export const releaseWebhook = (db: Db, id: string, held: string) =>
  db
    .updateTable('webhooks')
    .set({ locked_until: null })
    .where('id', '=', id)
    .where('locked_until', '=', held)
    .execute();

/** The oldest pending delivery of a webhook: the only one that may be attempted. */
export const headDelivery = (db: Db, webhookId: string) =>
  db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'pending')
    .orderBy('seq')
    .limit(1)
    .executeTakeFirst();

/** Counts an attempt before it is made, so one cut short by a crash still counts. */
export const countAttempt = (db: Db, id: string) =>
  db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('id', '=', id)
    .execute();

export const insertAttempt = (db: Db, row: Omit<Insertable<WebhookAttemptTable>, 'id'>) =>
  db
    .insertInto('webhook_attempts')
    .values({ ...row, id: newId('webhookAttempt') })
    .execute();

export const updateDelivery = (db: Db, id: string, changes: Updateable<WebhookDeliveryTable>) =>
  db.updateTable('webhook_deliveries').set(changes).where('id', '=', id).execute();

/** A disabled webhook's queue: what was still pending will not be sent. */
export const failPending = (db: Db, webhookId: string, reason: string, at: string) =>
  db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', last_error: reason, finished_at: at })
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'pending')
    .execute();

export async function listDeliveries(
  db: Db,
  webhookId: string,
  params: ListParams<'created_at'>,
  status: DeliveryRow['status'] | undefined,
): Promise<{ rows: DeliveryRow[]; total: number }> {
  let base = db.selectFrom('webhook_deliveries').where('webhook_id', '=', webhookId);
  if (status) base = base.where('status', '=', status);
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy('seq', params.order)
      .limit(params.per_page)
      .offset(offsetOf(params))
      .execute(),
    base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: toCount(count.n as number | string) };
}

export async function attemptsOf(db: Db, deliveryIds: readonly string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('delivery_id')
    .orderBy('attempt')
    .execute();
}

export const findDelivery = (db: Db, webhookId: string, id: string) =>
  db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .where('id', '=', id)
    .executeTakeFirst();

export const deliveryExists = async (db: Db, id: string): Promise<boolean> =>
  (await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('id', '=', id)
    .executeTakeFirst()) !== undefined;

/**
 * Deletes up to `limit` finished deliveries (with their attempts) that ended
 * before `before`: the delivery log keeps a bounded past.
 */
export async function pruneFinished(db: Db, before: string, limit: number): Promise<number> {
  const old = db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('status', '!=', 'pending')
    .where('finished_at', '<', before)
    .limit(limit);
  const result = await db
    .deleteFrom('webhook_deliveries')
    .where('id', 'in', old)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** How many deliveries are queued and not yet delivered (the metrics' backlog gauge). */
export async function countPendingDeliveries(db: Db): Promise<number> {
  const { n } = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(n);
}
