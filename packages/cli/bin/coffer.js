#!/usr/bin/env node
// The `coffer` command: runs the bundle that `npm run build` writes to
// dist/coffer.js. It is a file of its own, kept in the repository, so that the
// workspace's bin link exists from `npm ci` on (npm links only bins that exist
// at install time), and says what to do when the bundle is not built yet.
import { existsSync } from 'node:fs';

const bundle = new URL('../dist/coffer.js', import.meta.url);
if (!existsSync(bundle)) {
  process.stderr.write(
    `coffer: ${bundle.pathname} is not built yet; run \`npm run build\` in the repository first\n`,
  );
  process.exit(1);
}
await import(bundle.href);
