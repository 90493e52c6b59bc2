import { ConfigError, loadConfig } from './config.js';
import { migrateToLatest, openDatabase, targetFromConfig } from './db/database.js';
import { startServer } from './server.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env, process.argv.slice(2));
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`coffer: invalid configuration: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const db = await openDatabase(targetFromConfig(config));
  await migrateToLatest(db);
  const server = await startServer(config, db);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
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
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  console.error('coffer: failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
