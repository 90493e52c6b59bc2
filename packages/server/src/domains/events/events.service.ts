import type { SharedDeps } from '../../shared-deps.js';
import type { Principal, Role } from '../../http/principal.js';
import { AppError } from '../../errors.js';
import { projectAccess } from '../../access/project-access.js';
import { resolveEnvironment } from '../../access/environment-access.js';
import { credentialIdOf, type FeedViewer } from './events.js';
import { chainRange, credentialState } from './events.repo.js';
import { readEvents } from './feed.js';
import type { FeedHub } from './hub.js';
import { EventStream, noticeFrame, type EndReason, type StreamSink } from './stream.js';

/** Every this many heartbeats, each stream's credential and membership are checked again. */
const RECHECK_EVERY_HEARTBEATS = 4;

/** What `prepare` accepted: a stream slot reserved for this credential. */
export interface StreamTicket {
  readonly projectId: string;
  readonly viewer: FeedViewer;
  readonly environmentId: string | null;
  /** Resume after this id (`Last-Event-ID` / `since`); null: from now on. */
  readonly since: number | null;
  readonly expiresAtMs: number | null;
  /** Gives the slot back if the stream is never started. */
  release(): void;
}

type Deps = Pick<SharedDeps, 'db' | 'clock' | 'config'> & { hub: FeedHub };

/**
 * The change feed's streams: who may open one (and how many), the replay from
 * the audit log, going live on the hub, heartbeats, and ending a stream when
 * its credential is revoked or expires, or the instance shuts down.
 */
export function eventsService(ctx: Deps) {
  const db = ctx.db.kysely;
  const limits = ctx.config.events;
  const streams = new Set<EventStream>();
  const perCredential = new Map<string, number>();
  let heartbeats = 0;
  let shuttingDown = false;

  const release = (credentialId: string) => {
    const n = (perCredential.get(credentialId) ?? 1) - 1;
    if (n <= 0) perCredential.delete(credentialId);
    else perCredential.set(credentialId, n);
  };
  let reserved = 0;

  type Verdict = EndReason | { expiresAtMs: number | null; role: Role } | null;

  /** Whether a credential still holds in a project, and with which role; null when the database is away. */
  async function verdictOf(principal: Principal, projectId: string): Promise<Verdict> {
    try {
      const state = await credentialState(db, principal.kind, credentialIdOf(principal));
      if (!state.live) return 'credential_revoked';
      const expires = state.expiresAt === null ? null : Date.parse(state.expiresAt);
      if (expires !== null && expires <= ctx.clock.now().getTime()) return 'credential_expired';
      const access = await projectAccess(db, principal, projectId).catch(() => null);
      if (!access) return 'access_lost';
      return { expiresAtMs: expires, role: access.role };
    } catch {
      // The database is unreachable: keep the stream; the next check tries again.
      return null;
    }
  }

  /**
   * Checks the streams' credentials again and ends those that no longer hold
   * (saying why). Streams of one credential in one project share one check:
   * a thousand streams on one API key cost two queries, not two thousand.
   */
  function recheck(batch: readonly EventStream[]): void {
    const verdicts = new Map<string, Promise<Verdict>>();
    for (const stream of batch) {
      const key = `${stream.credentialId}|${stream.projectId}`;
      let verdict = verdicts.get(key);
      if (!verdict) {
        verdict = verdictOf(stream.viewer.principal, stream.projectId);
        verdicts.set(key, verdict);
      }
      void verdict.then((v) => {
        if (v === null) return;
        if (typeof v === 'string') return stream.end(v);
        if (v.role !== stream.viewer.role) return stream.end('access_changed');
        stream.expiresAtMs = v.expiresAtMs;
      });
    }
  }

  const timer = setInterval(() => {
    heartbeats++;
    const now = ctx.clock.now().getTime();
    const full = heartbeats % RECHECK_EVERY_HEARTBEATS === 0;
    const due: EventStream[] = [];
    for (const stream of streams) {
      stream.heartbeat();
      if (full || (stream.expiresAtMs !== null && stream.expiresAtMs <= now)) due.push(stream);
    }
    if (due.length > 0) recheck(due);
  }, limits.heartbeatMs);
  timer.unref();

  return {
    /** Open streams on this instance (for metrics and the benchmark). */
    get openStreams(): number {
      return streams.size;
    },

    /**
     * Everything that can refuse a stream, before its first byte: the
     * caller's access (404 for non-members, as everywhere), the environment
     * filter (a token only its scopes: 403), the `since` id, and the stream
     * limits (429). Reserves the stream's slot.
     */
    async prepare(
      principal: Principal | null,
      projectId: string,
      query: { environment?: string | undefined; since?: number | undefined },
    ): Promise<StreamTicket> {
      const access = await projectAccess(db, principal, projectId);
      let environmentId: string | null = null;
      if (query.environment !== undefined) {
        const context = await resolveEnvironment(db, principal, projectId, query.environment);
        if (access.scopes !== null && access.scopes[context.environment.id] === undefined) {
          throw new AppError(
            'forbidden',
            'This credential has no access to this environment; its scopes do not include it',
            [{ field: 'environment', issue: 'out_of_scope' }],
          );
        }
        environmentId = context.environment.id;
      }
      const credentialId = credentialIdOf(access.principal);
      if (shuttingDown) {
        throw new AppError('service_unavailable', 'The server is shutting down; reconnect');
      }
      if (streams.size + reserved >= limits.maxStreams) {
        throw new AppError(
          'rate_limited',
          `This server holds its maximum of ${limits.maxStreams} event streams (EVENTS_MAX_STREAMS); retry later or through another instance`,
          [{ field: 'streams', issue: 'instance_limit', limit: limits.maxStreams }],
        );
      }
      const mine = perCredential.get(credentialId) ?? 0;
      if (mine >= limits.maxStreamsPerCredential) {
        throw new AppError(
          'rate_limited',
          `This credential already holds ${mine} open event streams, the most allowed (EVENTS_MAX_STREAMS_PER_CREDENTIAL); close one first`,
          [{ field: 'streams', issue: 'credential_limit', limit: limits.maxStreamsPerCredential }],
        );
      }
      const state = await credentialState(db, access.principal.kind, credentialId);
      perCredential.set(credentialId, mine + 1);
      reserved++;
      let released = false;
      return {
        projectId,
        viewer: { principal: access.principal, role: access.role, scopes: access.scopes },
        environmentId,
        since: query.since ?? null,
        expiresAtMs: state.expiresAt === null ? null : Date.parse(state.expiresAt),
        release: () => {
          if (released) return;
          released = true;
          reserved--;
          release(credentialId);
        },
      };
    },

    /**
     * Runs a prepared stream on `sink`: the reconnect hint, the replay of what
     * was missed (or a `reset` when that is no longer kept), `ready`, then live
     * events. Resolves once live; the stream ends through `onClosed`.
     */
    async start(ticket: StreamTicket, sink: StreamSink): Promise<EventStream> {
      // The slot moves from "reserved" to the open stream.
      reserved--;
      const stream = new EventStream(
        ticket.projectId,
        ticket.viewer,
        ticket.environmentId,
        0,
        sink,
        (ended) => {
          streams.delete(ended);
          release(ended.credentialId);
          stopListening?.();
        },
      );
      let stopListening: (() => void) | null = null;
      stream.expiresAtMs = ticket.expiresAtMs;
      streams.add(stream);
      stream.write(`retry: ${limits.retryMs}\n\n`);
      try {
        const stop = await ctx.hub.listen(ticket.projectId, stream.receive);
        if (stream.closed) stop();
        else stopListening = stop;
        const range = await chainRange(db, ticket.projectId);
        const since = ticket.since;
        if (since === null) {
          stream.lastId = range.last;
        } else if (since > range.last || (range.first > 0 && since < range.first - 1)) {
          stream.lastId = range.last;
          stream.write(
            noticeFrame(
              {
                type: 'reset',
                reason: since > range.last ? 'unknown_id' : 'too_old',
                last_id: range.last,
              },
              range.last,
            ),
          );
        } else {
          stream.lastId = since;
          for (let more = true; more && !stream.closed;) {
            const page = await readEvents(db, ticket.projectId, stream.lastId);
            stream.send(page.events);
            more = page.more;
          }
        }
        if (!stream.closed) {
          stream.write(noticeFrame({ type: 'ready', last_id: stream.lastId }, stream.lastId));
          stream.goLive();
        }
      } catch {
        // The database failed during the replay: the client reconnects and resumes.
        stream.close();
      }
      return stream;
    },

    /** Graceful shutdown: every stream ends with `end` (reason `shutdown`) and a `retry:` hint. */
    shutdown(): void {
      shuttingDown = true;
      clearInterval(timer);
      for (const stream of [...streams]) stream.end('shutdown', limits.retryMs);
    },
  };
}

export type EventsService = ReturnType<typeof eventsService>;
