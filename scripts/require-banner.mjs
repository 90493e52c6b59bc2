// The first line of every ESM bundle that bundles CommonJS packages: their
// require() calls (for Node's own modules, for external packages) need a
// require of the bundle's own.
export const REQUIRE_BANNER =
  "import { createRequire as __cofferRequire } from 'node:module'; const require = __cofferRequire(import.meta.url);";
