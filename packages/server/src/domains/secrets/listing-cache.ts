import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { SUBSCRIBER_OPTIONS } from '../../redis-options.js';

/** A serialized secret listing, ready to send as is. */
export interface CachedListing {
  readonly body: Buffer;
  /** Strong validator: a hash of the exact bytes of `body`. */
  readonly etag: string;
  /** Names on this page, for the audit event of a token's read (never values). */
  readonly names: readonly string[];
}

interface Entry extends CachedListing {
  readonly environmentId: string;
}

/** What identifies one serialized listing. Readers and non-readers never share an entry. */
interface ListingKey {
  environmentId: string;
  /** `environments.revision`, read in the same query as the caller's access. */
  revision: number;
  variant: 'values' | 'names';
  page: number;
  per_page: number;
  sort: string;
  order: string;
}

interface ListingCacheOptions {
  /** Upper bound of the cached bodies' total size; least recently used entries go first. */
  maxBytes?: number;
  /** With several instances: invalidations are published here, and a duplicate connection subscribes. */
  redis?: Redis;
  channel?: string;
  onError?: (err: unknown) => void;
}

const DEFAULT_LISTING_CACHE_BYTES = 32 * 1024 * 1024;

/** How long environment invalidations gather before they are published together. */
const PUBLISH_DELAY_MS = 20;

export const etagOf = (body: Buffer) =>
  `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;

/**
 * In-memory cache of serialized environment listings.
 *
 * Correctness does not depend on invalidation: every key carries the
 * environment's revision, which the request reads from the database together
 * with the caller's access, and every write bumps it in its transaction. So a
 * write through any instance is visible through every instance at once, and an
 * old body can never be served for a new revision. Invalidation (local after
 * commit, and over Redis pub/sub to the other instances) frees the memory of
 * outdated entries promptly, and of deleted environments at all.
 */
export class ListingCache {
  /** Lookups answered from the cache, and not (read by the metrics). */
  hits = 0;
  misses = 0;
  private readonly entries = new Map<string, Entry>();
  /** environment id → keys of its cached listings, for invalidation. */
  private readonly byEnvironment = new Map<string, { projectId: string; keys: Set<string> }>();
  private bytes = 0;
  private readonly maxBytes: number;
  private readonly instanceId = randomBytes(9).toString('base64url');
  private readonly channel: string;
  private readonly publisher: Redis | null;
  private readonly subscriber: Redis | null;
  private readonly subscribed: Promise<void>;
  private readonly onError: (err: unknown) => void;
  /** Environments dropped here whose invalidation waits to be published. */
  private readonly unpublished = new Set<string>();
  private publishTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(options: ListingCacheOptions = {}) {
    this.maxBytes = options.maxBytes ?? DEFAULT_LISTING_CACHE_BYTES;
    this.channel = options.channel ?? 'coffer:listing-invalidations';
    this.onError = options.onError ?? (() => undefined);
    this.publisher = options.redis ?? null;
    // A subscribing connection of its own (see SUBSCRIBER_OPTIONS).
    this.subscriber = this.publisher?.duplicate(SUBSCRIBER_OPTIONS) ?? null;
    this.subscribed = Promise.resolve();
    if (this.subscriber) {
      this.subscriber.on('message', (channel: string, message: string) => {
        if (channel === this.channel) this.receive(message);
      });
      // Connection errors are logged by the shared client; missing a message only
      // delays freeing memory (revisions keep every answer correct).
      this.subscriber.on('error', () => undefined);
      this.subscribed = this.subscriber.subscribe(this.channel).then(
        () => undefined,
        (err: unknown) => this.onError(err),
      );
    }
  }

  /** Resolves once this instance listens for other instances' invalidations (or failed to). */
  ready(): Promise<void> {
    return this.subscribed;
  }

  static keyOf(key: ListingKey): string {
    return `${key.environmentId}:${key.revision}:${key.variant}:${key.page}:${key.per_page}:${key.sort}:${key.order}`;
  }

  get(key: string): CachedListing | undefined {
    const entry = this.entries.get(key);
    if (entry) this.hits++;
    else this.misses++;
    if (entry) {
      // Re-insert so Map order stays least-recently-used first.
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  set(key: string, projectId: string, environmentId: string, listing: CachedListing): void {
    const size = listing.body.length;
    if (size > this.maxBytes) return;
    this.drop(key);
    this.entries.set(key, { ...listing, environmentId });
    this.bytes += size;
    let group = this.byEnvironment.get(environmentId);
    if (!group) {
      group = { projectId, keys: new Set() };
      this.byEnvironment.set(environmentId, group);
    }
    group.keys.add(key);
    for (const oldest of this.entries.keys()) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(oldest);
    }
  }

  /**
   * Drops the listings of these environments here at once and, with Redis, on
   * every other instance shortly after: the invalidations of `PUBLISH_DELAY_MS`
   * travel in one message (they only free memory, so they can wait; a busy
   * environment's writes each cost a publish otherwise).
   */
  invalidateEnvironments(environmentIds: readonly string[]): void {
    if (environmentIds.length === 0) return;
    this.dropEnvironments(environmentIds);
    if (!this.publisher) return;
    for (const id of environmentIds) this.unpublished.add(id);
    if (!this.publishTimer) {
      this.publishTimer = setTimeout(() => this.publishUnpublished(), PUBLISH_DELAY_MS);
      this.publishTimer.unref();
    }
  }

  /** Drops every listing of a project (re-key, project deletion) here and on every other instance. */
  invalidateProject(projectId: string): void {
    this.dropProject(projectId);
    this.publish({ project: projectId });
  }

  /** How many listings and bytes are held (for operators and tests). */
  stats(environmentId?: string): { entries: number; bytes: number } {
    if (environmentId === undefined) return { entries: this.entries.size, bytes: this.bytes };
    const keys = this.byEnvironment.get(environmentId)?.keys ?? new Set<string>();
    let bytes = 0;
    for (const key of keys) bytes += this.entries.get(key)?.body.length ?? 0;
    return { entries: keys.size, bytes };
  }

  async close(): Promise<void> {
    this.publishUnpublished();
    this.entries.clear();
    this.byEnvironment.clear();
    this.bytes = 0;
    if (this.subscriber) {
      await this.subscriber.quit().catch(() => this.subscriber?.disconnect());
    }
  }

  private publishUnpublished(): void {
    if (this.publishTimer) clearTimeout(this.publishTimer);
    this.publishTimer = null;
    if (this.unpublished.size === 0) return;
    const environments = [...this.unpublished];
    this.unpublished.clear();
    this.publish({ environments });
  }

  private publish(message: { environments?: readonly string[]; project?: string }): void {
    if (!this.publisher) return;
    const payload = JSON.stringify({ from: this.instanceId, ...message });
    this.publisher.publish(this.channel, payload).catch(this.onError);
  }

  private receive(raw: string): void {
    let message: { from?: unknown; environments?: unknown; project?: unknown };
    try {
      message = JSON.parse(raw) as typeof message;
    } catch {
      return;
    }
    if (message.from === this.instanceId) return;
    if (Array.isArray(message.environments)) {
      this.dropEnvironments(message.environments.filter((id) => typeof id === 'string'));
    }
    if (typeof message.project === 'string') this.dropProject(message.project);
  }

  private dropEnvironments(environmentIds: readonly string[]): void {
    for (const id of environmentIds) {
      const group = this.byEnvironment.get(id);
      if (!group) continue;
      for (const key of [...group.keys]) this.drop(key);
    }
  }

  private dropProject(projectId: string): void {
    const ids = [...this.byEnvironment].filter(([, g]) => g.projectId === projectId);
    this.dropEnvironments(ids.map(([id]) => id));
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.body.length;
    const group = this.byEnvironment.get(entry.environmentId);
    group?.keys.delete(key);
    if (group && group.keys.size === 0) this.byEnvironment.delete(entry.environmentId);
  }
}
