// `coffer` as users install it: the SDK and CLI packed by `npm run pack`
// (scripts/pack.mjs), installed with `npm install -g --prefix` into a
// temporary prefix outside the repository, then the installed command, found
// on PATH, runs a real flow against a real server. libsodium comes from the
// npm registry: without it the test is skipped (failed under
// COFFER_REQUIRE_SERVICES=1). Also: the workspace's own `npx coffer`.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { serviceMissing } from '../../server/test/foundation/server-process.js';
import {
  buildOnce,
  ROOT,
  runProgram,
  startServer,
  tempDir,
  userEnv,
  type TestServer,
} from './support/harness.js';
import { CLI_VERSION, firstSteps } from './support/flow.js';

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  license?: string;
  description?: string;
  bin?: Record<string, string>;
  files?: string[];
  engines?: Record<string, string>;
  exports?: unknown;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  scripts?: Record<string, string>;
}

const npmMissing = spawnSync('npm', ['--version'], { encoding: 'utf8' }).status !== 0;
const NETWORK = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|network/i;

/** Lists a tarball and reads its package.json. */
function inspect(tarball: string): { files: string[]; manifest: Manifest } {
  const files = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).trim().split('\n');
  const manifest = JSON.parse(
    execFileSync('tar', ['xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }),
  ) as Manifest;
  return { files: files.sort(), manifest };
}

describe('coffer installed from packed tarballs', () => {
  let server: TestServer;
  let tarballs: { sdk: string; cli: string };
  let prefix: string;
  let install: { status: number | null; output: string };

  before(async () => {
    buildOnce();
    if (npmMissing) return;
    const out = tempDir('tarballs');
    const printed = execFileSync(process.execPath, [join(ROOT, 'scripts/pack.mjs'), '--out', out], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    })
      .trim()
      .split('\n');
    tarballs = {
      sdk: printed.find((p) => p.endsWith(`coffer-sdk-${CLI_VERSION}.tgz`))!,
      cli: printed.find((p) => p.endsWith(`coffer-cli-${CLI_VERSION}.tgz`))!,
    };
    prefix = tempDir('prefix');
    // From a directory outside the repository, so nothing resolves through its node_modules.
    const installed = spawnSync(
      'npm',
      [
        'install',
        '--global',
        '--prefix',
        prefix,
        '--no-audit',
        '--no-fund',
        '--no-update-notifier',
        tarballs.sdk,
        tarballs.cli,
      ],
      { cwd: tempDir('install-cwd'), encoding: 'utf8', timeout: 180_000 },
    );
    install = {
      status: installed.status,
      output: `${installed.stdout}\n${installed.stderr}\n${installed.error?.message ?? ''}`,
    };
    server = await startServer();
  });
  after(async () => {
    await server?.cleanup();
  });

  test('the tarballs carry publishable metadata and only what installing needs', (t) => {
    if (npmMissing) return serviceMissing(t, 'npm');
    const cli = inspect(tarballs.cli);
    assert.deepEqual(cli.files, [
      'package/README.md',
      'package/bin/coffer.js',
      'package/dist/coffer.js',
      'package/dist/coffer.js.map',
      'package/package.json',
    ]);
    assert.equal(cli.manifest.name, '@coffer/cli');
    assert.equal(cli.manifest.version, CLI_VERSION);
    assert.deepEqual(cli.manifest.bin, { coffer: 'bin/coffer.js' });
    assert.equal(cli.manifest.private, undefined);
    assert.equal(cli.manifest.devDependencies, undefined);
    assert.ok(cli.manifest.description && cli.manifest.license && cli.manifest.engines?.node);
    // The SDK is bundled into dist/coffer.js: no @coffer package is fetched from a registry.
    assert.deepEqual(Object.keys(cli.manifest.dependencies ?? {}), ['libsodium-wrappers-sumo']);

    const sdk = inspect(tarballs.sdk);
    assert.deepEqual(sdk.files, [
      'package/README.md',
      'package/dist/index.js',
      'package/dist/index.js.map',
      'package/package.json',
    ]);
    assert.equal(sdk.manifest.name, '@coffer/sdk');
    assert.equal(sdk.manifest.private, undefined);
    assert.equal(sdk.manifest.scripts, undefined);
    // No `development` condition pointing at sources the tarball does not hold.
    assert.deepEqual(sdk.manifest.exports, { '.': { default: './dist/index.js' } });
    assert.ok(sdk.manifest.description && sdk.manifest.license && sdk.manifest.engines?.node);
  });

  test('npm install -g puts a working coffer on PATH: sign up, project, secrets, run', async (t) => {
    if (npmMissing) return serviceMissing(t, 'npm');
    if (install.status !== 0 && NETWORK.test(install.output))
      return serviceMissing(t, `the npm registry (npm install failed: ${install.output.trim()})`);
    assert.equal(install.status, 0, install.output);
    const bin = join(prefix, 'bin', 'coffer');
    assert.ok(existsSync(bin), `no ${bin}`);
    // Installed as copies under the prefix, not links back into this repository.
    const target = realpathSync(bin);
    assert.ok(target.startsWith(realpathSync(prefix)), target);
    assert.ok(!target.startsWith(ROOT), target);

    const home = tempDir('installed-home');
    const work = tempDir('installed-work');
    const env = {
      ...userEnv(server, home),
      // The prefix's bin first; node for the `#!/usr/bin/env node` line; nothing of the repository.
      PATH: `${join(prefix, 'bin')}:${dirname(process.execPath)}:/usr/bin:/bin`,
    };
    const coffer = (args: string[], input?: string) =>
      runProgram('coffer', args, { env, cwd: work, ...(input !== undefined ? { input } : {}) });
    await firstSteps(coffer, 'installed@example.test');
  });

  test('the installed SDK imports and initialises libsodium on its own', (t) => {
    if (npmMissing) return serviceMissing(t, 'npm');
    if (install.status !== 0) return t.skip('the install did not succeed (see the test above)');
    const script = [
      "import { ready, formatGithubEnv } from '@coffer/sdk';",
      'await ready();',
      "process.stdout.write(formatGithubEnv({ A: 'x' }));",
    ].join('\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      // Resolved from the prefix's lib/, where `npm install -g` put @coffer/sdk.
      cwd: join(prefix, 'lib'),
      env: { PATH: '/usr/bin:/bin' },
      encoding: 'utf8',
    });
    assert.equal(out, 'A=x\n');
  });
});

describe('npx coffer in the repository', () => {
  test('runs the built CLI through the workspace bin link and prints the package version', (t) => {
    if (npmMissing) return serviceMissing(t, 'npm');
    buildOnce();
    const manifest = JSON.parse(
      readFileSync(join(ROOT, 'packages/cli/package.json'), 'utf8'),
    ) as Manifest;
    // The link npm makes at `npm ci` points at the committed launcher, which exists before any build.
    assert.deepEqual(manifest.bin, { coffer: 'bin/coffer.js' });
    const out = execFileSync('npx', ['--no-install', 'coffer', '--version'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    assert.equal(out, `coffer ${manifest.version}\n`);
  });
});
