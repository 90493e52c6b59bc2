// The whole journey of issue 6 on the REAL built binary against a REAL server
// process (SQLite): sign-up, project, secrets, `.env` import, `run`, export,
// a second user joining through the invitation e-mail, pipelines with only
// COFFER_TOKEN, bad input, re-key, and the fallback copy once the server is down.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  buildOnce,
  invitationLink,
  pipelineEnv,
  runCli,
  runInTerminal,
  startServer,
  tempDir,
  userEnv,
  waitForOutput,
  type CliResult,
  type TestServer,
} from './support/harness.js';
import { errorLine, ok } from './support/flow.js';

const NODE = process.execPath;
/** A child that prints the named variables of its environment as JSON. */
const printEnv = (...names: string[]) => [
  '--',
  NODE,
  '-e',
  `process.stdout.write(JSON.stringify(Object.fromEntries(${JSON.stringify(names)}.map((n) => [n, process.env[n] ?? null]))))`,
];

/** One stderr line `coffer: … (code)` and exit code 1. */
function failsWith(r: CliResult, code: string, message?: RegExp): void {
  const line = errorLine(r, 1, code);
  if (message) assert.match(line, message);
}

const TRICKY = 'it\'s "quoted" $HOME `x` \\ back\nand a second line';

describe('coffer end to end (SQLite)', () => {
  let server: TestServer;
  let alice: Record<string, string>;
  let bob: Record<string, string>;
  let work: string;
  let projectId: string;
  const as = (env: Record<string, string>, args: string[], input?: string) =>
    runCli(args, { env, cwd: work, ...(input !== undefined ? { input } : {}) });

  before(async () => {
    buildOnce();
    server = await startServer();
    alice = userEnv(server, tempDir('alice'));
    bob = userEnv(server, tempDir('bob'));
    work = tempDir('work');
  });
  after(async () => {
    await server?.cleanup();
  });

  test('a new user signs up, creates a project and links a directory to it', async () => {
    const signup = ok(
      await as(
        alice,
        [
          'signup',
          '--email',
          'alice@example.test',
          '--name',
          'Alice',
          '--password-stdin',
          '--json',
        ],
        'alice correct horse\n',
      ),
      'signup',
    );
    const signed = JSON.parse(signup.stdout) as { user: { email: string }; recovery_key: string };
    assert.equal(signed.user.email, 'alice@example.test');
    assert.match(signed.recovery_key, /^CRK-[0-9A-Z]{4}(-[0-9A-Z]{3,4}){13}$/);

    const sessionFile = join(alice.HOME!, '.config', 'coffer', 'session.json');
    assert.equal(statSync(sessionFile).mode & 0o777, 0o600);
    assert.equal(statSync(join(alice.HOME!, '.config', 'coffer')).mode & 0o777, 0o700);
    assert.ok(
      !readFileSync(sessionFile, 'utf8').includes('alice correct horse'),
      'the password is never stored',
    );

    const who = ok(await as(alice, ['whoami']), 'whoami');
    assert.match(who.stdout, /Alice <alice@example\.test>/);

    const created = ok(
      await as(alice, ['projects', 'create', 'Storefront', '--json']),
      'projects create',
    );
    projectId = (JSON.parse(created.stdout) as { id: string }).id;
    assert.match(projectId, /^proj_/);
    const list = ok(await as(alice, ['projects', 'list']), 'projects list');
    assert.match(list.stdout, new RegExp(`${projectId}\\s+Storefront\\s+admin`));

    ok(await as(alice, ['setup', '--project', 'Storefront', '--env', 'development']), 'setup');
    const link = JSON.parse(readFileSync(join(work, '.coffer.json'), 'utf8')) as Record<
      string,
      string
    >;
    assert.deepEqual(link, { server: server.url, project: projectId, environment: 'development' });

    const envs = JSON.parse(
      ok(await as(alice, ['envs', 'list', '--json']), 'envs list').stdout,
    ) as { slug: string }[];
    assert.deepEqual(envs.map((e) => e.slug).sort(), ['development', 'production', 'staging']);
  });

  test('sets secrets, imports a .env, lists names and reads values', async () => {
    ok(await as(alice, ['secrets', 'set', 'DATABASE_URL', 'postgres://db.internal/shop']), 'set');
    ok(await as(alice, ['secrets', 'set', 'TRICKY', '--stdin'], `${TRICKY}\n`), 'set --stdin');
    writeFileSync(
      join(work, '.env'),
      [
        '# payment provider',
        'export STRIPE_KEY=sk_test_123',
        'GREETING="hello world"   # a comment',
        "SINGLE='keep $THIS literal'",
        'EMPTY=',
        '',
      ].join('\n'),
    );
    const imported = ok(await as(alice, ['secrets', 'import', '.env', '--json']), 'import');
    assert.deepEqual((JSON.parse(imported.stdout) as { created: string[] }).created.sort(), [
      'EMPTY',
      'GREETING',
      'SINGLE',
      'STRIPE_KEY',
    ]);

    const names = JSON.parse(ok(await as(alice, ['secrets', 'list', '--json']), 'list').stdout) as {
      name: string;
      value?: string;
    }[];
    assert.deepEqual(names.map((s) => s.name).sort(), [
      'DATABASE_URL',
      'EMPTY',
      'GREETING',
      'SINGLE',
      'STRIPE_KEY',
      'TRICKY',
    ]);
    assert.ok(
      names.every((s) => s.value === undefined),
      'list shows names, never values',
    );

    assert.equal(ok(await as(alice, ['secrets', 'get', 'TRICKY']), 'get').stdout, `${TRICKY}\n`);
    assert.equal(
      ok(await as(alice, ['secrets', 'get', 'SINGLE']), 'get').stdout,
      'keep $THIS literal\n',
    );
    assert.equal(
      ok(await as(alice, ['secrets', 'get', 'GREETING']), 'get').stdout,
      'hello world\n',
    );
  });

  test('run: the child sees the secrets on top of the parent environment', async () => {
    const r = ok(
      await runCli(
        ['run', ...printEnv('DATABASE_URL', 'TRICKY', 'STRIPE_KEY', 'PARENT_ONLY', 'GREETING')],
        {
          env: { ...alice, PARENT_ONLY: 'from the parent', GREETING: 'overridden by the secret' },
          cwd: work,
        },
      ),
      'run',
    );
    assert.deepEqual(JSON.parse(r.stdout), {
      DATABASE_URL: 'postgres://db.internal/shop',
      TRICKY,
      STRIPE_KEY: 'sk_test_123',
      PARENT_ONLY: 'from the parent',
      GREETING: 'hello world',
    });
  });

  test('run passes the exit code through; a missing command exits 127', async () => {
    const seven = await as(alice, ['run', '--', NODE, '-e', 'process.exit(7)']);
    assert.equal(seven.code, 7);
    assert.equal(seven.stderr, '');
    const missing = await as(alice, ['run', '--', 'no-such-command-coffer-test']);
    assert.equal(missing.code, 127);
    assert.match(
      missing.stderr,
      /^coffer: command not found: no-such-command-coffer-test \(command_not_found\)\n$/,
    );
  });

  test('run passes signals to the child and exits like it', async () => {
    // The child handles SIGTERM itself and exits 42: coffer must forward the
    // signal, wait, and exit with 42.
    const handled = await runCli(
      [
        'run',
        '--',
        NODE,
        '-e',
        "process.on('SIGTERM', () => { console.log('child got SIGTERM'); process.exit(42); }); console.log('ready'); setInterval(() => {}, 1000);",
      ],
      { env: alice, cwd: work },
      (child) => void waitForOutput(child, 'ready').then(() => child.kill('SIGTERM')),
    );
    assert.equal(handled.code, 42);
    assert.match(handled.stdout, /child got SIGTERM/);

    // The child does not handle SIGINT: it dies of it, and coffer exits 128 + 2.
    const killed = await runCli(
      ['run', '--', NODE, '-e', "console.log('ready'); setInterval(() => {}, 1000);"],
      { env: alice, cwd: work },
      (child) => void waitForOutput(child, 'ready').then(() => child.kill('SIGINT')),
    );
    assert.equal(killed.code, 130);

    const hup = await runCli(
      [
        'run',
        '--',
        NODE,
        '-e',
        "process.on('SIGHUP', () => process.exit(3)); console.log('ready'); setInterval(() => {}, 1000);",
      ],
      { env: alice, cwd: work },
      (child) => void waitForOutput(child, 'ready').then(() => child.kill('SIGHUP')),
    );
    assert.equal(hup.code, 3);
  });

  test('exports as dotenv, JSON, YAML and shell, each readable back', async () => {
    const expected = JSON.parse(
      ok(await as(alice, ['secrets', 'export', '--format', 'json']), 'json').stdout,
    ) as Record<string, string>;
    assert.equal(expected.TRICKY, TRICKY);
    assert.equal(expected.EMPTY, '');
    assert.equal(Object.keys(expected).length, 6);

    // shell: sourcing the export reproduces every value exactly.
    const shell = ok(await as(alice, ['secrets', 'export', '--format', 'shell']), 'shell').stdout;
    const script = join(work, 'exported.sh');
    writeFileSync(script, shell);
    const sourced = execFileSync(
      'sh',
      ['-c', `. '${script}'; "${NODE}" -e 'process.stdout.write(process.env.TRICKY)'`],
      {
        env: { PATH: process.env.PATH },
        encoding: 'utf8',
      },
    );
    assert.equal(sourced, TRICKY);

    // dotenv: TRICKY holds both kinds of quote and a line break, which no quoting lets both
    // npm dotenv and python-dotenv read back: the plain export refuses it, naming the secret.
    const refused = await as(alice, ['secrets', 'export']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /TRICKY/);
    assert.equal(refused.stdout, '');
    // For npm dotenv it can be written, and importing that file (read the same way) gives the same secrets.
    const dotenv = ok(await as(alice, ['secrets', 'export', '--dialect', 'node']), 'dotenv').stdout;
    writeFileSync(join(work, 'roundtrip.env'), dotenv);
    ok(
      await as(alice, [
        'secrets',
        'import',
        'roundtrip.env',
        '--env',
        'staging',
        '--dialect',
        'node',
      ]),
      'import into staging',
    );
    const staging = JSON.parse(
      ok(await as(alice, ['secrets', 'export', '--format', 'json', '--env', 'staging']), 'staging')
        .stdout,
    ) as Record<string, string>;
    assert.deepEqual(staging, expected);

    const yaml = ok(await as(alice, ['secrets', 'export', '--format', 'yaml']), 'yaml').stdout;
    assert.match(yaml, /^"DATABASE_URL": "postgres:\/\/db\.internal\/shop"$/m);
    assert.match(yaml, /^"STRIPE_KEY": "sk_test_123"$/m);
  });

  test('environments, history and rollback, roles, and project deletion', async () => {
    ok(await as(alice, ['envs', 'create', 'QA', '--slug', 'qa']), 'envs create');
    ok(await as(alice, ['envs', 'rename', 'qa', 'Quality', '--slug', 'quality']), 'envs rename');
    let envs = JSON.parse(ok(await as(alice, ['envs', 'list', '--json']), 'envs list').stdout) as {
      slug: string;
      name: string;
    }[];
    assert.deepEqual(envs.find((e) => e.slug === 'quality')?.name, 'Quality');
    failsWith(await as(alice, ['envs', 'delete', 'quality']), 'confirmation_required');
    ok(await as(alice, ['envs', 'delete', 'quality', '--yes']), 'envs delete');
    envs = JSON.parse(
      ok(await as(alice, ['envs', 'list', '--json']), 'envs list').stdout,
    ) as typeof envs;
    assert.ok(!envs.some((e) => e.slug === 'quality'));

    ok(await as(alice, ['secrets', 'set', 'ROTATED', 'first', '--env', 'staging']), 'v1');
    ok(
      await as(alice, [
        'secrets',
        'set',
        'ROTATED',
        'second',
        '--env',
        'staging',
        '--comment',
        'rotated',
      ]),
      'v2',
    );
    const versions = JSON.parse(
      ok(
        await as(alice, ['secrets', 'history', 'ROTATED', '--env', 'staging', '--json']),
        'history',
      ).stdout,
    ) as { version: number; value?: string }[];
    assert.deepEqual(
      versions.map((v) => v.version),
      [2, 1],
    );
    assert.ok(
      versions.every((v) => v.value === undefined),
      'no values without --reveal',
    );
    const revealed = ok(
      await as(alice, ['secrets', 'history', 'ROTATED', '--env', 'staging', '--reveal']),
      'reveal',
    ).stdout;
    assert.match(revealed, /^2 .+ second$/m);
    assert.match(revealed, /^1 .+ first$/m);
    const rolledBack = JSON.parse(
      ok(
        await as(alice, ['secrets', 'rollback', 'ROTATED', '1', '--env', 'staging', '--json']),
        'rollback',
      ).stdout,
    ) as { version: number };
    assert.equal(rolledBack.version, 3);
    assert.equal(
      ok(await as(alice, ['secrets', 'get', 'ROTATED', '--env', 'staging']), 'get').stdout,
      'first\n',
    );
    // A stale --expected-version is refused with the API's conflict code.
    failsWith(
      await as(alice, [
        'secrets',
        'set',
        'ROTATED',
        'x',
        '--env',
        'staging',
        '--expected-version',
        '1',
      ]),
      'version_conflict',
    );

    ok(
      await as(alice, ['members', 'invite', 'dave@example.test', '--role', 'viewer']),
      'invite dave',
    );
    ok(await as(alice, ['members', 'set-role', 'dave@example.test', 'developer']), 'set-role');
    const members = JSON.parse(
      ok(await as(alice, ['members', 'list', '--status', 'pending', '--json']), 'members').stdout,
    ) as {
      user: { email: string };
      role: string;
    }[];
    assert.deepEqual(
      members.map((m) => [m.user.email, m.role]),
      [['dave@example.test', 'developer']],
    );
    ok(await as(alice, ['members', 'remove', 'dave@example.test']), 'withdraw');
    // The only admin cannot step down.
    failsWith(
      await as(alice, ['members', 'set-role', 'alice@example.test', 'viewer']),
      'last_admin',
    );

    const temp = JSON.parse(
      ok(await as(alice, ['projects', 'create', 'Temporary', '--json']), 'create').stdout,
    ) as { id: string };
    failsWith(await as(alice, ['projects', 'delete', 'Temporary']), 'confirmation_required');
    ok(await as(alice, ['projects', 'delete', 'Temporary', '--yes']), 'projects delete');
    failsWith(await as(alice, ['envs', 'list', '--project', temp.id]), 'not_found');
  });

  test('a second user signs up from the invitation e-mail, accepts, is granted, and reads', async () => {
    ok(await as(alice, ['members', 'invite', 'bob@example.test', '--role', 'developer']), 'invite');
    const link = await invitationLink(server, 'bob@example.test');
    ok(
      await as(
        bob,
        [
          'signup',
          '--email',
          'bob@example.test',
          '--name',
          'Bob',
          '--password-stdin',
          '--invitation',
          link,
        ],
        'bob battery staple\n',
      ),
      'bob signup',
    );
    const invitations = JSON.parse(
      ok(await as(bob, ['invitations', 'list', '--json']), 'invitations').stdout,
    ) as { project: { id: string } }[];
    assert.deepEqual(
      invitations.map((i) => i.project.id),
      [projectId],
    );
    ok(await as(bob, ['invitations', 'accept', 'Storefront']), 'accept');

    // An invitation to another project, declined: it is gone from bob's list.
    ok(await as(alice, ['projects', 'create', 'Side project']), 'second project');
    ok(
      await as(alice, [
        'members',
        'invite',
        'bob@example.test',
        '--role',
        'viewer',
        '--project',
        'Side project',
      ]),
      'invite',
    );
    ok(await as(bob, ['invitations', 'decline', 'Side project']), 'decline');
    const left = JSON.parse(
      ok(await as(bob, ['invitations', 'list', '--json']), 'invitations').stdout,
    ) as unknown[];
    assert.equal(left.length, 0);

    // Alice signed up without an invitation link: her address is unverified, so
    // accepting needs the token from her invitation e-mail.
    ok(await as(bob, ['projects', 'create', 'Bob tools']), 'bob project');
    ok(
      await as(bob, [
        'members',
        'invite',
        'alice@example.test',
        '--role',
        'viewer',
        '--project',
        'Bob tools',
      ]),
      'invite alice',
    );
    failsWith(
      await as(alice, ['invitations', 'accept', 'Bob tools']),
      'invitation_token_required',
      /--token/,
    );
    const aliceLink = await invitationLink(server, 'alice@example.test');
    const joined = JSON.parse(
      ok(
        await as(alice, [
          'invitations',
          'accept',
          'Bob tools',
          '--invitation',
          aliceLink,
          '--json',
        ]),
        'accept with link',
      ).stdout,
    ) as { status: string; role: string };
    assert.deepEqual([joined.status, joined.role], ['active', 'viewer']);

    // Accepted but not granted: bob cannot decrypt yet.
    failsWith(await as(bob, ['secrets', 'get', 'DATABASE_URL']), 'no_grant');

    const bobFingerprint = (
      JSON.parse(ok(await as(bob, ['whoami', '--json']), 'whoami').stdout) as {
        fingerprint: string;
      }
    ).fingerprint;
    const status = JSON.parse(
      ok(await as(alice, ['vault', 'status', '--json']), 'status').stdout,
    ) as {
      pending_grants: { email: string; fingerprint: string }[];
    };
    assert.deepEqual(
      status.pending_grants.map((p) => [p.email, p.fingerprint]),
      [['bob@example.test', bobFingerprint]],
    );

    // Without a terminal, a grant needs --yes or the fingerprint.
    failsWith(await as(alice, ['vault', 'grant', 'bob@example.test']), 'confirmation_required');
    failsWith(
      await as(alice, [
        'vault',
        'grant',
        'bob@example.test',
        '--fingerprint',
        '00000000 00000000 00000000 00000000 00000000',
      ]),
      'fingerprint_mismatch',
    );
    // At a terminal it shows the member and the fingerprint and asks; "no" grants nothing.
    const declined = await runInTerminal(
      ['vault', 'grant', 'bob@example.test'],
      { env: alice, cwd: work },
      [[/\[y\/N\] $/, 'n']],
    );
    assert.equal(declined.code, 1);
    assert.ok(declined.transcript.includes(bobFingerprint), declined.transcript);
    assert.match(declined.transcript, /Bob <bob@example\.test> \(developer\)/);
    assert.match(declined.transcript, /\(cancelled\)/);
    failsWith(await as(bob, ['secrets', 'get', 'DATABASE_URL']), 'no_grant');

    const granted = ok(
      await as(alice, ['vault', 'grant', 'bob@example.test', '--fingerprint', bobFingerprint]),
      'grant',
    );
    assert.ok(granted.stderr.includes(bobFingerprint), 'the grant shows the fingerprint');

    assert.equal(
      ok(await as(bob, ['secrets', 'get', 'DATABASE_URL']), 'bob reads').stdout,
      'postgres://db.internal/shop\n',
    );
    ok(await as(bob, ['secrets', 'set', 'FROM_BOB', 'written by bob']), 'bob writes');
    const bobRun = ok(await as(bob, ['run', ...printEnv('FROM_BOB', 'STRIPE_KEY')]), 'bob run');
    assert.deepEqual(JSON.parse(bobRun.stdout), {
      FROM_BOB: 'written by bob',
      STRIPE_KEY: 'sk_test_123',
    });
  });

  test('an API key and a CI token run in a pipeline with only COFFER_TOKEN', async () => {
    ok(
      await as(alice, ['secrets', 'set', 'PROD_ONLY', 'production value', '--env', 'production']),
      'set production',
    );
    const apiKey = ok(
      await as(alice, [
        'api-keys',
        'create',
        '--name',
        'deploy',
        '--role',
        'developer',
        '--scope',
        'development:read',
      ]),
      'api-keys create',
    ).stdout.trim();
    assert.match(apiKey, /^cek_[0-9A-Za-z]{36}\.[A-Za-z0-9_-]{130}$/);

    // A pipeline: no HOME, no session, no .coffer.json; only the credential, the server and its CA.
    const pipelineDir = tempDir('pipeline');
    const inPipeline = (token: string, args: string[]) =>
      runCli(args, { env: pipelineEnv(server, token), cwd: pipelineDir });

    const withKey = ok(
      await inPipeline(apiKey, [
        'run',
        '--env',
        'development',
        ...printEnv('DATABASE_URL', 'TRICKY'),
      ]),
      'run with API key',
    );
    assert.deepEqual(JSON.parse(withKey.stdout), {
      DATABASE_URL: 'postgres://db.internal/shop',
      TRICKY,
    });

    // The API key mints a short-lived CI token for the same environment.
    const ciToken = ok(
      await inPipeline(apiKey, ['ci-tokens', 'create', '--env', 'development', '--ttl', '30m']),
      'ci-tokens create',
    ).stdout.trim();
    assert.match(ciToken, /^ci_[0-9A-Za-z]{36}\.[A-Za-z0-9_-]{130}$/);
    // A token that can read exactly one environment needs no --env.
    const withCi = ok(
      await inPipeline(ciToken, ['run', ...printEnv('STRIPE_KEY')]),
      'run with CI token',
    );
    assert.deepEqual(JSON.parse(withCi.stdout), { STRIPE_KEY: 'sk_test_123' });

    const ciTokens = JSON.parse(
      ok(await inPipeline(apiKey, ['ci-tokens', 'list', '--json']), 'ci-tokens list').stdout,
    ) as {
      id: string;
      revoked_at: string | null;
    }[];
    assert.equal(ciTokens.length, 1);

    // Outside its scope the token gets nothing, and a read-only key cannot write.
    const outOfScope = await inPipeline(ciToken, ['run', '--env', 'production', '--', 'true']);
    assert.equal(outOfScope.code, 1, outOfScope.stderr);
    assert.doesNotMatch(outOfScope.stderr + outOfScope.stdout, /production value/);
    failsWith(
      await inPipeline(apiKey, ['secrets', 'set', 'NOPE', 'x', '--env', 'development']),
      'forbidden',
    );

    ok(await inPipeline(apiKey, ['ci-tokens', 'revoke', ciTokens[0]!.id]), 'ci-tokens revoke');
    failsWith(await inPipeline(ciToken, ['run', '--', 'true']), 'unauthenticated');

    // Only the bearer part is not a credential the CLI accepts.
    failsWith(
      await inPipeline(apiKey.split('.')[0]!, ['run', '--env', 'development', '--', 'true']),
      'invalid_credential',
    );

    const listed = ok(await as(alice, ['api-keys', 'list']), 'api-keys list').stdout;
    assert.match(listed, /deploy\s+developer\s+development:read/);

    // Revoked: refused at once.
    const keys = JSON.parse(
      ok(await as(alice, ['api-keys', 'list', '--json']), 'api-keys list').stdout,
    ) as { id: string; name: string }[];
    const deploy = keys.find((k) => k.name === 'deploy')!;
    ok(await as(alice, ['api-keys', 'revoke', deploy.id]), 'revoke');
    failsWith(
      await inPipeline(apiKey, ['run', '--env', 'development', '--', 'true']),
      'unauthenticated',
    );
  });

  test('bad input gives one clear line and a non-zero exit', async () => {
    failsWith(
      await as(alice, ['secrets', 'list', '--project', 'proj_doesnotexist0000']),
      'not_found',
    );
    failsWith(
      await as(alice, ['secrets', 'list', '--project', 'No Such Project']),
      'not_found',
      /no project "No Such Project"/,
    );
    failsWith(await as(alice, ['run', '--env', 'nowhere', '--', 'true']), 'not_found');

    const badRole = await as(alice, ['members', 'invite', 'carol@example.test', '--role', 'owner']);
    assert.equal(badRole.code, 2);
    assert.match(badRole.stderr, /--role must be admin, developer or viewer/);
    // bob is a developer: member management is for admins.
    failsWith(
      await as(bob, ['members', 'invite', 'carol@example.test', '--role', 'viewer']),
      'forbidden',
    );

    // A malformed .env names the line and writes nothing.
    writeFileSync(
      join(work, 'broken.env'),
      'GOOD=1\nthis line is not an assignment\nALSO_GOOD=2\n',
    );
    const broken = await as(alice, ['secrets', 'import', 'broken.env']);
    failsWith(broken, '[a-z_]+', /line 2/);
    const after = JSON.parse(ok(await as(alice, ['secrets', 'list', '--json']), 'list').stdout) as {
      name: string;
    }[];
    assert.ok(
      !after.some((s) => s.name === 'GOOD' || s.name === 'ALSO_GOOD'),
      'nothing of the broken file was written',
    );

    failsWith(await as(alice, ['secrets', 'import', 'missing.env']), 'file_unreadable');
    failsWith(await as(alice, ['secrets', 'get', 'NOT_A_SECRET']), 'not_found');
  });

  test('at a terminal: prompts, hidden password and hidden values', async () => {
    const login = await runInTerminal(['login'], { env: alice, cwd: work }, [
      ['E-mail: ', 'alice@example.test'],
      ['Password: ', 'alice correct horse'],
    ]);
    assert.equal(login.code, 0, login.transcript);
    assert.ok(login.transcript.includes('alice@example.test'), 'the e-mail is echoed');
    assert.ok(
      !login.transcript.includes('alice correct horse'),
      `the password is not echoed:\n${login.transcript}`,
    );

    const set = await runInTerminal(['secrets', 'set', 'TYPED'], { env: alice, cwd: work }, [
      ['Value of TYPED: ', 'typed at the terminal'],
    ]);
    assert.equal(set.code, 0, set.transcript);
    assert.ok(!set.transcript.includes('typed at the terminal'), set.transcript);
    assert.equal(
      ok(await as(alice, ['secrets', 'get', 'TYPED']), 'get').stdout,
      'typed at the terminal\n',
    );

    // Deleting asks at a terminal; "no" keeps the secret.
    const kept = await runInTerminal(['secrets', 'delete', 'TYPED'], { env: alice, cwd: work }, [
      [/\[y\/N\] $/, 'n'],
    ]);
    assert.equal(kept.code, 1);
    ok(await as(alice, ['secrets', 'get', 'TYPED']), 'still there');
    failsWith(await as(alice, ['secrets', 'delete', 'TYPED']), 'confirmation_required');
    ok(await as(alice, ['secrets', 'delete', 'TYPED', '--yes']), 'delete --yes');
    failsWith(await as(alice, ['secrets', 'get', 'TYPED']), 'not_found');
  });

  test('removing members: --rekey in scripts, the re-key offered (with a progress bar) at a terminal', async () => {
    // --rekey re-keys whoever was removed (here a pending invitation).
    ok(
      await as(alice, ['members', 'invite', 'carol@example.test', '--role', 'viewer']),
      'invite carol',
    );
    const removedCarol = JSON.parse(
      ok(
        await as(alice, ['members', 'remove', 'carol@example.test', '--rekey', '--json']),
        'remove carol',
      ).stdout,
    ) as { rekeyed: boolean };
    assert.equal(removedCarol.rekeyed, true);
    let status = JSON.parse(
      ok(await as(alice, ['vault', 'status', '--json']), 'status').stdout,
    ) as {
      epoch: number;
      rekey_recommended: boolean;
    };
    assert.equal(status.epoch, 2);

    // Bob's CI token goes with him, and the removal names it.
    const bobsToken = ok(
      await as(bob, ['ci-tokens', 'create', '--env', 'development', '--ttl', '30m']),
      "bob's ci token",
    ).stdout.trim();
    const [bobsTokenRow] = JSON.parse(
      ok(await as(bob, ['ci-tokens', 'list', '--json']), "bob's tokens").stdout,
    ) as { id: string }[];
    const bobsPipeline = (args: string[]) =>
      runCli(args, { env: pipelineEnv(server, bobsToken), cwd: tempDir('bobs-pipeline') });
    ok(await bobsPipeline(['run', 'true']), "bob's token works");

    // Bob could read secrets: at a terminal, removing him offers the re-key.
    const removedBob = await runInTerminal(
      ['members', 'remove', 'bob@example.test'],
      { env: alice, cwd: work },
      [[/Re-key the vault now\? \[y\/N\] $/, 'y']],
    );
    assert.equal(removedBob.code, 0, removedBob.transcript);
    assert.match(removedBob.transcript, /█/, 'a progress bar was drawn');
    assert.match(removedBob.transcript, /Re-keyed: epoch 3/);
    assert.match(
      removedBob.transcript,
      new RegExp(`Revoked with them[^\\n]*\\n\\s+${bobsTokenRow!.id}  CI token "CI token"`),
    );
    failsWith(await bobsPipeline(['run', 'true']), 'unauthenticated');

    status = JSON.parse(
      ok(await as(alice, ['vault', 'status', '--json']), 'status').stdout,
    ) as typeof status;
    assert.equal(status.epoch, 3);
    assert.equal(status.rekey_recommended, false);
    assert.equal(
      ok(await as(alice, ['secrets', 'get', 'FROM_BOB']), 'read after re-key').stdout,
      'written by bob\n',
    );
    failsWith(await as(bob, ['secrets', 'get', 'DATABASE_URL']), 'not_found');
  });

  test('--fallback keeps an encrypted copy and uses it when the server is down', async () => {
    const copy = join(work, 'fallback.enc');
    const fresh = ok(
      await as(alice, ['run', '--fallback', copy, ...printEnv('DATABASE_URL')]),
      'run with fallback',
    );
    assert.deepEqual(JSON.parse(fresh.stdout), { DATABASE_URL: 'postgres://db.internal/shop' });
    assert.equal(statSync(copy).mode & 0o777, 0o600);
    const stored = readFileSync(copy, 'utf8');
    for (const plaintext of [
      'postgres://db.internal/shop',
      'sk_test_123',
      'DATABASE_URL',
      'second line',
    ]) {
      assert.ok(!stored.includes(plaintext), `the fallback copy must not contain ${plaintext}`);
    }

    ok(await as(alice, ['logout']), 'logout');
    assert.throws(() => statSync(join(alice.HOME!, '.config', 'coffer', 'session.json')));
    ok(
      await as(
        alice,
        ['login', '--email', 'alice@example.test', '--password-stdin'],
        'alice correct horse\n',
      ),
      'login',
    );

    await server.stop();
    const offline = ok(
      await as(alice, ['run', '--fallback', copy, ...printEnv('DATABASE_URL', 'TRICKY')]),
      'run offline',
    );
    assert.deepEqual(JSON.parse(offline.stdout), {
      DATABASE_URL: 'postgres://db.internal/shop',
      TRICKY,
    });
    assert.match(offline.stderr, /unreachable.*fallback/);

    failsWith(await as(alice, ['run', '--', 'true']), 'network_error');
    failsWith(
      await as(alice, ['run', '--fallback', join(work, 'never-written.enc'), '--', 'true']),
      'fallback_unavailable',
    );
    // Someone else's keys cannot open the copy.
    failsWith(
      await runCli(['run', '--fallback', copy, '--', 'true'], { env: bob, cwd: work }),
      'fallback_unavailable',
    );
  });
});
