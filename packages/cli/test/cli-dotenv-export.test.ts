// `coffer secrets export --format dotenv` against a real server: a value that
// npm dotenv and python-dotenv cannot both read back fails the export (exit 1,
// the secret named, nothing on stdout) instead of being written wrong;
// --dialect writes it for the one reader that can.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import {
  buildOnce,
  runCli,
  startServer,
  tempDir,
  userEnv,
  type TestServer,
} from './support/harness.js';
import { ok, signUpAndSetUp } from './support/flow.js';

const dotenv = createRequire(import.meta.url)('dotenv') as {
  parse(src: string): Record<string, string>;
};

const MIXED = 'it\'s "quoted"\nover two lines';

describe('coffer secrets export --format dotenv', () => {
  let server: TestServer;
  let user: Record<string, string>;
  let work: string;
  const as = (args: string[], input?: string) =>
    runCli(args, { env: user, cwd: work, ...(input !== undefined ? { input } : {}) });

  before(async () => {
    buildOnce();
    server = await startServer();
    user = userEnv(server, tempDir('dotenv-user'));
    work = tempDir('dotenv-work');
    const owner = { email: 'd@example.test', name: 'D', password: 'dotenv user password' };
    await signUpAndSetUp(as, owner, 'Interop', 'development');
    ok(await as(['secrets', 'set', 'PASSWORD', 'pa$$word']), 'set PASSWORD');
    ok(await as(['secrets', 'set', 'QUOTED', 'it\'s "quoted"']), 'set QUOTED');
  });
  after(async () => {
    await server?.cleanup();
  });

  test('writes what npm dotenv reads back exactly', async () => {
    const out = ok(await as(['secrets', 'export', '--format', 'dotenv']), 'export').stdout;
    assert.deepEqual(dotenv.parse(out), { PASSWORD: 'pa$$word', QUOTED: 'it\'s "quoted"' });
  });

  test('fails naming a secret the two readers cannot both read, and suggests other formats', async () => {
    ok(await as(['secrets', 'set', 'MIXED', '--stdin'], MIXED), 'set MIXED');
    const refused = await as(['secrets', 'export', '--format', 'dotenv']);
    assert.equal(refused.code, 1, refused.stderr);
    assert.equal(refused.stdout, '');
    assert.match(refused.stderr, /^coffer: MIXED cannot be written to a \.env file/);
    assert.match(refused.stderr, /--format json or --format shell/);
    assert.match(refused.stderr, /--dialect node\|python/);
    assert.match(refused.stderr, /\(unwritable_value\)\n$/);

    const forNode = ok(
      await as(['secrets', 'export', '--format', 'dotenv', '--dialect', 'node']),
      'export --dialect node',
    ).stdout;
    assert.equal(dotenv.parse(forNode).MIXED, MIXED);
    // And it imports back as npm dotenv reads it.
    ok(
      await as(['secrets', 'import', '-', '--env', 'staging', '--dialect', 'node'], forNode),
      'import --dialect node',
    );
    const staging = JSON.parse(
      ok(await as(['secrets', 'export', '--format', 'json', '--env', 'staging']), 'json').stdout,
    ) as Record<string, string>;
    assert.equal(staging.MIXED, MIXED);

    const usage = await as(['secrets', 'export', '--format', 'json', '--dialect', 'node']);
    assert.equal(usage.code, 2);
  });
});
