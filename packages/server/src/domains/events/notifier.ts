import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { listenOnChannel, type ChannelListener } from '../../redis-channel.js';

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
 * `after-write.ts`), here in-process and, with Redis, on every other
 * instance through pub/sub. Without Redis (SQLite, one instance) it is
 * in-process only; the feed's poll (`EVENTS_POLL_MS`) bounds how late a change
 * made elsewhere (or by the server's own sweeps) is seen.
 */
export class ChangeNotifier {
  private readonly listeners = new Set<ChangeListener>();
  private readonly instanceId = randomBytes(9).toString('base64url');
  private readonly channel: string;
  private readonly publisher: Redis | null;
  private readonly subscriber: ChannelListener | null;
  private readonly onError: (err: unknown) => void;

  constructor(options: NotifierOptions = {}) {
    this.channel = options.channel ?? 'coffer:events';
    this.onError = options.onError ?? (() => undefined);
    this.publisher = options.redis ?? null;
    // A missed message is caught by the hub's poll.
    this.subscriber = this.publisher
      ? listenOnChannel(this.publisher, this.channel, (m) => this.receive(m), this.onError)
      : null;
  }

  /** Resolves once this instance listens to the others (or failed to). */
  ready(): Promise<void> {
    return this.subscriber?.subscribed ?? Promise.resolve();
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
    await this.subscriber?.close();
  }
}
