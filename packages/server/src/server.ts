import type { Server } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { buildApp, type App } from './app.js';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import {
  MemoryRateLimitStore,
  RedisRateLimitStore,
  type RateLimitStore,
} from './http/rate-limit.js';
import { createRedirectServer, loadTls } from './http/tls.js';
import { guardConnections } from './http/connections.js';
import { printLine } from './http/log-destination.js';
import { servesDashboard } from './domains/dashboard/dashboard.routes.js';

interface RunningServer {
  app: App;
  /** The HTTPS (or proxied plain) URL actually listened on. */
  url: string;
  redirectUrl: string | null;
  /** Stops accepting, waits for in-flight requests, then releases the rate-limit store. */
  close(): Promise<void>;
  /** Cuts every open connection (shutdown grace period exceeded). */
  abortInFlight(): void;
}

/** Builds the app for production use and listens: HTTPS plus the plain-HTTP redirect. */
export async function startServer(config: Config, db: Db): Promise<RunningServer> {
  const tls = await loadTls(config);
  const redis = config.redisUrl ? await connectRedis(config.redisUrl) : null;
  const rateLimitStore: RateLimitStore = redis
    ? new RedisRateLimitStore(redis.client, `${config.redisKeyPrefix}rl:`)
    : new MemoryRateLimitStore();
  // With Redis, invalidations of cached secret listings and credentials reach every instance.
  const app = await buildApp({
    config,
    db,
    rateLimitStore,
    redis: redis?.client ?? null,
    ...(tls
      ? {
          https: { key: tls.key, cert: tls.cert, handshakeTimeout: config.connectionIdleTimeoutMs },
        }
      : {}),
  });
  guardConnections(app.server, {
    idleTimeoutMs: config.connectionIdleTimeoutMs,
    maxConnections: config.maxConnections,
    tls: tls !== null,
    log: app.log,
  });
  redis?.attachLogger(app.log);
  const address = await app.listen({ host: config.host, port: config.port });
  const port = Number(new URL(address).port);
  const url = `${tls ? 'https' : 'http'}://localhost:${port}`;
  if (tls) {
    app.log.info(
      { certificate: tls.certFile, sha256: tls.fingerprint, generated: tls.generated },
      tls.generated ? 'generated a self-signed TLS certificate' : 'TLS certificate loaded',
    );
    // Printed plainly as well, so a user starting Coffer by hand can compare it.
    if (tls.generated || config.tls.mode === 'self-signed') {
      printLine(
        `Coffer TLS certificate SHA-256 fingerprint: ${tls.fingerprint}\n  (${tls.certFile}; clients trust it with --ca / COFFER_CA_FILE)`,
      );
    }
  }

  let redirect: Server | null = null;
  let redirectUrl: string | null = null;
  if (tls && config.httpRedirectPort !== null) {
    redirect = createRedirectServer({ ...config, port });
    await new Promise<void>((resolve, reject) => {
      redirect!.once('error', reject);
      redirect!.listen(config.httpRedirectPort!, config.host, () => resolve());
    });
    const addr = redirect.address();
    redirectUrl = `http://localhost:${typeof addr === 'object' && addr ? addr.port : config.httpRedirectPort}`;
    app.log.info({ url: redirectUrl }, 'plain-HTTP listener redirects to HTTPS');
  }
  // METRICS_PORT: the metrics on a plain-HTTP listener of their own (announced before the API's line).
  const { metrics } = app;
  const metricsListener =
    metrics && config.metrics.port !== null
      ? await (
          await import('./metrics.js')
        ).listenForMetrics(metrics, config.metrics.host, config.metrics.port)
      : null;
  if (metricsListener) printLine(`Coffer metrics on ${metricsListener.url}`);
  printLine(`Coffer listening on ${url}${redirectUrl ? ` (HTTP ${redirectUrl} redirects)` : ''}`);
  if (servesDashboard(app)) printLine(`Coffer dashboard: ${url}/`);

  return {
    app,
    url,
    redirectUrl,
    async close() {
      redirect?.close();
      redirect?.closeAllConnections();
      metricsListener?.server.close();
      metricsListener?.server.closeAllConnections();
      // Fastify runs its preClose hooks, stops accepting, and resolves once every
      // connection has closed: each answers what it received first, with
      // `Connection: close` (see `guardConnections`). The database is closed
      // after this, by the caller, so no handler outlives it.
      await app.close();
      await rateLimitStore.close();
    },
    abortInFlight() {
      app.server.closeAllConnections();
    },
  };
}

/**
 * A Redis client that fails fast: with Redis down a command errors at once
 * (no offline queue, a short timeout) so the rate limiter falls back to local
 * counters instead of holding requests. It reconnects in the background. Not
 * reachable at start: the server still starts, with a warning.
 */
async function connectRedis(url: string) {
  // Loaded only when configured: a single-box server never holds ioredis.
  // Through `default` (module.exports), as in http/tls.ts.
  const { Redis } = (await import('ioredis')).default;
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 1000,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  // Until the app's logger exists, warnings go to stderr as plain text.
  let log: Pick<FastifyBaseLogger, 'warn'> = {
    warn: (fields: { err?: Error }, message?: string) =>
      console.warn(`coffer: ${message ?? ''}: ${fields.err?.message ?? ''}`),
  } as Pick<FastifyBaseLogger, 'warn'>;
  let lastError = '';
  client.on('error', (err: Error) => {
    // ioredis repeats the same error on every reconnect attempt; log changes only.
    if (err.message === lastError) return;
    lastError = err.message;
    log.warn({ err }, 'redis connection error');
  });
  client.on('ready', () => (lastError = ''));
  const startError = await client.connect().then(
    () => null,
    (err: unknown) => err,
  );
  if (startError) {
    log.warn(
      { err: startError },
      'Redis is not reachable; rate limits count per instance until it is',
    );
  }
  return {
    client,
    attachLogger(logger: FastifyBaseLogger) {
      log = logger;
    },
  };
}
