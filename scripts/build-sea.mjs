// Builds `coffer` as a single executable (Node's single executable
// applications): one file that runs on a machine without Node.js.
//
//   node scripts/build-sea.mjs [--out FILE]     (npm run build:sea)
//
// Output: packages/cli/dist/coffer-<platform>-<arch> (coffer-linux-x64 here).
// Steps: esbuild bundles the CLI with everything it imports (the SDK from
// source, libsodium with its WebAssembly inline as JavaScript) into one
// CommonJS file, as a SEA's main script must be; `node
// --experimental-sea-config` turns it into a preparation blob; a copy of this
// very node binary gets the blob injected by postject as the NODE_SEA_BLOB
// resource, flipping the sentinel fuse. The executable is therefore tied to
// this Node version and to this platform (Linux only: macOS and Windows need a
// code-signing step this script does not do). Not part of `npm run build`.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const require = createRequire(join(root, 'package.json'));
const { values } = parseArgs({ options: { out: { type: 'string' } } });

if (process.platform !== 'linux') {
  console.error(
    `coffer: build-sea.mjs builds Linux executables only (this is ${process.platform})`,
  );
  process.exit(1);
}
const cli = join(root, 'packages/cli');
const out = resolve(values.out ?? join(cli, `dist/coffer-${process.platform}-${process.arch}`));
const version = JSON.parse(readFileSync(join(cli, 'package.json'), 'utf8')).version;
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const work = mkdtempSync(join(tmpdir(), 'coffer-sea-'));
try {
  const bundle = join(work, 'coffer.cjs');
  await build({
    entryPoints: [join(cli, 'src/main.ts')],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // Workspace packages from their TypeScript sources, as scripts/build.mjs does.
    conditions: ['development'],
    define: { COFFER_VERSION: JSON.stringify(version) },
    // A SEA cannot import(): the lazily loaded built-ins (node:https, …) become require() calls.
    supported: { 'dynamic-import': false },
    logLevel: 'warning',
    plugins: [
      {
        // libsodium's CommonJS build: its ESM one reads import.meta, which CommonJS lacks.
        name: 'libsodium-commonjs',
        setup(b) {
          b.onResolve({ filter: /^libsodium-wrappers-sumo$/ }, () => ({
            path: require.resolve('libsodium-wrappers-sumo'),
          }));
        },
      },
    ],
  });

  // A SEA's require() reaches only Node's built-in modules: check nothing else is left.
  // Nor import() anything at all.
  const code = readFileSync(bundle, 'utf8');
  const external = [...code.matchAll(/\brequire\("([^"]+)"\)/g)]
    .map((m) => m[1])
    .filter((id) => !id.startsWith('node:') && !require('node:module').isBuiltin(id));
  if (external.length > 0)
    throw new Error(`the bundle still requires ${[...new Set(external)].join(', ')}`);
  if (/\bimport\(/.test(code)) throw new Error('the bundle still has a dynamic import()');

  const blob = join(work, 'sea-prep.blob');
  const config = join(work, 'sea-config.json');
  writeFileSync(
    config,
    JSON.stringify({
      main: bundle,
      output: blob,
      disableExperimentalSEAWarning: true,
      useCodeCache: true,
    }),
  );
  execFileSync(process.execPath, ['--experimental-sea-config', config], {
    cwd: work,
    stdio: ['ignore', 'ignore', 'inherit'],
  });

  // Built next to the output and renamed into place: a running copy is never rewritten.
  mkdirSync(dirname(out), { recursive: true });
  const temporary = `${out}.${process.pid}.tmp`;
  copyFileSync(process.execPath, temporary);
  chmodSync(temporary, 0o755);
  try {
    const { inject } = require('postject');
    await inject(temporary, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: FUSE });
    renameSync(temporary, out);
  } finally {
    rmSync(temporary, { force: true });
  }
  console.log(out);
} finally {
  rmSync(work, { recursive: true, force: true });
}
