import { createRequire } from 'node:module';
import { defineConfig } from 'vite';

// The dashboard is served by the Coffer server from `dist/`, under a strict CSP:
// no inline script or style, so nothing may be inlined into index.html.
const sdkSource = new URL('../sdk/src', import.meta.url).pathname;
// React Router's package exports only its development build (its warnings on);
// its production build, the same code with them off, sits beside it.
const reactRouter = createRequire(import.meta.url)
  .resolve('react-router')
  .replace(/development\/index\.m?js$/, 'production/index.mjs');

export default defineConfig({
  root: new URL('.', import.meta.url).pathname,
  base: '/',
  mode: 'production',
  // Production React and JSX whatever NODE_ENV the build runs under (the tests set `test`,
  // which would otherwise select React's development build and the jsxDEV transform).
  define: { 'process.env.NODE_ENV': JSON.stringify('production') },
  oxc: { jsx: { runtime: 'automatic', development: false } },
  // The SDK is bundled from its source, as the tests use it (its package's
  // `development` condition); other packages resolve to their production builds.
  // `@coffer/sdk` is src/sdk.ts, the part of the SDK the first visit needs;
  // `@coffer/sdk/<path>` is the SDK's src/<path> (what lazily loaded screens add).
  // tsconfig.json's `paths` say the same to the type checker.
  resolve: {
    alias: [
      { find: /^@coffer\/sdk\/(.+)$/, replacement: `${sdkSource}/$1` },
      { find: /^@coffer\/sdk$/, replacement: new URL('src/sdk.ts', import.meta.url).pathname },
      { find: /^react-router$/, replacement: reactRouter },
    ],
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    assetsInlineLimit: 0,
    target: 'es2022',
    sourcemap: false,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    // libsodium (with its WebAssembly inline) is one ~530 kB chunk, loaded at sign-in.
    chunkSizeWarningLimit: 600,
    rolldownOptions: {
      // Everything the first visit loads before sign-in in one chunk: split by which lazy
      // pages share them, its modules made a dozen small files that compress worse apart.
      output: { codeSplitting: { groups: [{ name: 'app', tags: ['$initial'] }] } },
      onwarn(warning, warn) {
        // React Query and React Router mark modules "use client" for server components; moot here.
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        // The SDK imports one of its modules lazily to break a cycle; it stays in the main chunk.
        if (warning.code === 'INEFFECTIVE_DYNAMIC_IMPORT') return;
        warn(warning);
      },
    },
  },
  logLevel: 'warn',
});
