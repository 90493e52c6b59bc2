// Bundles each package's entry point with esbuild (type checking is `npm run check`),
// and the web dashboard with Vite.
// Workspace packages are bundled in; registry dependencies stay external.
import { build } from 'esbuild';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { gzipSync } from 'node:zlib';
import { REQUIRE_BANNER } from './require-banner.mjs';

const root = new URL('..', import.meta.url).pathname;
const pkg = (dir) => JSON.parse(readFileSync(`${root}packages/${dir}/package.json`, 'utf8'));
const externalsOf = (dir) =>
  Object.keys(pkg(dir).dependencies ?? {}).filter((name) => !name.startsWith('@coffer/'));

const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  conditions: ['development'],
  sourcemap: true,
  logLevel: 'warning',
  banner: { js: REQUIRE_BANNER },
};

// The server's registry dependencies are bundled in, except native addons: its
// start reads one file instead of hundreds of modules (0.6× the CPU of a start,
// and the tests start a server well over a hundred times). The CLI loads few of
// its dependencies on a command's path, so it starts no faster bundled; the SDK
// is a library, whose users' bundlers resolve its dependencies.
const NATIVE = ['better-sqlite3'];

const targets = [
  { dir: 'sdk', entry: 'src/index.ts', out: 'dist/index.js', platform: 'neutral' },
  { dir: 'server', entry: 'src/main.ts', out: 'dist/main.js' },
  // The operator's command (start, migrate, backup, restore, audit verify): the `coffer-server` bin.
  { dir: 'server', entry: 'src/cli.ts', out: 'dist/coffer-server.js', shebang: true },
  { dir: 'cli', entry: 'src/main.ts', out: 'dist/coffer.js', shebang: true },
];

// Outputs are written to a temporary name and renamed into place, so a process
// started while another build runs (tests build on demand) never reads half a file.
async function buildAtomically(options) {
  const result = await build({ ...options, write: false });
  for (const file of result.outputFiles) {
    const temporary = `${file.path}.${process.pid}.tmp`;
    mkdirSync(dirname(file.path), { recursive: true });
    // A script with a shebang is a command (a package's bin): executable.
    const command = file.contents[0] === 0x23 && file.contents[1] === 0x21;
    writeFileSync(temporary, file.contents, { mode: command ? 0o755 : 0o644 });
    renameSync(temporary, file.path);
  }
}

/**
 * The web dashboard, with Vite, into a fresh directory that then replaces
 * `packages/web/dist` (a running server never reads a half-written build).
 * Each asset also gets a `.gz` sibling so the server sends it precompressed.
 */
async function buildWeb() {
  const web = `${root}packages/web`;
  if (!existsSync(`${web}/index.html`)) return;
  // Vite picks each package's production build (React Router's, React's) from
  // NODE_ENV: a build run from the test runner (NODE_ENV=test) or any other
  // environment must still be the production dashboard.
  process.env.NODE_ENV = 'production';
  // Loaded only here: building the server alone does not need Vite.
  const { build: viteBuild } = await import('vite');
  const outDir = `${web}/.dist-${process.pid}.tmp`;
  try {
    await viteBuild({
      root: web,
      configFile: `${web}/vite.config.ts`,
      build: { outDir, emptyOutDir: true },
    });
    const assets = `${outDir}/assets`;
    if (existsSync(assets)) {
      for (const name of readdirSync(assets)) {
        if (name.endsWith('.gz')) continue;
        const file = `${assets}/${name}`;
        writeFileSync(`${file}.gz`, gzipSync(readFileSync(file), { level: 9 }));
      }
    }
    // Another build may swap its own in between (tests build on demand): then again.
    for (let attempt = 0; ; attempt++) {
      const old = `${web}/.dist-old-${process.pid}-${attempt}.tmp`;
      try {
        renameSync(`${web}/dist`, old);
      } catch (err) {
        if (err.code !== 'ENOENT') throw err;
      }
      try {
        renameSync(outDir, `${web}/dist`);
        break;
      } catch (err) {
        if (attempt >= 5 || (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST')) throw err;
      } finally {
        rmSync(old, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}

// `node scripts/build.mjs server web` builds only the named targets (`npm start` needs those two).
const only = process.argv.slice(2);

await Promise.all([
  ...targets
    .filter((t) => only.length === 0 || only.includes(t.dir))
    .filter((t) => existsSync(`${root}packages/${t.dir}/${t.entry}`))
    .map((t) =>
      buildAtomically({
        ...common,
        ...(t.platform === 'neutral'
          ? { platform: 'neutral', banner: {}, mainFields: ['module', 'main'] }
          : {}),
        entryPoints: [`${root}packages/${t.dir}/${t.entry}`],
        outfile: `${root}packages/${t.dir}/${t.out}`,
        external:
          t.dir === 'server'
            ? NATIVE
            : [...externalsOf(t.dir), ...(t.dir === 'cli' ? externalsOf('sdk') : [])],
        ...(t.shebang ? { banner: { js: `#!/usr/bin/env node\n${common.banner.js}` } } : {}),
        // `coffer --version` prints the version of the CLI's package.json.
        ...(t.dir === 'cli'
          ? { define: { COFFER_VERSION: JSON.stringify(pkg('cli').version) } }
          : {}),
      }),
    ),
  ...(only.length === 0 || only.includes('web') ? [buildWeb()] : []),
]);
