// References between secrets and personal overrides, on the REAL built `coffer`
// against a REAL server process (SQLite): values resolved on this machine when
// read, cycles and unreadable targets refused before the child runs, and
// overrides that apply to their owner's session alone and reach the server
// only as ciphertext.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  buildOnce,
  invitationLink,
  pipelineEnv,
  runCli,
  startServer,
  tempDir,
  userEnv,
  type TestServer,
} from './support/harness.js';
import { addDeveloper, errorLine, ok } from './support/flow.js';

const BOB_HOST = 'bobs-laptop.override.internal';

describe('coffer: references and personal overrides (SQLite)', () => {
  let server: TestServer;
  let alice: Record<string, string>;
  let bob: Record<string, string>;
  let work: string;
  const as = (env: Record<string, string>, args: string[], input?: string) =>
    runCli(args, { env, cwd: work, ...(input !== undefined ? { input } : {}) });
  const set = async (env: string, name: string, value: string) =>
    ok(await as(alice, ['secrets', 'set', name, '--env', env, '--stdin'], value), `set ${name}`);
  const apiKey = async (...scopes: string[]) =>
    ok(
      await as(alice, [
        'api-keys',
        'create',
        '--name',
        `key ${scopes.join(' ')}`,
        '--role',
        'developer',
        ...scopes.flatMap((s) => ['--scope', s]),
      ]),
      'api-keys create',
    ).stdout.trim();
  const inPipeline = (token: string, args: string[]) =>
    runCli(args, { env: pipelineEnv(server, token), cwd: tempDir('pipeline') });

  before(async () => {
    buildOnce();
    server = await startServer();
    alice = userEnv(server, tempDir('alice'));
    bob = userEnv(server, tempDir('bob'));
    work = tempDir('work');
    ok(
      await as(
        alice,
        ['signup', '--email', 'alice@example.test', '--name', 'Alice', '--password-stdin'],
        'alice horse battery\n',
      ),
      'alice signup',
    );
    ok(await as(alice, ['projects', 'create', 'Shop']), 'project');
    ok(await as(alice, ['setup', '--project', 'Shop', '--env', 'production']), 'setup');
    // Three secrets in two environments make one URL.
    await set('staging', 'DB_USER', 'app_user');
    await set('production', 'DB_PASS', 's3cret');
    await set('production', 'DB_HOST', 'db.internal');
    await set('production', 'URL', 'postgres://${staging.DB_USER}:${DB_PASS}@${DB_HOST}/shop');
    await set('production', 'PRICE', 'costs $${literal} and $5');
  });
  after(async () => {
    await server?.cleanup();
  });

  test('coffer run prints the resolved value built from three secrets in two environments; --raw the text', async () => {
    const r = ok(await as(alice, ['run', '--', 'printenv', 'URL']), 'run');
    assert.equal(r.stdout, 'postgres://app_user:s3cret@db.internal/shop\n');
    const raw = ok(await as(alice, ['run', '--raw', '--', 'printenv', 'URL']), 'run --raw');
    assert.equal(raw.stdout, 'postgres://${staging.DB_USER}:${DB_PASS}@${DB_HOST}/shop\n');
    assert.equal(
      ok(await as(alice, ['run', '--', 'printenv', 'PRICE']), 'escape').stdout,
      'costs ${literal} and $5\n',
    );
    assert.equal(
      ok(await as(alice, ['secrets', 'get', 'URL']), 'get').stdout,
      'postgres://app_user:s3cret@db.internal/shop\n',
    );
    assert.equal(
      ok(await as(alice, ['secrets', 'get', 'URL', '--raw']), 'get --raw').stdout,
      'postgres://${staging.DB_USER}:${DB_PASS}@${DB_HOST}/shop\n',
    );
    const exported = JSON.parse(
      ok(await as(alice, ['secrets', 'export', '--format', 'json']), 'export').stdout,
    ) as Record<string, string>;
    assert.equal(exported.URL, 'postgres://app_user:s3cret@db.internal/shop');
    const dotenv = ok(
      await as(alice, ['secrets', 'export', '--dialect', 'node']),
      'export dotenv',
    ).stdout;
    assert.match(dotenv, /^URL=postgres:\/\/app_user:s3cret@db\.internal\/shop$/m);
    const rawJson = JSON.parse(
      ok(await as(alice, ['secrets', 'export', '--format', 'json', '--raw']), 'export --raw')
        .stdout,
    ) as Record<string, string>;
    assert.equal(rawJson.URL, 'postgres://${staging.DB_USER}:${DB_PASS}@${DB_HOST}/shop');
    // Compare sees the stored text: the references are just text to it.
    const diff = ok(
      await as(alice, ['secrets', 'diff', 'staging', 'production', '--json']),
      'diff',
    ).stdout;
    assert.ok(JSON.parse(diff).onlyInB.includes('URL'));
  });

  test('a cycle fails with exit 1 naming it, and the command never runs', async () => {
    await set('development', 'A', 'x-${B}');
    await set('development', 'B', '${A}');
    const marker = join(tempDir('cycle'), 'ran');
    const r = await as(alice, [
      'run',
      '--env',
      'development',
      '--',
      process.execPath,
      '-e',
      `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`,
    ]);
    const line = errorLine(r, 1, 'unresolvable_references');
    assert.match(line, /A → B → A/);
    assert.equal(r.stdout, '');
    assert.throws(() => readFileSync(marker), 'the child did not run');
    const one = await as(alice, ['secrets', 'get', 'B', '--env', 'development']);
    assert.match(errorLine(one, 1, 'reference_cycle'), /B: references form a cycle: B → A → B/);
  });

  test('a token without the other environment gets the named error and no environment at all', async () => {
    const prodOnly = await apiKey('production:read');
    const r = await inPipeline(prodOnly, [
      'run',
      '--env',
      'production',
      '--',
      'printenv',
      'DB_HOST',
    ]);
    const line = errorLine(r, 1, 'reference_unreadable');
    assert.equal(
      line,
      'coffer: URL: ${staging.DB_USER} cannot be read: environment "staging" does not exist or this credential holds no key for it (reference_unreadable)',
    );
    assert.equal(r.stdout, '', 'no partial environment: the child never ran');
    // A missing environment reads the same to it: nothing says which exists.
    await set('production', 'GHOST', '${nowhere.X}');
    const ghost = await inPipeline(prodOnly, ['secrets', 'get', 'GHOST', '--env', 'production']);
    assert.match(
      errorLine(ghost, 1, 'reference_unreadable'),
      /environment "nowhere" does not exist or this credential holds no key for it/,
    );
    ok(await as(alice, ['secrets', 'delete', 'GHOST', '--env', 'production', '--yes']), 'delete');
    // With both scopes it resolves.
    const both = await apiKey('production:read', 'staging:read');
    assert.equal(
      ok(await inPipeline(both, ['run', '--env', 'production', '--', 'printenv', 'URL']), 'both')
        .stdout,
      'postgres://app_user:s3cret@db.internal/shop\n',
    );
  });

  test('an override applies for its owner’s session only; the database holds no plaintext of it', async () => {
    await addDeveloper(
      (args, input) => as(alice, args, input),
      (args, input) => as(bob, args, input),
      (email) => invitationLink(server, email),
      { email: 'bob@example.test', name: 'Bob', password: 'bob battery staple' },
    );
    ok(
      await as(
        bob,
        ['secrets', 'override', 'set', 'DB_HOST', '--stdin', '--env', 'production'],
        BOB_HOST,
      ),
      'override set',
    );
    const team = 'postgres://app_user:s3cret@db.internal/shop\n';
    const bobs = `postgres://app_user:s3cret@${BOB_HOST}/shop\n`;
    const runUrl = (env: Record<string, string>, extra: string[] = []) =>
      as(env, ['run', '--env', 'production', ...extra, '--', 'printenv', 'URL']);
    assert.equal(
      ok(await runUrl(bob), 'bob run').stdout,
      bobs,
      'the owner gets their value, through the reference too',
    );
    assert.equal(ok(await runUrl(bob, ['--no-overrides']), 'bob --no-overrides').stdout, team);
    assert.equal(
      ok(await runUrl(alice), 'alice run').stdout,
      team,
      'another member gets the team value',
    );
    const key = await apiKey('production:read', 'staging:read');
    assert.equal(
      ok(await inPipeline(key, ['run', '--env', 'production', '--', 'printenv', 'URL']), 'token')
        .stdout,
      team,
      'a token never sees overrides',
    );
    assert.equal(
      ok(await as(bob, ['secrets', 'get', 'DB_HOST', '--env', 'production']), 'get').stdout,
      `${BOB_HOST}\n`,
    );
    // Listing: the owner sees name and (with --reveal) value; an admin, names only.
    const mine = ok(
      await as(bob, ['secrets', 'override', 'list', '--env', 'production', '--reveal', '--json']),
      'list',
    ).stdout;
    assert.deepEqual(JSON.parse(mine), [
      { environment: 'production', name: 'DB_HOST', value: BOB_HOST },
    ]);
    const names = ok(
      await as(alice, ['secrets', 'override', 'list', '--member', 'bob@example.test', '--json']),
      'admin list',
    ).stdout;
    assert.deepEqual(
      (JSON.parse(names) as Array<Record<string, unknown>>).map((n) => [
        n.environment_slug,
        n.name,
      ]),
      [['production', 'DB_HOST']],
    );
    assert.ok(!names.includes(BOB_HOST));
    const tokenTries = await inPipeline(key, [
      'secrets',
      'override',
      'set',
      'DB_HOST',
      'x',
      '--env',
      'production',
    ]);
    errorLine(tokenTries, 1, 'user_session_required');

    // The server's files hold no plaintext of the override (database, WAL, anything else).
    const found: string[] = [];
    const scan = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) scan(path);
        else if (readFileSync(path).includes(Buffer.from(BOB_HOST))) found.push(path);
      }
    };
    scan(server.dataDir);
    assert.deepEqual(found, [], 'no file of the server holds the override in plaintext');

    ok(await as(bob, ['secrets', 'override', 'unset', 'DB_HOST', '--env', 'production']), 'unset');
    assert.equal(ok(await runUrl(bob), 'bob after unset').stdout, team);
  });

  test('importing a .env with ${VAR} keeps the text and says so', async () => {
    const file = join(tempDir('import'), 'app.env');
    writeFileSync(file, 'HOST=db\nPORT=5432\nADDR=${HOST}:${PORT}\nPLAIN=x\n');
    const r = ok(
      await as(alice, ['secrets', 'import', file, '--env', 'development', '--dialect', 'node']),
      'import',
    );
    assert.match(r.stderr, /1 value holds \$\{…\} \(ADDR\): stored as written, and resolved/);
    assert.match(r.stderr, /dotenv-expand/);
    assert.equal(
      ok(await as(alice, ['secrets', 'get', 'ADDR', '--env', 'development', '--raw']), 'raw')
        .stdout,
      '${HOST}:${PORT}\n',
    );
    assert.equal(
      ok(await as(alice, ['secrets', 'get', 'ADDR', '--env', 'development']), 'resolved').stdout,
      'db:5432\n',
    );
  });
});
