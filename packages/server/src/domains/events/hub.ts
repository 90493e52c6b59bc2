import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { FeedEvent } from './events.js';
import { chainRange } from './events.repo.js';
import { readEvents } from './feed.js';
import type { ChangeNotifier } from './notifier.js';

/** Receives a project's new events, in order, each exactly once per hub read. */
export type FeedListener = (events: readonly FeedEvent[]) => void;

interface ProjectFeed {
  /** The id of the last event read for this project (the chain position). */
  cursor: number;
  /** Resolves once the cursor is known. */
  ready: Promise<void>;
  listeners: Set<FeedListener>;
  reading: boolean;
  /** A notification arrived during a read: read again after it. */
  again: boolean;
}

interface FeedHubOptions {
  /** Safety net: how often a watched project's log is read without a notification. */
  pollMs: number;
  onError?: (err: unknown) => void;
}

/**
 * The instance's fan-out: for every project with at least one listener (an
 * open stream, a webhook dispatcher), ONE reader follows the audit log from
 * where it was and hands each batch of new events to every listener. So a
 * write seen by a thousand streams costs one query, not a thousand; each
 * listener filters what its credential may see. Woken by the `ChangeNotifier`
 * (this instance's writes at once, other instances' through Redis) and, as a
 * safety net for missed notifications and the server's own sweeps, by a poll.
 */
export class FeedHub {
  private readonly feeds = new Map<string, ProjectFeed>();
  private readonly unsubscribe: () => void;
  private readonly poll: ReturnType<typeof setInterval>;
  private readonly onError: (err: unknown) => void;

  constructor(
    private readonly db: Kysely<Database>,
    notifier: ChangeNotifier,
    options: FeedHubOptions,
  ) {
    this.onError = options.onError ?? (() => undefined);
    this.unsubscribe = notifier.subscribe((projectId) => {
      if (projectId === null) for (const id of this.feeds.keys()) this.wake(id);
      else this.wake(projectId);
    });
    this.poll = setInterval(() => {
      for (const id of this.feeds.keys()) this.wake(id);
    }, options.pollMs);
    this.poll.unref();
  }

  /** Projects followed on this instance. */
  get size(): number {
    return this.feeds.size;
  }

  /**
   * Follows a project: `listener` receives every event committed after this
   * call resolves (and possibly some just before; listeners skip ids they
   * have). Returns the function that stops it.
   */
  async listen(projectId: string, listener: FeedListener): Promise<() => void> {
    let feed = this.feeds.get(projectId);
    if (!feed) {
      const created: ProjectFeed = {
        cursor: 0,
        ready: Promise.resolve(),
        listeners: new Set(),
        reading: false,
        again: false,
      };
      created.ready = chainRange(this.db, projectId).then((range) => {
        created.cursor = range.last;
      });
      this.feeds.set(projectId, created);
      feed = created;
    }
    feed.listeners.add(listener);
    const joined = feed;
    try {
      await joined.ready;
    } catch (err) {
      this.leave(projectId, joined, listener);
      throw err;
    }
    return () => this.leave(projectId, joined, listener);
  }

  private leave(projectId: string, feed: ProjectFeed, listener: FeedListener): void {
    feed.listeners.delete(listener);
    if (feed.listeners.size === 0 && this.feeds.get(projectId) === feed) {
      this.feeds.delete(projectId);
    }
  }

  /** Reads the project's new events and hands them out (one read at a time per project). */
  wake(projectId: string): void {
    const feed = this.feeds.get(projectId);
    if (!feed) return;
    if (feed.reading) {
      feed.again = true;
      return;
    }
    feed.reading = true;
    void this.read(projectId, feed).finally(() => {
      feed.reading = false;
      if (feed.again) {
        feed.again = false;
        this.wake(projectId);
      }
    });
  }

  private async read(projectId: string, feed: ProjectFeed): Promise<void> {
    try {
      await feed.ready;
      for (;;) {
        const { events, more } = await readEvents(this.db, projectId, feed.cursor);
        if (events.length > 0) {
          feed.cursor = events[events.length - 1]!.id;
          for (const listener of feed.listeners) {
            try {
              listener(events);
            } catch (err) {
              this.onError(err);
            }
          }
        }
        if (!more) return;
      }
    } catch (err) {
      this.onError(err);
    }
  }

  close(): void {
    this.unsubscribe();
    clearInterval(this.poll);
    this.feeds.clear();
  }
}
