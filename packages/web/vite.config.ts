import { defineConfig } from 'vite';

// The dashboard is served by the Coffer server from `dist/`, under a strict CSP:
// no inline script or style, so nothing may be inlined into index.html.
export default defineConfig({
  root: new URL('.', import.meta.url).pathname,
  base: '/',
  // The SDK is built from source, as the tests and the CLI use it.
  resolve: { conditions: ['development', 'browser', 'module', 'import', 'default'] },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    assetsInlineLimit: 0,
    target: 'es2022',
    sourcemap: false,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  logLevel: 'warn',
});
