import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Transporter } from 'nodemailer';
import type { SharedDeps } from '../../shared-deps.js';
import {
  claimMessage,
  findDueMessageIds,
  markFailed,
  markRetry,
  markSent,
  type OutboxRow,
} from './outbox.repo.js';
import type { EmailMessage } from './outbox.js';

/** After this many failed attempts a message is `failed` and left for an operator. */
export const MAX_ATTEMPTS = 8;
/** First retry after 30 s, doubling each time, at most an hour apart. */
export const RETRY_BASE_MS = 30_000;
export const RETRY_MAX_MS = 60 * 60_000;
/** How long a claimed message stays reserved for the worker that claimed it. */
const LEASE_MS = 2 * 60_000;
const BATCH = 20;

const retryDelayMs = (attempts: number): number =>
  Math.min(RETRY_BASE_MS * 2 ** Math.max(0, attempts - 1), RETRY_MAX_MS);

type Deps = Pick<SharedDeps, 'db' | 'clock' | 'config'> & { log: FastifyBaseLogger };

/**
 * Delivers the outbox: polls every `OUTBOX_POLL_MS` and whenever woken after a
 * commit that wrote a message. Safe with several server instances on one
 * database (each message is claimed by exactly one). With `SMTP_URL` it sends
 * over SMTP; without, it writes each message to `$DATA_DIR/outbox/<id>.eml`.
 * One per app (`compose.ts`): started when the app is ready, stopped on close.
 */
export class OutboxWorker {
  /** Delivery attempts that failed since start, retried or not (read by the metrics). */
  deliveryFailures = 0;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private wokenWhileRunning = false;
  private started = false;
  /** Made on the first delivery: nodemailer is loaded only once there is mail. */
  private transport: Promise<Transporter> | null = null;
  private readonly toFile: boolean;

  constructor(private readonly deps: Deps) {
    this.toFile = deps.config.smtpUrl === null;
  }

  private mailer(): Promise<Transporter> {
    const { smtpUrl } = this.deps.config;
    return (this.transport ??= import('nodemailer').then(({ default: nodemailer }) =>
      smtpUrl
        ? nodemailer.createTransport({
            url: smtpUrl,
            connectionTimeout: 10_000,
            greetingTimeout: 10_000,
            socketTimeout: 30_000,
          } as Parameters<typeof nodemailer.createTransport>[0])
        : nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' }),
    ));
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.run();
  }

  /** Look for due messages now (call after committing an outbox row). */
  wake(): void {
    if (!this.started) return;
    if (this.running) this.wokenWhileRunning = true;
    else this.run();
  }

  async stop(): Promise<void> {
    this.started = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    const transport = this.transport;
    this.transport = null;
    (await transport)?.close();
  }

  private run(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.deliverDue()
      .then(() => undefined)
      .catch((err: unknown) => this.deps.log.error({ err }, 'outbox delivery pass failed'))
      .finally(() => {
        this.running = null;
        if (!this.started) return;
        if (this.wokenWhileRunning) {
          this.wokenWhileRunning = false;
          this.run();
        } else {
          this.timer = setTimeout(() => this.run(), this.deps.config.outboxPollMs);
          this.timer.unref();
        }
      });
  }

  /** Delivers every message that is due now; returns how many this worker handled. */
  async deliverDue(): Promise<number> {
    const db = this.deps.db.kysely;
    let handled = 0;
    for (;;) {
      const now = this.deps.clock.now();
      const at = now.toISOString();
      const ids = await findDueMessageIds(db, at, BATCH);
      if (ids.length === 0) return handled;
      for (const id of ids) {
        const leaseUntil = new Date(now.getTime() + LEASE_MS).toISOString();
        const row = await claimMessage(db, id, at, leaseUntil);
        if (!row) continue;
        await this.deliver(row);
        handled++;
      }
    }
  }

  private async deliver(row: OutboxRow): Promise<void> {
    const db = this.deps.db.kysely;
    const { log, config } = this.deps;
    try {
      if (row.kind !== 'email') throw new Error(`unknown outbox message kind "${row.kind}"`);
      const message = JSON.parse(row.payload) as EmailMessage;
      const info = await (
        await this.mailer()
      ).sendMail({
        from: config.mailFrom,
        to: message.to,
        subject: message.subject,
        text: message.text,
        html: message.html,
      });
      if (this.toFile) {
        const dir = join(config.dataDir, 'outbox');
        await mkdir(dir, { recursive: true, mode: 0o700 });
        const file = join(dir, `${row.id}.eml`);
        await writeFile(file, info.message as Buffer, { mode: 0o600 });
        // The body may hold a one-time link: log where it is, never what it says.
        log.info({ to: message.to, file }, 'e-mail written to the outbox directory (no SMTP_URL)');
      } else {
        log.info({ to: message.to, id: row.id }, 'e-mail sent');
      }
      const kept = JSON.stringify({ to: message.to, subject: message.subject });
      await markSent(db, row.id, this.deps.clock.now().toISOString(), kept);
    } catch (err) {
      this.deliveryFailures++;
      const reason = (err instanceof Error ? err.message : String(err)).slice(0, 500);
      if (row.attempts >= MAX_ATTEMPTS) {
        await markFailed(db, row.id, reason);
        log.error(
          { id: row.id, attempts: row.attempts, reason },
          'e-mail delivery failed for good',
        );
      } else {
        const next = this.deps.clock.now().getTime() + retryDelayMs(row.attempts);
        await markRetry(db, row.id, new Date(next).toISOString(), reason);
        log.warn(
          { id: row.id, attempts: row.attempts, reason },
          'e-mail delivery failed; will retry',
        );
      }
    }
  }
}
