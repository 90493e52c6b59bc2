import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

/** Called when a project's audit log may hold new events (`null`: some project, unknown which). */
export type ChangeListener = (projectId: string | null) => void;

interface NotifierOptions {
  /** With several instances: every notification is published here, and a duplicate connection subscribes. */
  redis?: Redis | null;
  channel?: string;
  onError?: (err: unknown) => void;
}

/**
 * Tells the change feed that a write COMMITTED: the feed then reads what is
 * new from the audit log, which stays the only record of what happened. A
 * notification carries no event, only the project's id, so a lost or doubled
 * one costs a read, never a wrong event. Called after the write commits (the
 * app does it once a mutating request has been answered; see
 * `events.routes.ts`), here in-process and, with Redis, on every other
 * instance through pub/sub. Without Redis (SQLite, one instance) it is
 * in-process only; the feed's poll (`EVENTS_POLL_MS`) bounds how late a change
 * made elsewhere (or by the server's own sweeps) is seen.
 */
export class ChangeNotifier {
  private readonly listeners = new Set<ChangeListener>();
  private readonly instanceId = randomBytes(9).toString('base64url');
  private readonly channel: string;
  private readonly publisher: Redis | null;
  private readonly subscriber: Redis | null;
  private readonly subscribed: Promise<void>;
  private readonly onError: (err: unknown) => void;

  constructor(options: NotifierOptions = {}) {
    this.channel = options.channel ?? 'coffer:events';
    this.onError = options.onError ?? (() => undefined);
    this.publisher = options.redis ?? null;
    this.subscriber =
      this.publisher?.duplicate({ lazyConnect: false, enableOfflineQueue: true }) ?? null;
    this.subscribed = Promise.resolve();
    if (this.subscriber) {
      this.subscriber.on('message', (channel: string, message: string) => {
        if (channel === this.channel) this.receive(message);
      });
      // The shared client logs connection errors; a missed message is caught by the poll.
      this.subscriber.on('error', () => undefined);
      this.subscribed = this.subscriber.subscribe(this.channel).then(
        () => undefined,
        (err: unknown) => this.onError(err),
      );
    }
  }

  /** Resolves once this instance listens to the others (or failed to). */
  ready(): Promise<void> {
    return this.subscribed;
  }

  subscribe(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** After a write of `projectId` (null: unknown project) committed: here at once, and on every instance. */
  notify(projectId: string | null): void {
    this.emit(projectId);
    if (this.publisher) {
      const message = JSON.stringify({ from: this.instanceId, project: projectId });
      this.publisher.publish(this.channel, message).catch(this.onError);
    }
  }

  private receive(message: string): void {
    try {
      const parsed = JSON.parse(message) as { from?: unknown; project?: unknown };
      if (parsed.from === this.instanceId) return;
      this.emit(typeof parsed.project === 'string' ? parsed.project : null);
    } catch (err) {
      this.onError(err);
    }
  }

  private emit(projectId: string | null): void {
    for (const listener of this.listeners) {
      try {
        listener(projectId);
      } catch (err) {
        this.onError(err);
      }
    }
  }

  async close(): Promise<void> {
    this.listeners.clear();
    await this.subscriber?.quit().catch(() => this.subscriber?.disconnect());
  }
}
