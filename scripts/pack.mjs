// Packs @coffer/sdk and @coffer/cli as npm tarballs that install anywhere
// (`npm install -g coffer-sdk-<v>.tgz coffer-cli-<v>.tgz`), from the built
// dist/ of each (run `npm run build` first):
//
//   node scripts/pack.mjs [--out DIR]      (npm run pack; default DIR: dist/npm)
//
// Each package is copied with the files its package.json lists into a staging
// directory and packed there by `npm pack`, with the manifest a published
// package needs: no `private` (kept in the repository so that nobody publishes
// a workspace by mistake), no devDependencies or scripts, and for the SDK no
// `development` export condition (in the repository it points at the
// TypeScript sources, which the tarball does not hold; a bundler in
// development mode would follow it). The CLI's bundle holds the SDK, so its
// tarball needs only libsodium from the registry.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const root = new URL('..', import.meta.url).pathname;
const { values } = parseArgs({
  options: { out: { type: 'string' }, 'refuse-plain-pack': { type: 'boolean' } },
});

if (values['refuse-plain-pack']) {
  // The prepack script of packages/sdk: `npm pack` there would ship the `development` condition.
  console.error(
    'coffer: pack @coffer/sdk with `npm run pack` at the repository root (scripts/pack.mjs): ' +
      'its tarball must not keep the `development` export condition, which points at TypeScript sources',
  );
  process.exit(1);
}

const out = resolve(values.out ?? join(root, 'dist/npm'));
mkdirSync(out, { recursive: true });

/** The manifest as published: what installing needs, nothing of the workspace. */
function publishedManifest(manifest) {
  const { private: _private, devDependencies: _dev, scripts: _scripts, ...published } = manifest;
  if (published.exports) {
    const strip = (target) =>
      target && typeof target === 'object' && !Array.isArray(target)
        ? Object.fromEntries(
            Object.entries(target)
              .filter(([condition]) => condition !== 'development')
              .map(([key, value]) => [key, strip(value)]),
          )
        : target;
    published.exports = strip(published.exports);
  }
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies'])
    for (const [name, range] of Object.entries(published[field] ?? {}))
      if (range.startsWith('workspace:') || range.startsWith('file:'))
        throw new Error(
          `${manifest.name}: ${field}.${name} is "${range}", which the registry cannot serve`,
        );
  return published;
}

const tarballs = [];
for (const dir of ['sdk', 'cli']) {
  const source = join(root, 'packages', dir);
  const manifest = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8'));
  const missing = manifest.files.filter((file) => !existsSync(join(source, file)));
  if (missing.length > 0) {
    console.error(
      `coffer: ${manifest.name} is not built (missing ${missing.join(', ')}); run \`npm run build\` first`,
    );
    process.exit(1);
  }
  const stage = mkdtempSync(join(tmpdir(), `coffer-pack-${dir}-`));
  try {
    for (const file of manifest.files) {
      mkdirSync(dirname(join(stage, file)), { recursive: true });
      copyFileSync(join(source, file), join(stage, file));
    }
    writeFileSync(
      join(stage, 'package.json'),
      `${JSON.stringify(publishedManifest(manifest), null, 2)}\n`,
    );
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', out], {
        cwd: stage,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      }),
    );
    tarballs.push(join(out, packed[0].filename));
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}
for (const tarball of tarballs) console.log(tarball);
