// No silent key substitution on the REAL built binary against a REAL server
// process (SQLite), with the database changed behind the server's back by
// direct SQL, as a compromised server or anyone with write access to it could.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  createGrant,
  decodeKeyPart,
  fingerprint,
  generateProjectKey,
  generateUserKeys,
  ready,
  toBase64url,
} from '@coffer/sdk';
import {
  buildOnce,
  invitationLink,
  pipelineEnv,
  runCli,
  startServer,
  tempDir,
  userEnv,
  type CliResult,
  type TestServer,
} from './support/harness.js';
import { errorLine, ok } from './support/flow.js';
import { openSqlite, type SqliteConnection } from '../../server/src/db/sqlite-driver.js';

/** One stderr line `coffer: … (code)`, exit code 1, nothing on stdout. */
function failsWith(r: CliResult, code: string, names?: string): void {
  const line = errorLine(r, 1, code);
  if (names) assert.ok(line.includes(names), line);
  assert.equal(r.stdout, '');
}

describe('coffer key trust (SQLite)', () => {
  let server: TestServer;
  let alice: Record<string, string>;
  let bob: Record<string, string>;
  let work: string;
  let sql: SqliteConnection;
  const as = (env: Record<string, string>, args: string[], input?: string) =>
    runCli(args, { env, cwd: work, ...(input !== undefined ? { input } : {}) });
  const userId = (email: string) =>
    (sql.prepare('select id from users where email = ?').get(email) as { id: string }).id;
  const keysOf = (id: string) =>
    sql.prepare('select public_key, signing_public_key from users where id = ?').get(id) as {
      public_key: string;
      signing_public_key: string;
    };
  const setKeys = (id: string, keys: { public_key: string; signing_public_key: string }) =>
    sql
      .prepare('update users set public_key = ?, signing_public_key = ? where id = ?')
      .run(keys.public_key, keys.signing_public_key, id);
  const attackerKeys = () => {
    const k = generateUserKeys();
    return {
      keys: k,
      row: {
        public_key: toBase64url(k.encryption.publicKey),
        signing_public_key: toBase64url(k.signing.publicKey),
      },
    };
  };

  before(async () => {
    await ready();
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
    ok(await as(alice, ['setup', '--project', 'Shop', '--env', 'development']), 'setup');
    ok(await as(alice, ['secrets', 'set', 'DATABASE_URL', 'postgres://real']), 'secret');
    sql = openSqlite(join(server.dataDir, 'coffer.db'));
  });
  after(async () => {
    sql?.close();
    await server?.cleanup();
  });

  test('introduced member: keys substituted after accepting are refused; the real ones are granted without a fingerprint', async () => {
    const invited = JSON.parse(
      ok(
        await as(alice, ['members', 'invite', 'bob@example.test', '--role', 'developer', '--json']),
        'invite',
      ).stdout,
    ) as { id: string; introduction_link: string };
    assert.match(invited.introduction_link, new RegExp(`/invite\\?member=${invited.id}#k=`));
    const emailLink = await invitationLink(server, 'bob@example.test');
    assert.ok(!emailLink.includes('#'), 'the e-mail never carries the introduction secret');
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
          emailLink,
        ],
        'bob battery staple\n',
      ),
      'bob signup',
    );
    const accepted = JSON.parse(
      ok(
        await as(bob, [
          'invitations',
          'accept',
          '--introduction',
          invited.introduction_link,
          '--json',
        ]),
        'accept',
      ).stdout,
    ) as { status: string; inviter_verified: boolean };
    assert.deepEqual([accepted.status, accepted.inviter_verified], ['active', true]);

    const bobId = userId('bob@example.test');
    const real = keysOf(bobId);
    const attacker = attackerKeys();
    setKeys(bobId, attacker.row);
    failsWith(
      await as(alice, ['vault', 'grant', 'bob@example.test', '--yes']),
      'introduction_mismatch',
      'bob@example.test',
    );
    // Even the attacker's own fingerprint, "compared", does not get past the introduction.
    failsWith(
      await as(alice, [
        'vault',
        'grant',
        'bob@example.test',
        '--fingerprint',
        fingerprint(attacker.row.public_key, attacker.row.signing_public_key),
      ]),
      'introduction_mismatch',
    );
    setKeys(bobId, real);
    const granted = ok(await as(alice, ['vault', 'grant', 'bob@example.test', '--yes']), 'grant');
    assert.match(granted.stderr, /verified by their introduction/);
    assert.equal(
      ok(await as(bob, ['run', '--', 'printenv', 'DATABASE_URL']), 'bob run').stdout,
      'postgres://real\n',
    );
  });

  test('a forged admin signing key and a planted grant: `coffer run` fails instead of using the planted key', async () => {
    const aliceId = userId('alice@example.test');
    const bobId = userId('bob@example.test');
    const realAlice = keysOf(aliceId);
    const projectId = (
      sql.prepare('select id from projects where name = ?').get('Shop') as { id: string }
    ).id;
    const stored = sql
      .prepare(
        'select sealed_key, signature from vault_grants where project_id = ? and recipient_id = ?',
      )
      .get(projectId, bobId) as { sealed_key: string; signature: string };
    const attacker = attackerKeys();
    setKeys(aliceId, attacker.row);
    const planted = createGrant({
      key: generateProjectKey(),
      kind: 'project_key',
      projectId,
      epoch: 1,
      recipientId: bobId,
      recipientPublicKey: keysOf(bobId).public_key,
      granterId: aliceId,
      granterSigningSecretKey: attacker.keys.signing.secretKey,
    });
    const plant = (g: { sealed_key: string; signature: string }) =>
      sql
        .prepare(
          'update vault_grants set sealed_key = ?, signature = ? where project_id = ? and recipient_id = ?',
        )
        .run(g.sealed_key, g.signature, projectId, bobId);
    plant(planted);
    failsWith(
      await as(bob, ['run', '--', 'printenv', 'DATABASE_URL']),
      'key_changed',
      'alice@example.test',
    );
    failsWith(await as(bob, ['secrets', 'set', 'PLANTED', 'x']), 'key_changed');
    setKeys(aliceId, realAlice);
    plant(stored);
    assert.equal(
      ok(await as(bob, ['run', '--', 'printenv', 'DATABASE_URL']), 'bob run again').stdout,
      'postgres://real\n',
    );
  });

  test('COFFER_TOKEN: a grant re-signed by a substituted creator key is refused; an old-format credential still runs', async () => {
    const credential = ok(
      await as(alice, [
        'api-keys',
        'create',
        '--name',
        'bound',
        '--role',
        'developer',
        '--scope',
        'development:read',
      ]),
      'api-keys create',
    ).stdout.trim();
    const [bearer, keyPart] = credential.split('.') as [string, string];
    const { seed } = decodeKeyPart(keyPart);
    const oldFormat = `${bearer}.${toBase64url(seed)}`;
    const pipelineDir = tempDir('bound-pipeline');
    const inPipeline = (token: string) =>
      runCli(['run', '--', 'printenv', 'DATABASE_URL'], {
        env: pipelineEnv(server, token),
        cwd: pipelineDir,
      });
    assert.equal(ok(await inPipeline(credential), 'run').stdout, 'postgres://real\n');
    assert.equal(ok(await inPipeline(oldFormat), 'run, old format').stdout, 'postgres://real\n');

    // The server shows an attacker's key as alice's and re-signs the key's grant.
    const aliceId = userId('alice@example.test');
    const realAlice = keysOf(aliceId);
    const attacker = attackerKeys();
    const token = sql
      .prepare("select id, public_key, project_id from api_keys where name = 'bound'")
      .get() as { id: string; public_key: string; project_id: string };
    const grant = sql
      .prepare(
        'select environment_id, epoch, sealed_key, signature from vault_grants where recipient_id = ?',
      )
      .get(token.id) as {
      environment_id: string;
      epoch: number;
      sealed_key: string;
      signature: string;
    };
    const planted = createGrant({
      key: generateProjectKey(),
      kind: 'environment_key',
      projectId: token.project_id,
      epoch: grant.epoch,
      environmentId: grant.environment_id,
      recipientId: token.id,
      recipientPublicKey: token.public_key,
      granterId: aliceId,
      granterSigningSecretKey: attacker.keys.signing.secretKey,
    });
    const plant = (g: { sealed_key: string; signature: string }) =>
      sql
        .prepare('update vault_grants set sealed_key = ?, signature = ? where recipient_id = ?')
        .run(g.sealed_key, g.signature, token.id);
    setKeys(aliceId, attacker.row);
    plant(planted);
    failsWith(await inPipeline(credential), 'untrusted_granter', 'alice@example.test');
    setKeys(aliceId, realAlice);
    plant(grant);
    assert.equal(ok(await inPipeline(credential), 'run again').stdout, 'postgres://real\n');
  });

  test('a pinned key changed on the server is refused naming the member until `coffer keys verify` after a real comparison', async () => {
    const bobId = userId('bob@example.test');
    const pinsBefore = sql
      .prepare('select version, document, signature from key_pins where user_id = ?')
      .get(userId('alice@example.test')) as {
      version: number;
      document: string;
      signature: string;
    };
    const listed = JSON.parse(
      ok(await as(alice, ['keys', 'list', '--json']), 'keys list').stdout,
    ) as {
      version: number;
      pins: { email: string; status: string }[];
    };
    assert.deepEqual(
      listed.pins.map((p) => [p.email, p.status]),
      [['bob@example.test', 'verified']],
    );

    const replaced = attackerKeys();
    setKeys(bobId, replaced.row);
    failsWith(await as(alice, ['vault', 'rekey']), 'key_changed', 'bob@example.test');
    failsWith(
      await as(alice, ['keys', 'verify', 'bob@example.test', '--fingerprint', '0'.repeat(40)]),
      'fingerprint_mismatch',
    );
    const newPrint = fingerprint(replaced.row.public_key, replaced.row.signing_public_key);
    ok(
      await as(alice, ['keys', 'verify', 'bob@example.test', '--fingerprint', newPrint]),
      'keys verify',
    );
    const after = JSON.parse(
      ok(await as(alice, ['keys', 'list', '--json']), 'keys list').stdout,
    ) as {
      version: number;
      pins: { public_key: string; status: string }[];
    };
    assert.equal(after.pins[0]!.public_key, replaced.row.public_key);
    assert.ok(after.version > listed.version);
    ok(await as(alice, ['vault', 'rekey']), 'rekey after verify');

    // The server rolls alice's pins back to an older signed version: refused.
    sql
      .prepare('update key_pins set version = ?, document = ?, signature = ? where user_id = ?')
      .run(
        pinsBefore.version,
        pinsBefore.document,
        pinsBefore.signature,
        userId('alice@example.test'),
      );
    failsWith(await as(alice, ['keys', 'list']), 'pins_rollback');
    failsWith(await as(alice, ['vault', 'status']), 'pins_rollback');
  });
});
