import type { FastifyRequest } from 'fastify';
import type { Insertable, Kysely } from 'kysely';
import type { AuditEventTable, Database } from '../../db/schema.js';
import { newId } from '../../ids.js';
import type { Principal } from '../../http/principal.js';
import type { WriteClaim } from '../../db/write-claims.js';
import { insertAuditEvents } from './audit.repo.js';
import { chainAuditRows, storeChainHeads } from './chain.js';

/** Who did something, from where: captured from the request, passed to services. */
export interface Actor {
  readonly principal: Principal | null;
  readonly ip: string | null;
  readonly requestId: string | null;
  /**
   * The request's idempotency claim, for a route whose write takes it
   * explicitly instead of from the async context (`idempotencyAtCommit`,
   * http/idempotency.ts).
   */
  readonly writeClaim?: WriteClaim;
}

/** The server itself (an expiry, a webhook disabled for failing): events without an actor. */
export const SYSTEM_ACTOR: Actor = { principal: null, ip: null, requestId: null };

export const actorOf = (request: FastifyRequest): Actor => ({
  principal: request.principal,
  ip: request.ip ?? null,
  requestId: request.id ?? null,
  writeClaim: request.writeClaim ?? undefined,
});

export interface AuditEntry {
  projectId: string | null;
  /** Dotted verb, e.g. `member.invited`, `member.role_changed`, `secret.read`. */
  action: string;
  targetType?: string;
  targetId?: string;
  /** Before/after values and other facts. Never secret values or key material. */
  data?: Record<string, unknown>;
}

/** The row of one audit event: who (principal, user, credential), from where, what. */
function auditRow(actor: Actor, entry: AuditEntry, at: Date): Insertable<AuditEventTable> {
  const p = actor.principal;
  return {
    id: newId('auditEvent'),
    project_id: entry.projectId,
    action: entry.action,
    actor_id: p?.userId ?? null,
    credential_kind: p?.kind ?? null,
    credential_id: p ? (p.kind === 'session' ? p.sessionId : p.id) : null,
    ip: actor.ip,
    request_id: actor.requestId,
    target_type: entry.targetType ?? null,
    target_id: entry.targetId ?? null,
    data: JSON.stringify(entry.data ?? {}),
    created_at: at.toISOString(),
  };
}

/** The rows of several events of one actor at one time, for callers that write them themselves. */
export function auditRows(
  actor: Actor,
  entries: readonly AuditEntry[],
  at: Date,
): Insertable<AuditEventTable>[] {
  return entries.map((entry) => auditRow(actor, entry, at));
}

/** Who did it (the request's actor and credential), in which project, when. */
export interface AuditScope {
  readonly actor: Actor;
  readonly projectId: string | null;
  readonly at: Date;
}

/** What an event is about, as `[type, id]`: `['member', memberId]`. */
export type AuditTarget = readonly [type: string, id: string];

/**
 * Records that `action` happened (to `target`, with `data`): one audit event,
 * written with the caller's transaction so that it commits (or rolls back)
 * together with the change it records.
 */
export async function audit(
  trx: Kysely<Database>,
  { actor, projectId, at }: AuditScope,
  action: string,
  target: AuditTarget | null,
  data?: Record<string, unknown>,
): Promise<void> {
  const entry: AuditEntry = { projectId, action };
  if (target) [entry.targetType, entry.targetId] = target;
  if (data) entry.data = data;
  await insertAuditRows(trx, [auditRow(actor, entry, at)]);
}

/** Rows per INSERT: 15 columns each stays far below every driver's parameter limit. */
const ROWS_PER_INSERT = 200;

/**
 * Appends events to their projects' hash chains (see `chain.ts`): in the
 * caller's transaction, or in one of their own when `db` is not one (the
 * positions reserved and the events must commit together).
 */
export async function insertAuditRows(
  db: Kysely<Database>,
  rows: readonly Insertable<AuditEventTable>[],
): Promise<void> {
  if (rows.length === 0) return;
  if (!db.isTransaction) {
    await db.transaction().execute((trx) => insertAuditRows(trx, rows));
    return;
  }
  const chained = await chainAuditRows(db, rows);
  for (let i = 0; i < chained.rows.length; i += ROWS_PER_INSERT) {
    await insertAuditEvents(db, chained.rows.slice(i, i + ROWS_PER_INSERT));
  }
  await storeChainHeads(db, chained.heads);
}

interface AuditBufferOptions {
  /** Longest time an event waits in memory before it is written. */
  flushIntervalMs?: number;
  /** Write as soon as this many distinct events wait (a bound on memory, not a flush rhythm). */
  maxBatch?: number;
  /** Events kept while the database refuses writes; beyond it the oldest are dropped (and logged). */
  maxPending?: number;
  onError?: (err: unknown, dropped: number) => void;
}

/** A read waiting to be written, with how often it happened in this interval. */
interface PendingEvent {
  actor: Actor;
  entry: AuditEntry;
  at: Date;
  /** Set for reads that may be merged with identical ones; they record `count`. */
  mergeable: boolean;
  count: number;
  lastAt: Date;
}

/**
 * Audit events that record a read, not a change (a token reading secrets), so
 * they need not commit with anything. A row per read would put a synchronous
 * write (and on SQLite an fsync) on the hottest path, so reads wait in memory
 * and are written in one transaction every `flushIntervalMs` (250 ms) or once
 * `maxBatch` (2,000) distinct events wait, and on `close()` (app shutdown).
 * `maxBatch` is far above what one interval normally gathers: a lower bound
 * (it was 100) made an application cycling through its 100 secrets flush after
 * every 100 reads, so nothing was ever merged and every read cost a row.
 *
 * Identical reads in one interval — same credential, IP, action, target and
 * `sameAs` content (e.g. the same listing page at the same revision) — become
 * ONE event whose `data.count` says how many reads it stands for and
 * `data.last_at` when the last one happened; its `created_at` and `request_id`
 * are the first read's. Every read is counted; a crash loses at most the last
 * interval.
 */
export class AuditBuffer {
  private pending = new Map<string, PendingEvent>();
  private failed: Insertable<AuditEventTable>[] = [];
  private sequence = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  private writing: Promise<void> = Promise.resolve();
  private readonly flushIntervalMs: number;
  private readonly maxBatch: number;
  private readonly maxPending: number;
  private readonly onError: (err: unknown, dropped: number) => void;

  constructor(
    private readonly db: Kysely<Database>,
    options: AuditBufferOptions = {},
  ) {
    this.flushIntervalMs = options.flushIntervalMs ?? 250;
    this.maxBatch = options.maxBatch ?? 2_000;
    this.maxPending = options.maxPending ?? 100_000;
    this.onError = options.onError ?? (() => undefined);
  }

  /**
   * Queues an event. With `sameAs` (what identifies the content read), an
   * identical read already waiting is counted instead of queued again.
   */
  record(actor: Actor, entry: AuditEntry, at: Date, sameAs?: string): void {
    const p = actor.principal;
    const key =
      sameAs === undefined
        ? `#${this.sequence++}`
        : `${entry.action}|${p?.kind}:${p && p.kind !== 'session' ? p.id : p?.sessionId}|${actor.ip}|${entry.targetId}|${sameAs}`;
    const same = this.pending.get(key);
    if (same) {
      same.count++;
      same.lastAt = at;
      return;
    }
    this.pending.set(key, {
      actor,
      entry,
      at,
      mergeable: sameAs !== undefined,
      count: 1,
      lastAt: at,
    });
    if (this.pending.size >= this.maxBatch) void this.flush();
    else this.schedule(this.flushIntervalMs);
  }

  /** Events waiting in memory to be written (distinct ones, and those a failed write kept). */
  get size(): number {
    return this.pending.size + this.failed.length;
  }

  /** Writes everything recorded so far; resolves when it is stored. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const rows = [...this.failed, ...[...this.pending.values()].map(rowOfPending)];
    this.failed = [];
    this.pending = new Map();
    if (rows.length > 0) {
      this.writing = this.writing.then(() =>
        this.db
          .transaction()
          .execute((trx) => insertAuditRows(trx, rows))
          .catch((err: unknown) => this.retryLater(rows, err)),
      );
    }
    return this.writing;
  }

  /** Final flush at shutdown; a failure is reported, not retried. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => void this.flush(), delayMs);
    this.timer.unref();
  }

  private retryLater(rows: Insertable<AuditEventTable>[], err: unknown): void {
    this.failed = [...rows, ...this.failed];
    const dropped = Math.max(0, this.failed.length - this.maxPending);
    if (dropped > 0) this.failed.splice(0, dropped);
    this.onError(err, dropped);
    this.schedule(this.flushIntervalMs * 4);
  }
}

function rowOfPending(event: PendingEvent): Insertable<AuditEventTable> {
  if (!event.mergeable) return auditRow(event.actor, event.entry, event.at);
  const data = {
    ...event.entry.data,
    count: event.count,
    ...(event.count > 1 ? { last_at: event.lastAt.toISOString() } : {}),
  };
  return auditRow(event.actor, { ...event.entry, data }, event.at);
}
