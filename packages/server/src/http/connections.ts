import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';

const idleTimer = Symbol('coffer.idleTimer');
/** Requests of this connection received and not yet answered (a pipelined one queues behind). */
const unanswered = Symbol('coffer.unanswered');
/** When this connection last finished an answer or was accepted (ms, monotonic enough). */
const quietSince = Symbol('coffer.quietSince');
type Tracked = Socket & {
  [idleTimer]?: NodeJS.Timeout;
  [unanswered]?: Set<ServerResponse>;
  [quietSince]?: number;
};

/**
 * At shutdown, how long a connection with nothing in flight stays open before it
 * is closed. A request already on its way (sent before the signal, or on a
 * kept-alive connection just before the client could learn of the shutdown)
 * arrives within it and is answered with `Connection: close`.
 */
export const DRAIN_LINGER_MS = 1000;

/** At most one "connection limit reached" line per this long, however many are refused. */
const DROP_LOG_INTERVAL_MS = 60_000;

const tracking = Symbol('coffer.tracksAnswers');

/**
 * Keeps, for each connection, the answers it still owes (a request received,
 * its response not yet sent), so that what is written to the socket outside a
 * response (the refusal of malformed bytes) waits its turn. Once per server.
 */
export function trackAnswers(server: Server & { [tracking]?: true }): void {
  if (server[tracking]) return;
  server[tracking] = true;
  server.on(
    'request',
    (request: IncomingMessage & { socket: Tracked }, response: ServerResponse) => {
      const socket = request.socket;
      const pending = (socket[unanswered] ??= new Set());
      pending.add(response);
      // `on`, not `once`: a response closes once, and this runs for every request.
      response.on('close', () => {
        pending.delete(response);
        socket[quietSince] = Date.now();
      });
    },
  );
}

/**
 * Resolves once every request this connection received so far has its answer
 * written (HTTP/1.1 answers in request order), or the connection is gone.
 */
export function whenAnswered(socket: Socket): Promise<void> {
  const pending = [...((socket as Tracked)[unanswered] ?? [])].filter((r) => !r.writableFinished);
  return Promise.all(
    pending.map(
      (response) =>
        new Promise<void>((resolve) => {
          response.once('finish', resolve);
          response.once('close', resolve);
        }),
    ),
  ).then(() => undefined);
}

/**
 * Bounds what a connection may cost before it has asked for anything:
 *
 * - a connection (after its TLS handshake, which `handshakeTimeout` bounds the
 *   same way) must deliver its first request's headers within `idleTimeoutMs`,
 *   or it is closed; after that Node's keep-alive and header timeouts apply;
 * - at most `maxConnections` are open at once; the next one is closed at
 *   accept, and the first refusal is logged (then at most one line a minute,
 *   with how many were refused since).
 */
export function guardConnections(
  server: Server,
  options: {
    idleTimeoutMs: number;
    maxConnections: number;
    /** `secureConnection` for HTTPS, `connection` for plain HTTP. */
    tls: boolean;
    log: FastifyBaseLogger;
  },
): void {
  server.maxConnections = options.maxConnections;
  const open = new Set<Tracked>();
  let draining = false;

  server.on(options.tls ? 'secureConnection' : 'connection', (socket: Tracked) => {
    open.add(socket);
    socket[quietSince] = Date.now();
    socket.once('close', () => open.delete(socket));
    if (draining) closeWhenQuiet(socket);
    // A graceful close (TLS close_notify, then FIN) lets a browser that opened the
    // connection ahead of need see it is gone before reusing it; destroyed outright,
    // Chromium tried such pooled sockets one after another (ERR_TOO_MANY_RETRIES).
    const timer = setTimeout(() => {
      socket.end();
      setTimeout(() => socket.destroy(), 1000).unref();
    }, options.idleTimeoutMs);
    timer.unref();
    socket[idleTimer] = timer;
    socket.once('close', () => clearTimeout(timer));
  });
  trackAnswers(server);
  server.on(
    'request',
    (request: IncomingMessage & { socket: Tracked }, response: ServerResponse) => {
      const socket = request.socket;
      const timer = socket[idleTimer];
      if (timer) {
        clearTimeout(timer);
        delete socket[idleTimer];
      }
      // During shutdown every answer closes its connection after it is sent. (The
      // answers pending when shutdown began get the same from `closeIdleConnections`.)
      if (draining) {
        response.shouldKeepAlive = false;
        response.on('close', () => closeWhenQuiet(socket));
      }
    },
  );

  /**
   * Closes a connection once it has had nothing to answer for `DRAIN_LINGER_MS`.
   * Destroyed rather than ended: a request that arrives after that is never
   * read, so it is never executed without its answer reaching the client.
   */
  const closeWhenQuiet = (socket: Tracked) => {
    if (socket.destroyed || (socket[unanswered]?.size ?? 0) > 0) return;
    const wait = (socket[quietSince] ?? 0) + DRAIN_LINGER_MS - Date.now();
    if (wait > 0) {
      setTimeout(() => closeWhenQuiet(socket), wait).unref();
      return;
    }
    // Timers run before the event loop reads sockets: after a stall, a request
    // that arrived in time is read first (this runs after that read), and kept.
    setImmediate(() => {
      if (!socket.destroyed && (socket[unanswered]?.size ?? 0) === 0) socket.destroy();
    });
  };

  /*
   * Node's `server.close()` destroys every connection that has no request in
   * progress at that instant (`closeIdleConnections`), and Fastify's close calls
   * it. A kept-alive client whose next request is on the wire then gets a reset,
   * and one whose answer was written but not yet flushed (TLS) loses it though
   * its write committed. Instead, at close: answers still to be sent carry
   * `Connection: close`, requests that arrive on open connections are served the
   * same way, and a connection is closed only after it was quiet for
   * `DRAIN_LINGER_MS`. Fastify's `preClose` hooks run before this (a handler
   * that streams can end its stream there); `SHUTDOWN_GRACE_MS` bounds the rest.
   */
  server.closeIdleConnections = () => {
    if (draining) return;
    draining = true;
    for (const socket of open) {
      for (const response of socket[unanswered] ?? []) {
        if (!response.headersSent) response.shouldKeepAlive = false;
        response.on('close', () => closeWhenQuiet(socket));
      }
      socket[quietSince] = Math.max(socket[quietSince] ?? 0, Date.now());
      closeWhenQuiet(socket);
    }
  };

  let dropped = 0;
  let loggedAt = -Infinity;
  server.on('drop', () => {
    dropped++;
    const now = Date.now();
    if (now - loggedAt < DROP_LOG_INTERVAL_MS) return;
    loggedAt = now;
    options.log.warn(
      { maxConnections: options.maxConnections, refused: dropped },
      `connection limit reached: ${options.maxConnections} open connections (MAX_CONNECTIONS); refusing new ones until some close`,
    );
    dropped = 0;
  });
}
