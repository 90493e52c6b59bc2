import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBuilt, SERVER_MAIN } from '../foundation/server-process.js';

const root = new URL('../../../../', import.meta.url).pathname;
/** The built `coffer-server` command (the package's bin). */
export const SERVER_COMMAND = join(root, 'packages/server/dist/coffer-server.js');

/** Builds the server when a source is newer, and the command when it lags its sibling `main.js`. */
export function ensureCommandBuilt(): void {
  ensureBuilt();
  let command = 0;
  try {
    command = statSync(SERVER_COMMAND).mtimeMs;
  } catch {
    // not built yet
  }
  if (command < statSync(SERVER_MAIN).mtimeMs - 5000)
    execFileSync(process.execPath, [join(root, 'scripts/build.mjs'), 'server'], { cwd: root });
}
