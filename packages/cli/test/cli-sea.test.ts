// The single executable (`npm run build:sea`, scripts/build-sea.mjs): built
// once for this file, then run with a PATH on which there is no `node` at all
// (a directory holding only the tools the flow runs), against a real server.
// Skipped off Linux, where the script does not build.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
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
import { firstSteps } from './support/flow.js';

const SEA = join(ROOT, `packages/cli/dist/coffer-${process.platform}-${process.arch}`);
const unsupported = process.platform !== 'linux';

describe('coffer as a single executable', () => {
  let server: TestServer;
  let env: Record<string, string>;
  let work: string;

  before(async () => {
    if (unsupported) return;
    buildOnce();
    execFileSync(process.execPath, [join(ROOT, 'scripts/build-sea.mjs')], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 300_000,
    });
    // Only the tools the flow runs, so no `node` can be found however the executable looks.
    const bin = tempDir('sea-bin');
    symlinkSync('/usr/bin/printenv', join(bin, 'printenv'));
    const probe = spawnSync('/bin/sh', ['-c', 'command -v node'], { env: { PATH: bin } });
    assert.notEqual(probe.status, 0, `node is on ${bin}`);
    server = await startServer();
    env = { ...userEnv(server, tempDir('sea-home')), PATH: bin };
    work = tempDir('sea-work');
  });
  after(async () => {
    await server?.cleanup();
  });

  test('is one executable file that embeds its JavaScript', (t) => {
    if (unsupported) return serviceMissing(t, `a single executable for ${process.platform}`);
    const { mode, size } = statSync(SEA);
    assert.ok(mode & 0o111, 'executable');
    assert.ok(size > 20 * 1024 * 1024, `${size} bytes: a node binary with the blob`);
    // The resource postject injected, and the fuse flipped to say it is there.
    const binary = execFileSync('grep', [
      '-c',
      'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1',
      SEA,
    ]);
    assert.ok(Number(binary.toString()) >= 1, 'the sentinel fuse is flipped');
  });

  test('runs the whole flow with no node on PATH: sign up, project, secrets, run', async (t) => {
    if (unsupported) return serviceMissing(t, `a single executable for ${process.platform}`);
    const coffer = (args: string[], input?: string) =>
      runProgram(SEA, args, { env, cwd: work, ...(input !== undefined ? { input } : {}) });
    await firstSteps(coffer, 'sea@example.test');
    // Nothing else on PATH: `node` is not there for the child either.
    const noNode = await coffer(['run', '--', 'node', '--version']);
    assert.equal(noNode.code, 127, noNode.stderr);
    // No experimental warning on stderr of a normal command.
    const quiet = await coffer(['secrets', 'list', '--json']);
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.equal(quiet.stderr, '');
  });
});
