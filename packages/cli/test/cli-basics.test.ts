// The binary's contract without a working server: help, usage errors (exit 2),
// one-line errors (exit 1), and the refusals that protect credentials.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { buildOnce, runCli, tempDir } from './support/harness.js';

const COMMANDS = [
  'signup',
  'login',
  'logout',
  'whoami',
  'setup',
  'run',
  'projects list',
  'projects create',
  'projects delete',
  'envs list',
  'envs create',
  'envs rename',
  'envs delete',
  'members list',
  'members invite',
  'members set-role',
  'members remove',
  'invitations list',
  'invitations accept',
  'invitations decline',
  'vault status',
  'vault grant',
  'vault rekey',
  'vault chain',
  'secrets list',
  'secrets get',
  'secrets set',
  'secrets delete',
  'secrets history',
  'secrets rollback',
  'secrets import',
  'secrets export',
  'api-keys create',
  'api-keys list',
  'api-keys revoke',
  'ci-tokens create',
  'ci-tokens list',
  'ci-tokens revoke',
  'scan',
];

/** An environment with nothing in it but PATH and a HOME of its own. */
function bareEnv(
  extra: Record<string, string> = {},
): Record<string, string> & { HOME: string; COFFER_SERVER: string } {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: tempDir('home'),
    COFFER_SERVER: 'https://127.0.0.1:1',
    ...extra,
  };
}

/** Every error is exactly one line on stderr: `coffer: <message> (<code>)`. */
function assertOneLineError(stderr: string, code: string) {
  const lines = stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, `expected one line, got:\n${stderr}`);
  assert.match(lines[0]!, /^coffer: .+ \([a-z_]+\)$/);
  assert.ok(lines[0]!.endsWith(`(${code})`), `expected code ${code}: ${lines[0]}`);
}

/** A syntactically valid stored session, for the refusals that happen before any request. */
function writeFakeSession(home: string, server: string, mode: number) {
  const dir = join(home, '.config', 'coffer');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'session.json');
  const key = (n: number) => Buffer.alloc(n, 1).toString('base64url');
  writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      server,
      caFile: null,
      cookie: 'not-a-real-session',
      user: { id: 'usr_x', email: 'x@example.test', name: 'X' },
      keys: {
        encryption: key(32),
        encryptionPublic: key(32),
        signing: key(64),
        signingPublic: key(32),
      },
      createdAt: new Date().toISOString(),
    }),
  );
  chmodSync(file, mode);
  return file;
}

describe('coffer without a server', () => {
  before(() => buildOnce());

  test('every command has --help, printed on stdout with exit 0', async () => {
    for (const name of COMMANDS) {
      const r = await runCli([...name.split(' '), '--help'], { env: bareEnv() });
      assert.equal(r.code, 0, `${name} --help: ${r.stderr}`);
      assert.ok(
        r.stdout.startsWith(`Usage: coffer ${name}`),
        `${name} --help printed:\n${r.stdout}`,
      );
      assert.match(r.stdout, /--json/);
      assert.equal(r.stderr, '');
    }
    const top = await runCli(['--help'], { env: bareEnv() });
    assert.equal(top.code, 0);
    for (const group of ['signup', 'secrets', 'run', 'api-keys', 'ci-tokens', 'vault'])
      assert.match(top.stdout, new RegExp(`\\n  ${group} `));
  });

  test('usage errors exit 2 with one line naming the problem', async () => {
    const cases: [string[], RegExp][] = [
      [['frobnicate'], /unknown command "frobnicate"/],
      [['secrets', 'frobnicate'], /unknown command "secrets frobnicate"/],
      [['secrets', 'list', '--no-such-option'], /unknown option --no-such-option/],
      [['secrets', 'get'], /missing argument: NAME/],
      [['secrets', 'get', 'A', 'B'], /unexpected argument "B"/],
      [['members', 'invite', 'x@example.test'], /--role/],
      [['run', '--env', 'dev'], /missing the command to run/],
      [['secrets', 'export', '--format', 'xml'], /--format/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args, { env: bareEnv({ COFFER_SERVER: 'https://127.0.0.1:1' }) });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assertOneLineError(r.stderr, 'usage');
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '');
    }
  });

  test('not logged in: a clear error, exit 1', async () => {
    const r = await runCli(['projects', 'list'], {
      env: bareEnv({ COFFER_SERVER: 'https://127.0.0.1:1' }),
    });
    assert.equal(r.code, 1);
    assertOneLineError(r.stderr, 'not_logged_in');
  });

  test('a session file readable by others is refused, whatever it holds', async () => {
    const env = bareEnv({ COFFER_SERVER: 'https://127.0.0.1:1' });
    const file = writeFakeSession(env.HOME, env.COFFER_SERVER, 0o644);
    const r = await runCli(['whoami'], { env });
    assert.equal(r.code, 1);
    assertOneLineError(r.stderr, 'insecure_session_file');
    assert.match(r.stderr, /0644/);
    assert.ok(r.stderr.includes(file));
  });

  test('logout removes the session file even when it cannot be used or the server is away', async () => {
    const open = bareEnv();
    const openFile = writeFakeSession(open.HOME, open.COFFER_SERVER, 0o644);
    const r1 = await runCli(['logout'], { env: open });
    assert.equal(r1.code, 0, r1.stderr);
    assert.equal(existsSync(openFile), false);

    const away = bareEnv();
    const awayFile = writeFakeSession(away.HOME, away.COFFER_SERVER, 0o600);
    const r2 = await runCli(['logout', '--json'], {
      env: { ...away, COFFER_SERVER: 'https://127.0.0.1:2' },
    });
    assert.equal(r2.code, 0, r2.stderr);
    assert.deepEqual(JSON.parse(r2.stdout), { logged_out: true, ended_on_server: false });
    assert.equal(existsSync(awayFile), false);
  });

  test('server down: a network error in one line, exit 1', async () => {
    const env = bareEnv({ COFFER_SERVER: 'https://127.0.0.1:1' });
    writeFakeSession(env.HOME, env.COFFER_SERVER, 0o600);
    const r = await runCli(['whoami'], { env });
    assert.equal(r.code, 1);
    assertOneLineError(r.stderr, 'network_error');
  });

  test('plain http:// is refused except to this machine', async () => {
    const r = await runCli(['login', '--email', 'a@example.test', '--password-stdin'], {
      env: bareEnv({ COFFER_SERVER: 'http://coffer.example.com' }),
      input: 'a password\n',
    });
    assert.equal(r.code, 1);
    assertOneLineError(r.stderr, 'insecure_server_url');
    const local = await runCli(['login', '--email', 'a@example.test', '--password-stdin'], {
      env: bareEnv({ COFFER_SERVER: 'http://localhost:1' }),
      input: 'a password\n',
    });
    assert.equal(local.code, 1);
    assertOneLineError(local.stderr, 'network_error');
  });

  test('a CA file that is not a certificate is refused before any request', async () => {
    const home = tempDir('home');
    const ca = join(home, 'not-a-cert.pem');
    writeFileSync(ca, 'hello');
    const r = await runCli(['login', '--email', 'a@example.test', '--password-stdin', '--ca', ca], {
      env: bareEnv({ COFFER_SERVER: 'https://127.0.0.1:1' }),
      input: 'a password\n',
    });
    assert.equal(r.code, 1);
    assertOneLineError(r.stderr, 'ca_file_invalid');
  });
});
