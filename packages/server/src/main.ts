import { ConfigError, loadConfig } from './config.js';
import { runServer } from './start.js';

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
  await runServer(config);
}
main().catch((err: unknown) => {
  console.error('coffer: failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
