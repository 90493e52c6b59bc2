import { CofferApiError, CofferNetworkError } from './errors.js';
import { apiPath, type CofferClient } from './http.js';
import {
  listSecretsAndSources,
  type ReadOptions,
  type SecretScope,
  type SecretSource,
} from './secrets.js';

// ---- The feed's shapes (docs/events.md) ------------------------------------------

export interface FeedActor {
  kind: 'user' | 'api_key' | 'ci_token';
  user_id: string | null;
  name: string | null;
}

interface FeedEventBase {
  /** Position in the project's audit chain: increases with every change. */
  id: number;
  project_id: string;
  at: string;
  actor: FeedActor | null;
}

export interface FeedEnvironmentRef {
  id: string;
  slug: string;
}

export type FeedEvent = FeedEventBase &
  (
    | {
        type: 'secrets.changed';
        environment: FeedEnvironmentRef;
        revision: number | null;
        names: string[];
        changes: {
          name: string;
          change: 'created' | 'updated' | 'deleted' | 'rolled_back';
          version: number;
        }[];
      }
    | {
        type: 'environment.created' | 'environment.deleted';
        environment: FeedEnvironmentRef & { name: string };
      }
    | {
        type: 'environment.renamed';
        environment: FeedEnvironmentRef & { name: string };
        before: { slug: string; name: string };
      }
    | { type: 'vault.rekeyed'; epoch: number }
    | {
        type: 'member.added';
        member: { id: string; user_id: string; role: string; status: 'invited' | 'active' };
      }
    | {
        type: 'member.role_changed';
        member: { id: string; user_id: string; role: string };
        before: { role: string };
      }
    | {
        type: 'member.removed';
        reason: 'removed' | 'declined' | 'expired';
        member: { id: string; user_id: string };
        revoked_tokens: string[];
      }
    | {
        type: 'token.revoked';
        token: { kind: 'api_key' | 'ci_token'; id: string };
        also_revoked: string[];
      }
    | { type: 'project.deleted' }
  );

export type FeedEventType = FeedEvent['type'];

/** The id you resumed from is no longer kept (or unknown): re-read what you keep. */
export interface ResetNotice {
  type: 'reset';
  reason: 'too_old' | 'unknown_id';
  last_id: number;
}

/** The server ended the stream; `reconnect` says whether a new one may succeed. */
export interface EndNotice {
  type: 'end';
  reason:
    | 'credential_revoked'
    | 'credential_expired'
    | 'access_lost'
    | 'access_changed'
    | 'project_deleted'
    | 'shutdown';
  reconnect: boolean;
}

export type WatchItem = FeedEvent | ResetNotice | EndNotice;

// ---- Server-Sent Events over fetch -----------------------------------------------

/** One parsed SSE message. */
export interface SseMessage {
  id: string | null;
  event: string;
  data: string;
  /** A `retry:` the server sent in this message's block, in ms. */
  retry: number | null;
}

/**
 * Parses a `text/event-stream` body (the WHATWG rules: `field: value` lines,
 * a blank line ends a message, `:` lines are comments). Calls `onActivity` for
 * every chunk, heartbeats included, so a caller can detect a dead connection.
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  onActivity: () => void = () => undefined,
): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let message: SseMessage = { id: null, event: 'message', data: '', retry: null };
  let hasData = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onActivity();
      buffer += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (hasData || message.retry !== null) yield message;
          message = { id: null, event: 'message', data: '', retry: null };
          hasData = false;
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') {
          message.data = hasData ? `${message.data}\n${value}` : value;
          hasData = true;
        } else if (field === 'event') message.event = value;
        else if (field === 'id') message.id = value;
        else if (field === 'retry' && /^\d+$/.test(value)) message.retry = Number(value);
      }
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

// ---- watch -----------------------------------------------------------------------

export interface WatchOptions {
  /** Only this environment's events (id or slug), and `vault.rekeyed` / `project.deleted`. */
  environment?: string;
  /** Resume after this event id (what a previous watch last saw). */
  lastEventId?: number;
  /** Stops the watch (the iterator then finishes). */
  signal?: AbortSignal;
  /** First reconnect delay; doubled per failed attempt up to `maxBackoffMs`, with jitter. Default 500 ms. */
  minBackoffMs?: number;
  /** Default 30 s. */
  maxBackoffMs?: number;
  /** No byte (not even a heartbeat) for this long: the connection is dead, reconnect. Default 45 s. */
  idleTimeoutMs?: number;
  /** Called when a stream is live (after any replay), with the id it continues from. */
  onConnected?: (lastEventId: number) => void;
  /** Called when a stream broke and the watch will retry after `delayMs`. */
  onDisconnected?: (error: unknown, delayMs: number) => void;
  /** How to wait before reconnecting; injectable for tests. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Errors a reconnect cannot cure (the credential or project is gone, a bad request). */
const isFinal = (err: unknown) =>
  err instanceof CofferApiError && err.status < 500 && err.status !== 429 && err.status !== 408;

/** A failure that may pass: no answer, or the server busy or briefly away. */
const isTransient = (err: unknown) =>
  err instanceof CofferNetworkError ||
  (err instanceof CofferApiError &&
    (err.status >= 500 || err.status === 429 || err.status === 408));

const abortableSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * The project's change feed as an async iterator: every event the credential
 * may see, in order, each once, across reconnects. A broken connection (server
 * restart, network, a proxy) is reopened with backoff and `Last-Event-ID`, so
 * nothing is missed; a `reset` is yielded when the server no longer keeps what
 * was missed (re-read what you keep). Finishes after yielding an `end` notice
 * that allows no reconnect (the credential was revoked or expired), or when
 * `signal` aborts. Throws on errors a retry cannot cure (401, 403, 404).
 * Events carry no values: fetch and decrypt what changed (see `watchSecrets`).
 * Works in Node and browsers (fetch streaming; no EventSource needed).
 */
export async function* watch(
  client: CofferClient,
  projectId: string,
  options: WatchOptions = {},
): AsyncGenerator<WatchItem> {
  const minBackoff = options.minBackoffMs ?? 500;
  const maxBackoff = options.maxBackoffMs ?? 30_000;
  const idleTimeout = options.idleTimeoutMs ?? 45_000;
  const sleep = options.sleep ?? abortableSleep;
  let lastId: number | null = options.lastEventId ?? null;
  let failures = 0;
  let serverRetry: number | null = null;

  while (!options.signal?.aborted) {
    const controller = new AbortController();
    const abort = () => controller.abort();
    options.signal?.addEventListener('abort', abort, { once: true });
    let idle: ReturnType<typeof setTimeout> | null = null;
    const touch = () => {
      if (idle) clearTimeout(idle);
      idle = setTimeout(() => controller.abort(new Error('the stream went silent')), idleTimeout);
    };
    let failure: unknown = null;
    let ended: EndNotice['reason'] | null = null;
    try {
      touch();
      const response = await client.openStream(apiPath`/v1/projects/${projectId}/events`, {
        query: { environment: options.environment },
        headers: lastId === null ? {} : { 'last-event-id': String(lastId) },
        signal: controller.signal,
      });
      if (!response.body) throw new CofferNetworkError('the stream has no body', null);
      for await (const message of readSse(response.body, touch)) {
        if (message.retry !== null) serverRetry = message.retry;
        if (message.id !== null && /^\d+$/.test(message.id)) lastId = Number(message.id);
        if (message.event === 'ready') {
          failures = 0;
          options.onConnected?.(lastId ?? 0);
          continue;
        }
        if (message.data === '') continue;
        const item = JSON.parse(message.data) as WatchItem;
        yield item;
        if (item.type === 'end') {
          if (!item.reconnect) return;
          ended = item.reason;
          break;
        }
      }
      failure = new CofferNetworkError(
        ended === 'shutdown'
          ? 'the server is restarting'
          : `the stream ended${ended ? ` (${ended})` : ''}`,
        null,
      );
    } catch (err) {
      if (options.signal?.aborted) return;
      if (isFinal(err)) throw err;
      failure = err;
    } finally {
      if (idle) clearTimeout(idle);
      options.signal?.removeEventListener('abort', abort);
      controller.abort();
    }
    failures++;
    const retryAfter = failure instanceof CofferApiError ? failure.retryAfter : null;
    const backoff = Math.min(maxBackoff, minBackoff * 2 ** Math.min(failures - 1, 16));
    const delay =
      retryAfter !== null
        ? retryAfter * 1000
        : failures === 1 && serverRetry !== null
          ? serverRetry
          : Math.round(backoff / 2 + Math.random() * (backoff / 2));
    options.onDisconnected?.(failure, delay);
    await sleep(delay, options.signal);
  }
}

/** What `watchSecrets` yields: the environment's decrypted secrets after a change. */
export interface SecretsSnapshot {
  secrets: Record<string, string>;
  /** The event that led to this read; null for the first read (and after a reset or reconnect gap). */
  event: FeedEvent | null;
  /** The id of the last event of the environment's project this snapshot includes. */
  lastEventId: number;
}

export interface WatchSecretsOptions extends Omit<WatchOptions, 'environment'> {
  /** How values are read (resolved, with overrides, by default; see `ReadOptions`). */
  read?: ReadOptions;
  /**
   * A change left a value that no longer resolves (a referenced secret was
   * deleted, a cycle was made): called with the `SecretReferenceError(s)`, and
   * the watch goes on, yielding again once the values resolve. Absent: the
   * watch throws the error.
   */
  onUnresolvable?: (error: Error) => void;
}

/** One project's change feed as `watchSecrets` follows it. */
interface FollowedFeed {
  /** The server-side filter: one environment, or null for every event (filtered here). */
  filter: string | null;
  stop: AbortController;
}

const isReferenceFailure = (err: unknown) =>
  err instanceof Error &&
  (err.name === 'SecretReferenceError' || err.name === 'SecretReferencesError');

/**
 * The environment's secrets, decrypted, now and whenever they change: yields
 * once at the start, then after every change (a write, a rollback, a re-key, a
 * `reset`) whose re-read differs from the last one yielded. Several events that
 * arrive together cause one read. Ends as `watch` does.
 *
 * Values are resolved, so a change in an environment they refer to is a change
 * too: the environments the last read took values from (`${staging.X}`, and
 * theirs in turn) are followed as well: in the same project on the same feed
 * (then unfiltered, and filtered here), in another project on a second feed of
 * that project. Which ones is worked out again after every read.
 */
export async function* watchSecrets(
  scope: SecretScope,
  env: string,
  options: WatchSecretsOptions = {},
): AsyncGenerator<SecretsSnapshot> {
  const home = scope.projectId;
  const queue: Array<{ project: string; item: WatchItem }> = [];
  let wake: () => void = () => undefined;
  let finished = false;
  let failure: unknown = null;
  /** A feed opened after a read connected: what changed in between is not in it, so read again. */
  let recheck = false;
  const state: { connectedId: number | null } = { connectedId: null };
  // Stops every feed when the caller stops iterating (or aborts).
  const stop = new AbortController();
  const forward = () => stop.abort();
  const feeds = new Map<string, FollowedFeed>();
  /** Per project, the last event id seen: a feed reopened with another filter resumes there. */
  const lastIds = new Map<string, number>();
  /** Per project, the environment ids the last read took values from. */
  let followed = new Map<string, { scope: SecretScope; environments: Set<string> }>();
  const {
    read: readOptions,
    onUnresolvable,
    signal,
    onConnected,
    onDisconnected,
    ...feedOptions
  } = options;

  /** Follows `project`'s feed (replacing the one it had), pumping its items into the queue. */
  function follow(source: SecretScope, filter: string | null) {
    const project = source.projectId;
    feeds.get(project)?.stop.abort();
    const feed: FollowedFeed = { filter, stop: new AbortController() };
    feeds.set(project, feed);
    const end = () => feed.stop.abort();
    stop.signal.addEventListener('abort', end, { once: true });
    const resumeFrom = lastIds.get(project);
    const isHome = project === home;
    let connected = false;
    const events = watch(source.client, project, {
      ...feedOptions,
      signal: feed.stop.signal,
      ...(filter !== null ? { environment: filter } : {}),
      ...(resumeFrom !== undefined ? { lastEventId: resumeFrom } : {}),
      onConnected: (id) => {
        if (!lastIds.has(project)) lastIds.set(project, id);
        if (isHome) {
          state.connectedId ??= id;
          onConnected?.(id);
        } else if (resumeFrom === undefined && !connected) recheck = true;
        connected = true;
        wake();
      },
      // Another project's feed is on the same server: its outages are the home feed's.
      ...(isHome && onDisconnected ? { onDisconnected } : {}),
    });
    void (async () => {
      try {
        for await (const item of events) {
          if (feed.stop.signal.aborted) break;
          if ('id' in item) lastIds.set(project, item.id);
          queue.push({ project, item });
          wake();
        }
      } catch (err) {
        // Another project's feed refusing us (access lost) shows in the next read.
        if (isHome) failure = err;
      } finally {
        stop.signal.removeEventListener('abort', end);
        if (feeds.get(project) === feed && !feed.stop.signal.aborted) {
          feeds.delete(project);
          if (isHome) finished = true;
        }
        wake();
      }
    })();
  }

  /** Follows what the last read came from: the home feed filtered to `env` when that is all. */
  function followSources(sources: readonly SecretSource[]) {
    const next = new Map<string, { scope: SecretScope; environments: Set<string> }>();
    for (const source of sources) {
      const entry = next.get(source.scope.projectId) ?? {
        scope: source.scope,
        environments: new Set<string>(),
      };
      entry.environments.add(source.environmentId);
      next.set(source.scope.projectId, entry);
    }
    followed = next;
    const homeOnly = (next.get(home)?.environments.size ?? 1) <= 1;
    const homeFilter = homeOnly ? env : null;
    if (feeds.get(home)?.filter !== homeFilter) follow(scope, homeFilter);
    for (const [project, entry] of next) {
      if (project === home) continue;
      const filter = entry.environments.size === 1 ? [...entry.environments][0]! : null;
      const feed = feeds.get(project);
      if (!feed || feed.filter !== filter) follow(entry.scope, filter);
    }
    for (const [project, feed] of feeds) {
      if (project !== home && !next.has(project)) {
        feeds.delete(project);
        feed.stop.abort();
        lastIds.delete(project);
      }
    }
  }

  /** Whether an item can change what the values resolve to. */
  function matters({ project, item }: { project: string; item: WatchItem }): boolean {
    const environments = followed.get(project)?.environments;
    switch (item.type) {
      case 'reset':
      case 'vault.rekeyed':
        return true;
      case 'secrets.changed':
        return (
          (project === home && (item.environment.id === env || item.environment.slug === env)) ||
          environments?.has(item.environment.id) === true
        );
      case 'environment.created':
      case 'environment.renamed':
      case 'environment.deleted':
        // References name environments by slug: a new, renamed or deleted one may change them.
        return project !== home || feeds.get(home)?.filter === null;
      default:
        return false;
    }
  }

  signal?.addEventListener('abort', forward, { once: true });
  // Until the first read, the home feed as it always was: this environment's events.
  follow(scope, env);
  const nextWake = () => new Promise<void>((resolve) => (wake = resolve));
  const sleep = options.sleep ?? abortableSleep;
  /** Reads the environment; while the server is unreachable, tries again with backoff. */
  const read = async (): Promise<string> => {
    for (let attempt = 0; ; attempt++) {
      try {
        const { secrets, sources } = await listSecretsAndSources(scope, env, readOptions);
        followSources(sources);
        return JSON.stringify(secrets);
      } catch (err) {
        if (!isTransient(err) || stop.signal.aborted) throw err;
        const delay = Math.min(
          options.maxBackoffMs ?? 30_000,
          (options.minBackoffMs ?? 500) * 2 ** Math.min(attempt, 16),
        );
        onDisconnected?.(err, delay);
        await sleep(delay, stop.signal);
      }
    }
  };

  try {
    yield* snapshots();
  } finally {
    signal?.removeEventListener('abort', forward);
    stop.abort();
  }

  async function* snapshots(): AsyncGenerator<SecretsSnapshot> {
    // The first read waits for the stream: what changes after it is then in the feed.
    while (state.connectedId === null && !finished) await nextWake();
    if (failure) throw failure;
    if (finished) return;
    let last = await read();
    let lastEventId = state.connectedId ?? 0;
    yield { secrets: JSON.parse(last) as Record<string, string>, event: null, lastEventId };

    for (;;) {
      while (queue.length === 0 && !recheck && !finished) await nextWake();
      if (queue.length === 0 && !recheck) {
        if (failure) throw failure;
        return;
      }
      const batch = queue.splice(0);
      const relevant = batch.filter(matters);
      const ended = batch.find(({ project, item }) => project === home && item.type === 'end');
      for (const { project, item } of batch)
        if (project === home && 'id' in item) lastEventId = Math.max(lastEventId, item.id);
      if (relevant.length > 0 || recheck) {
        recheck = false;
        for (const { project, item } of relevant) {
          if (item.type !== 'vault.rekeyed') continue;
          await (project === home ? scope : followed.get(project)?.scope)?.keys.refresh?.();
        }
        let now: string | null = null;
        try {
          now = await read();
        } catch (err) {
          if (!onUnresolvable || !isReferenceFailure(err)) throw err;
          onUnresolvable(err as Error);
        }
        if (now !== null && now !== last) {
          last = now;
          const events = relevant
            .map(({ item }) => item)
            .filter((item): item is FeedEvent => item.type !== 'reset');
          yield {
            secrets: JSON.parse(now) as Record<string, string>,
            event: events[events.length - 1] ?? null,
            lastEventId,
          };
        }
      }
      if (ended && !(ended.item as EndNotice).reconnect) return;
    }
  }
}
