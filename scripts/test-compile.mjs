// Compiles test files once per run for scripts/test.mjs: each file bundled with
// esbuild (the transpiler tsx uses, with tsx's settings) together with the
// workspace sources it imports (`development` condition, as under tsx), into
// node_modules/.cache/coffer-tests/<pid>; registry packages stay external. Every process
// then loads plain JavaScript instead of transpiling through a loader of its own
// (about half of a server test file's start-up).
//
// The bundles run elsewhere than their sources, so `import.meta.url` in a source
// file is replaced by that file's own URL (paths relative to it, `createRequire`
// stay what they were), and a package that resolves from a workspace's own
// node_modules (not the root's) is imported by its path.
import { build } from 'esbuild';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REQUIRE_BANNER } from './require-banner.mjs';

const root = new URL('..', import.meta.url).pathname;
const CACHE = join(root, 'node_modules/.cache/coffer-tests');

/** The package a bare specifier names: `a/b` → `a`, `@s/a/b` → `@s/a`. */
function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The node_modules directory node would find `name` in, from `dir` upwards. */
function nodeModulesOf(name, dir) {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'node_modules', name))) return join(at, 'node_modules');
    if (at === dirname(at)) return null;
  }
}

// Registry packages are bundled in (shared chunks, so once per run), as in the
// server's own build: a process then reads a few files instead of hundreds of
// modules. These stay external: native addons and binaries, packages that load
// files next to their own (WebAssembly, browsers), and tools loaded lazily.
const EXTERNAL = new Set([
  'better-sqlite3',
  'esbuild',
  '@electric-sql/pglite',
  'playwright-core',
  'typescript',
  'openapi-typescript',
  'prettier',
  'undici',
  'vite',
]);

const sourcePlugin = {
  name: 'coffer-test-sources',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('@coffer/') || args.kind === 'entry-point') return undefined;
      if (args.path.startsWith('node:')) return { path: args.path, external: true };
      if (process.env.TEST_BUNDLE_DEPENDENCIES !== '0' && !EXTERNAL.has(packageName(args.path)))
        return undefined;
      const found = nodeModulesOf(packageName(args.path), args.resolveDir);
      if (found && found !== join(root, 'node_modules')) {
        const resolved = createRequire(join(args.resolveDir, 'index.js')).resolve(args.path);
        return { path: resolved, external: true };
      }
      return { path: args.path, external: true };
    });
    b.onLoad({ filter: /\.(ts|tsx|mts|cts)$/ }, (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const source = readFileSync(args.path, 'utf8');
      const url = JSON.stringify(pathToFileURL(args.path).href);
      return {
        contents: source.replaceAll('import.meta.url', url),
        loader: args.path.endsWith('x') ? 'tsx' : 'ts',
      };
    });
  },
};

/** Whether the process `pid` still runs. */
function running(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/**
 * Bundles `files` (paths relative to the repository) into a directory of this run's
 * own (two runs in one checkout never share one), and returns it and the path of
 * each file's bundle, in the same order. Directories of runs that ended without
 * removing theirs go first.
 */
export async function compileTests(files) {
  mkdirSync(CACHE, { recursive: true });
  for (const name of readdirSync(CACHE))
    if (!/^\d+$/.test(name) || !running(Number(name)))
      rmSync(join(CACHE, name), { recursive: true, force: true });
  const outDir = join(CACHE, String(process.pid));
  await build({
    entryPoints: files.map((file) => join(root, file)),
    outdir: outDir,
    outbase: root,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node}`,
    conditions: ['development'],
    keepNames: true,
    sourcemap: true,
    logLevel: 'warning',
    // The CommonJS packages bundled in call require() for Node's own modules.
    banner: { js: REQUIRE_BANNER },
    plugins: [sourcePlugin],
  });
  return {
    outDir,
    paths: files.map((file) =>
      join(outDir, relative(root, join(root, file)).replace(/\.ts$/, '.mjs')),
    ),
  };
}
