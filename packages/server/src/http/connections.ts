import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';

const idleTimer = Symbol('coffer.idleTimer');
type Tracked = Socket & { [idleTimer]?: NodeJS.Timeout };

/** At most one "connection limit reached" line per this long, however many are refused. */
const DROP_LOG_INTERVAL_MS = 60_000;

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

  server.on(options.tls ? 'secureConnection' : 'connection', (socket: Tracked) => {
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
  server.on('request', (request: { socket: Tracked }) => {
    const timer = request.socket[idleTimer];
    if (timer) {
      clearTimeout(timer);
      delete request.socket[idleTimer];
    }
  });

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
