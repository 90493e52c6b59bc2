// Bundles each package's entry point with esbuild (type checking is `npm run check`).
// Workspace packages are bundled in; registry dependencies stay external.
import { build } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

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
  banner: {
    js: "import { createRequire as __cofferRequire } from 'node:module'; const require = __cofferRequire(import.meta.url);",
  },
};

const targets = [
  { dir: 'sdk', entry: 'src/index.ts', out: 'dist/index.js', platform: 'neutral' },
  { dir: 'server', entry: 'src/main.ts', out: 'dist/main.js' },
  { dir: 'cli', entry: 'src/main.ts', out: 'dist/coffer.js', shebang: true },
];

// Outputs are written to a temporary name and renamed into place, so a process
// started while another build runs (tests build on demand) never reads half a file.
async function buildAtomically(options) {
  const result = await build({ ...options, write: false });
  for (const file of result.outputFiles) {
    const temporary = `${file.path}.${process.pid}.tmp`;
    mkdirSync(dirname(file.path), { recursive: true });
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  }
}

// `node scripts/build.mjs server` builds only the named packages (`npm start` needs only the server).
const only = process.argv.slice(2);

await Promise.all(
  targets
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
        external: [...externalsOf(t.dir), ...(t.dir === 'cli' ? externalsOf('sdk') : [])],
        ...(t.shebang ? { banner: { js: `#!/usr/bin/env node\n${common.banner.js}` } } : {}),
      }),
    ),
);
