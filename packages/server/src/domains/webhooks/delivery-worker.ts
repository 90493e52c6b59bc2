import { randomInt } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { SharedDeps } from '../../shared-deps.js';
import { audit, SYSTEM_ACTOR } from '../audit/audit.js';
import { SecretUnavailableError, signingSecrets } from './secret-box.js';
import { sendWebhook, type SendResult } from './sender.js';
import { signatureHeaders } from './signing.js';
import * as repo from './webhooks.repo.js';

/** The longest wait between two attempts of one delivery (before jitter). */
export const RETRY_MAX_MS = 4 * 3600_000;
/** How long a claimed queue stays reserved for the worker that claimed it; renewed per attempt. */
const LEASE_MS = 2 * 60_000;
const BATCH = 20;
/** How long the delivery log keeps a finished delivery. */
export const LOG_RETENTION_MS = 30 * 86_400_000;
/** Finished deliveries deleted per pass at most (the rest go in the next passes). */
const PRUNE_BATCH = 1000;
/** Deliveries one claim sends in a row before giving other webhooks their turn. */
const PER_CLAIM = 50;

/**
 * The wait before attempt `attempts + 1`: the base doubled per failed attempt,
 * at most `RETRY_MAX_MS`, then "equal jitter" (half fixed, half random) so
 * receivers that failed together are not retried together.
 */
export function retryDelayMs(attempts: number, baseMs: number): number {
  const exponential = Math.min(baseMs * 2 ** Math.max(0, attempts - 1), RETRY_MAX_MS);
  const half = Math.floor(exponential / 2);
  return half + randomInt(0, Math.max(1, exponential - half));
}

/**
 * Turns change-feed events into deliveries. `pending(db, webhook)` returns the
 * events after the webhook's cursor that it should receive (filtered by its
 * environments and kinds) and the id to move the cursor to.
 */
export interface DeliverySource {
  pending(
    db: Kysely<Database>,
    webhook: repo.WebhookRow,
  ): Promise<{ deliveries: repo.NewDelivery[]; cursor: string | null }>;
}

type Deps = Pick<SharedDeps, 'db' | 'clock' | 'config'> & {
  log: FastifyBaseLogger;
  source: DeliverySource;
};

/** Thrown inside a transaction to roll it back when another instance moved the cursor first. */
class CursorMoved extends Error {}

/**
 * Delivers webhooks from their durable queues (`webhook_deliveries`): polls
 * every `OUTBOX_POLL_MS` and whenever woken after a commit. Each webhook's
 * queue is claimed by one worker at a time (a lease on its row, taken with a
 * conditional update), so several instances on one database share the work
 * and a queue is sent in order. At-least-once: a delivery whose answer was
 * lost is sent again, with the same `webhook-id`.
 */
export class WebhookWorker {
  /** Attempts that failed since start (`coffer_webhook_failed_attempts_total`). */
  failedAttempts = 0;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private wokenWhileRunning = false;
  private started = false;
  /** Projects whose feed may hold new events; `all` after a poll or an unknown project's change. */
  private changed: Set<string> | 'all' = 'all';

  constructor(private readonly deps: Deps) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    this.run();
  }

  /**
   * Look for due deliveries now (after a commit that queued some), and for
   * new events of `projectId` (after a change committed; null: any project).
   */
  wake(projectId?: string | null): void {
    if (!this.started) return;
    if (projectId === null) this.changed = 'all';
    else if (projectId !== undefined && this.changed !== 'all') this.changed.add(projectId);
    if (this.running) this.wokenWhileRunning = true;
    else this.run();
  }

  async stop(): Promise<void> {
    this.started = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private run(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.pass()
      .catch((err: unknown) => this.deps.log.error({ err }, 'webhook delivery pass failed'))
      .finally(() => {
        this.running = null;
        if (!this.started) return;
        if (this.wokenWhileRunning) {
          this.wokenWhileRunning = false;
          this.run();
        } else {
          this.timer = setTimeout(() => {
            this.changed = 'all';
            this.run();
          }, this.deps.config.outboxPollMs);
          this.timer.unref();
        }
      });
  }

  private async pass(): Promise<void> {
    const changed = this.changed;
    this.changed = new Set();
    if (changed === 'all') await this.enqueueNewEvents(null);
    else for (const projectId of changed) await this.enqueueNewEvents(projectId);
    await this.deliverDue();
    if (changed === 'all') await this.pruneLog();
  }

  /**
   * For every enabled webhook (of one project, or of all), the feed's new
   * events become deliveries and its cursor moves, in one transaction.
   */
  async enqueueNewEvents(projectId: string | null): Promise<number> {
    const db = this.deps.db.kysely;
    let queued = 0;
    for (const webhook of await repo.enabledWebhooks(db, projectId)) {
      try {
        queued += await db.transaction().execute(async (trx) => {
          const { deliveries, cursor } = await this.deps.source.pending(trx, webhook);
          if (cursor === null || cursor === webhook.event_cursor) return 0;
          if (!(await repo.advanceCursor(trx, webhook.id, webhook.event_cursor, cursor)))
            throw new CursorMoved();
          await repo.enqueueDeliveries(
            trx,
            webhook.id,
            deliveries,
            this.deps.clock.now().toISOString(),
          );
          return deliveries.length;
        });
      } catch (err) {
        if (!(err instanceof CursorMoved)) throw err;
      }
    }
    return queued;
  }

  /** Forgets finished deliveries older than `LOG_RETENTION_MS` (on the poll, not after every write). */
  async pruneLog(): Promise<number> {
    const before = new Date(this.deps.clock.now().getTime() - LOG_RETENTION_MS).toISOString();
    return repo.pruneFinished(this.deps.db.kysely, before, PRUNE_BATCH);
  }

  /** Sends what is due, one claimed queue at a time; returns how many attempts were made. */
  async deliverDue(): Promise<number> {
    const db = this.deps.db.kysely;
    let attempted = 0;
    for (;;) {
      const now = this.deps.clock.now();
      const ids = await repo.findDueWebhookIds(db, now.toISOString(), BATCH);
      if (ids.length === 0) return attempted;
      let claimedAny = false;
      for (const id of ids) {
        const lease = this.leaseFrom(this.deps.clock.now());
        const webhook = await repo.claimWebhook(db, id, now.toISOString(), lease);
        if (!webhook) continue;
        claimedAny = true;
        attempted += await this.deliverQueue(webhook, lease);
      }
      if (!claimedAny) return attempted;
    }
  }

  private leaseFrom(now: Date): string {
    return new Date(now.getTime() + LEASE_MS).toISOString();
  }

  /** Sends a claimed queue in order until it is empty, its head must wait, or it was sent `PER_CLAIM`. */
  private async deliverQueue(webhook: repo.WebhookRow, claimed: string): Promise<number> {
    const db = this.deps.db.kysely;
    let lease = claimed;
    let sent = 0;
    try {
      while (sent < PER_CLAIM) {
        const head = await repo.headDelivery(db, webhook.id);
        const now = this.deps.clock.now();
        if (!head || head.next_attempt_at > now.toISOString()) break;
        const renewed = this.leaseFrom(now);
        if (!(await repo.renewLease(db, webhook.id, lease, renewed))) return sent;
        lease = renewed;
        const current = await repo.webhookById(db, webhook.id);
        if (!current || current.enabled !== 1) break;
        sent++;
        if (!(await this.attempt(current, head))) break;
      }
    } finally {
      await repo.releaseWebhook(db, webhook.id, lease);
    }
    return sent;
  }

  /** One attempt at the head delivery; true when it is done with (delivered or given up). */
  private async attempt(webhook: repo.WebhookRow, delivery: repo.DeliveryRow): Promise<boolean> {
    const { db: database, clock, config, log } = this.deps;
    const db = database.kysely;
    const settings = config.webhooks;
    await repo.countAttempt(db, delivery.id);
    const attempt = delivery.attempts + 1;
    const started = clock.now();
    let result: SendResult;
    try {
      const secrets = signingSecrets(webhook, started.toISOString(), settings.secretKey);
      const timestamp = Math.floor(started.getTime() / 1000);
      const headers = signatureHeaders(secrets, delivery.id, timestamp, delivery.payload);
      result = await sendWebhook(webhook.url, headers, delivery.payload, settings);
    } catch (err) {
      if (!(err instanceof SecretUnavailableError)) throw err;
      result = {
        ok: false,
        statusCode: null,
        durationMs: 0,
        error: err.message,
        responseExcerpt: null,
      };
    }
    const at = clock.now();
    if (!result.ok) this.failedAttempts++;
    // The attempt and what it means for the delivery commit together, so the
    // log never shows an attempt whose consequence (retry time, status) is missing.
    const outcome = await db.transaction().execute(async (trx) => {
      // Deleted (with its queue) while the attempt was under way: nothing to record.
      if (!(await repo.deliveryExists(trx, delivery.id))) return 'done' as const;
      await repo.insertAttempt(trx, {
        delivery_id: delivery.id,
        attempt,
        started_at: started.toISOString(),
        duration_ms: result.durationMs,
        status_code: result.statusCode,
        outcome: result.ok ? 'delivered' : 'failed',
        error: result.error,
        response_excerpt: result.responseExcerpt,
      });
      return this.settle(trx, webhook, delivery, attempt, result, started, at);
    });
    if (outcome === 'disabled') {
      log.warn(
        { webhook: webhook.id, project: webhook.project_id },
        'webhook disabled after sustained failure',
      );
    }
    return outcome !== 'retry';
  }

  /** What one attempt's result does to its delivery and webhook, in the attempt's transaction. */
  private async settle(
    trx: Kysely<Database>,
    webhook: repo.WebhookRow,
    delivery: repo.DeliveryRow,
    attempt: number,
    result: SendResult,
    started: Date,
    at: Date,
  ): Promise<'done' | 'retry' | 'disabled'> {
    const settings = this.deps.config.webhooks;
    const atText = at.toISOString();
    if (result.ok) {
      await repo.updateDelivery(trx, delivery.id, {
        status: 'delivered',
        last_status_code: result.statusCode,
        last_error: null,
        finished_at: atText,
      });
      if (webhook.failing_since !== null) {
        await repo.updateWebhook(trx, webhook.id, { failing_since: null });
      }
      return 'done';
    }
    const failingSince = webhook.failing_since ?? started.toISOString();
    const next = at.getTime() + retryDelayMs(attempt, settings.retryBaseMs);
    // Sustained failure: every attempt since `failingSince` failed (the queue
    // is sent in order, so that includes this delivery's), and the next retry
    // would fall beyond the window.
    if (next - Date.parse(failingSince) > settings.retryWindowSeconds * 1000) {
      await this.disable(trx, webhook, failingSince, delivery, result, at);
      return 'disabled';
    }
    if (webhook.failing_since === null) {
      await repo.updateWebhook(trx, webhook.id, { failing_since: failingSince });
    }
    await repo.updateDelivery(trx, delivery.id, {
      next_attempt_at: new Date(next).toISOString(),
      last_status_code: result.statusCode,
      last_error: result.error,
    });
    return 'retry';
  }

  /**
   * Sustained failure. The webhook is disabled, what is still queued is marked failed, and the audit
   * log records it (no actor: the server did it).
   */
  private async disable(
    trx: Kysely<Database>,
    webhook: repo.WebhookRow,
    failingSince: string,
    delivery: repo.DeliveryRow,
    result: SendResult,
    at: Date,
  ): Promise<void> {
    const atText = at.toISOString();
    await repo.updateDelivery(trx, delivery.id, {
      status: 'failed',
      last_status_code: result.statusCode,
      last_error: result.error,
      finished_at: atText,
    });
    await repo.failPending(trx, webhook.id, 'the webhook was disabled after failing', atText);
    await repo.updateWebhook(trx, webhook.id, {
      enabled: 0,
      disabled_reason: 'failing',
      disabled_at: atText,
      failing_since: failingSince,
      updated_at: atText,
    });
    await audit(
      trx,
      { actor: SYSTEM_ACTOR, projectId: webhook.project_id, at },
      'webhook.disabled',
      ['webhook', webhook.id],
      {
        reason: 'failing',
        failing_since: failingSince,
        last_error: result.error,
        last_status_code: result.statusCode,
      },
    );
  }
}
