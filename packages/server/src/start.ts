import type { Config } from './config.js';
import { migrateToLatest, openDatabase, targetFromConfig } from './db/database.js';
import { idleMemoryRelease } from './idle-memory.js';
import { startServer } from './server.js';

/**
 * Runs the server until SIGTERM or SIGINT: opens the database, migrates it,
 * listens, and on the signal finishes in-flight requests, closes the database
 * and exits 0. `node dist/main.js` and `coffer-server start` both come here.
 */
export async function runServer(config: Config): Promise<void> {
  // Listen for signals before anything starts: the server announces its URL from
  // inside startServer, and a SIGTERM sent right after must shut it down
  // gracefully, not kill it with the default handler. One that arrives while
  // starting is acted on as soon as the server is up.
  let stop: ((signal: string) => void) | null = null;
  let requested: string | null = null;
  const onSignal = (signal: string) => (stop ? stop(signal) : (requested ??= signal));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  const db = await openDatabase(targetFromConfig(config));
  await migrateToLatest(db);
  const server = await startServer(config, db);
  const idleMemory = idleMemoryRelease(server.app.log);
  idleMemory.start();

  let stopping = false;
  stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    idleMemory.stop();
    server.app.log.info(
      { signal },
      'shutting down: no new connections, finishing in-flight requests',
    );
    // Requests still running after the grace period lose their connection; the
    // database is then closed as usual. Should even that hang, exit anyway.
    const grace = setTimeout(() => {
      server.app.log.warn(
        { graceMs: config.shutdownGraceMs },
        'in-flight requests did not finish within SHUTDOWN_GRACE_MS; closing their connections',
      );
      server.abortInFlight();
    }, config.shutdownGraceMs);
    grace.unref();
    const force = setTimeout(() => {
      server.app.log.error('shutdown did not complete; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + 5000);
    force.unref();
    server
      .close()
      .then(() => db.close())
      .then(() => {
        server.app.log.info('in-flight requests finished and database closed; exiting');
        process.exit(0);
      })
      .catch((err: unknown) => {
        server.app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  if (requested) stop(requested);
}
