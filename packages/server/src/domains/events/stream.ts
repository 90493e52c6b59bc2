import {
  credentialIdOf,
  endsCredential,
  visibleTo,
  type FeedEvent,
  type FeedViewer,
  type StreamNotice,
} from './events.js';

/** Where a stream writes: the HTTP response (Node's `ServerResponse` fits). */
export interface StreamSink {
  write(chunk: string): boolean;
  end(): void;
  /** Bytes written but not yet sent to the client. */
  readonly writableLength: number;
}

export type EndReason = Extract<StreamNotice, { type: 'end' }>['reason'];

/** Bytes a stream may have waiting for a slow client before it is ended (its memory bound). */
export const MAX_UNSENT_BYTES = 256 * 1024;

/** The SSE frame of a stored event (`id:`, `event:`, `data:`), built once per event and variant. */
const frames = new WeakMap<FeedEvent, string>();
export function frameOf(event: FeedEvent): string {
  let frame = frames.get(event);
  if (frame === undefined) {
    frame = `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
    frames.set(event, frame);
  }
  return frame;
}

/** A notice's frame; `ready` and `reset` carry the id the stream continues from. */
export function noticeFrame(notice: StreamNotice, id?: number): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${notice.type}\ndata: ${JSON.stringify(notice)}\n\n`;
}

/** Environment-scoped events; the rest (vault, project) concern every environment. */
const environmentOf = (event: FeedEvent): string | null =>
  'environment' in event ? event.environment.id : null;

/**
 * One open stream: the events after `lastId` that its credential may see (and
 * its `environment=` filter lets through), each once, in order. While it
 * replays from the log, live events wait in `pending`; after, they are written
 * as they come. Kept small on purpose (an idle stream is this object, a
 * listener and its socket).
 */
export class EventStream {
  lastId: number;
  private pending: FeedEvent[] | null = [];
  closed = false;
  readonly credentialId: string;
  /** Epoch ms at which the credential expires (checked on the heartbeat), or null. */
  expiresAtMs: number | null = null;

  constructor(
    readonly projectId: string,
    readonly viewer: FeedViewer,
    /** `environment=`: only this environment's events (and the project-wide ones). */
    readonly environmentId: string | null,
    afterId: number,
    private readonly sink: StreamSink,
    private readonly onEnd: (stream: EventStream) => void,
  ) {
    this.lastId = afterId;
    this.credentialId = credentialIdOf(viewer.principal);
  }

  /** From the hub: buffered during the replay, written after it. */
  readonly receive = (events: readonly FeedEvent[]): void => {
    if (this.closed) return;
    if (this.pending) this.pending.push(...events);
    else this.send(events);
  };

  /** Writes what is new of `events` (skipping ids already sent). */
  send(events: readonly FeedEvent[]): void {
    for (const event of events) {
      if (this.closed) return;
      if (event.id <= this.lastId) continue;
      this.lastId = event.id;
      const ends = endsCredential(event, this.viewer);
      const seen = visibleTo(event, this.viewer);
      if (seen && this.passes(seen)) this.write(seen === event ? frameOf(event) : frameOf(seen));
      if (ends) {
        const reason: EndReason =
          event.type === 'project.deleted'
            ? 'project_deleted'
            : event.type === 'token.revoked'
              ? 'credential_revoked'
              : event.type === 'member.removed' &&
                  event.member.user_id === this.viewer.principal.userId
                ? 'access_lost'
                : 'credential_revoked';
        this.end(reason);
        return;
      }
      if (
        event.type === 'member.role_changed' &&
        event.member.user_id === this.viewer.principal.userId
      ) {
        this.end('access_changed');
        return;
      }
    }
  }

  /** Replay done: writes what arrived meanwhile and goes live. */
  goLive(): void {
    const pending = this.pending ?? [];
    this.pending = null;
    this.send(pending);
  }

  private passes(event: FeedEvent): boolean {
    if (this.environmentId === null) return true;
    const environment = environmentOf(event);
    if (environment !== null) return environment === this.environmentId;
    return event.type === 'vault.rekeyed' || event.type === 'project.deleted';
  }

  write(chunk: string): void {
    if (this.closed) return;
    this.sink.write(chunk);
    // A client that does not read is not buffered for without bound.
    if (this.sink.writableLength > MAX_UNSENT_BYTES) this.close();
  }

  heartbeat(): void {
    this.write(':\n\n');
  }

  /** Ends the stream with a notice saying why (and, on shutdown, when to reconnect). */
  end(reason: EndReason, retryMs?: number): void {
    if (this.closed) return;
    const reconnect = reason === 'shutdown' || reason === 'access_changed';
    this.write(
      `${retryMs === undefined ? '' : `retry: ${retryMs}\n`}${noticeFrame({ type: 'end', reason, reconnect })}`,
    );
    this.close();
  }

  /** Closes without a notice (the client went away, or did not read). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = null;
    this.sink.end();
    this.onEnd(this);
  }
}
