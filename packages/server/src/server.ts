import type { Server } from 'node:http';
import { Redis } from 'ioredis';
import { buildApp, type App } from './app.js';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import {
  MemoryRateLimitStore,
  RedisRateLimitStore,
  type RateLimitStore,
} from './http/rate-limit.js';
import { createRedirectServer, loadTls } from './http/tls.js';

export interface RunningServer {
  app: App;
  /** The HTTPS (or proxied plain) URL actually listened on. */
  url: string;
  redirectUrl: string | null;
  close(): Promise<void>;
}

/** Builds the app for production use and listens: HTTPS plus the plain-HTTP redirect. */
export async function startServer(config: Config, db: Db): Promise<RunningServer> {
  const tls = loadTls(config);
  let rateLimitStore: RateLimitStore;
  if (config.redisUrl) {
    const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
    rateLimitStore = new RedisRateLimitStore(redis);
  } else {
    rateLimitStore = new MemoryRateLimitStore();
  }
  const app = await buildApp({
    config,
    db,
    rateLimitStore,
    ...(tls ? { https: { key: tls.key, cert: tls.cert } } : {}),
  });
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
      process.stdout.write(
        `Coffer TLS certificate SHA-256 fingerprint: ${tls.fingerprint}\n  (${tls.certFile}; clients trust it with --ca / COFFER_CA_FILE)\n`,
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
  process.stdout.write(
    `Coffer listening on ${url}${redirectUrl ? ` (HTTP ${redirectUrl} redirects)` : ''}\n`,
  );

  return {
    app,
    url,
    redirectUrl,
    async close() {
      redirect?.close();
      redirect?.closeAllConnections();
      await app.close();
      await rateLimitStore.close();
    },
  };
}
