// The signed membership chain through the REAL built binary against a REAL
// server process, with the database changed behind the server's back by direct
// SQL, as a compromised server or anyone with write access to it could. Runs on
// SQLite, and on PostgreSQL when COFFER_TEST_DATABASE_URL names a server (the
// server under test is a separate process, so an in-process PGlite cannot be it).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql, type RawBuilder } from 'kysely';
import {
  CofferClient,
  createGrant,
  generateProjectKey,
  getMembershipChain,
  logIn,
  ready,
  verifyMembershipChain,
  type MembershipStatement,
  type UserKeys,
} from '@coffer/sdk';
import { transportFetch } from '../src/transport.js';
import { openDatabase, type Db } from '../../server/src/db/database.js';
import { DIALECTS, POSTGRES_URL } from '../../server/test/support/db.js';
import {
  buildOnce,
  createPostgresDatabase,
  invitationLink,
  runCli,
  startServer,
  tempDir,
  userEnv,
  type CliResult,
  type TestServer,
} from './support/harness.js';
import { errorLine, ok } from './support/flow.js';

/** One stderr line `coffer: … (code)` naming each of `names`, exit code 1, nothing on stdout. */
function failsWith(r: CliResult, code: string, ...names: string[]): string {
  const line = errorLine(r, 1, code);
  for (const name of names) assert.ok(line.includes(name), line);
  assert.equal(r.stdout, '');
  return line;
}

const UNCHAINED =
  /warning: project proj_\S+ has no signed membership chain yet.*coffer vault chain sign/;
const PASSWORD = (name: string) => `${name} correct horse battery`;

interface ChainJson {
  project_id: string;
  fingerprint: string | null;
  length: number;
  statements: {
    seq: number;
    kind: string;
    email: string | null;
    role: string | null;
    signer_email: string | null;
  }[];
  members: { email: string | null; role: string }[];
}

for (const dialect of DIALECTS) {
  const skip = dialect === 'postgres' && !POSTGRES_URL;
  describe(`coffer and the signed membership chain (${dialect})`, { skip }, () => {
    let server: TestServer;
    let database: { url: string; drop(): Promise<void> } | undefined;
    let db: Db;
    let work: string;
    const users: Record<string, Record<string, string>> = {};
    let shop: string;

    const as = (who: string, args: string[], input?: string) =>
      runCli(args, { env: users[who]!, cwd: work, ...(input !== undefined ? { input } : {}) });
    const email = (who: string) => `${who}@example.test`;
    const one = async <T>(query: RawBuilder<T>) => (await query.execute(db.kysely)).rows[0] as T;
    const userId = async (who: string) =>
      (await one<{ id: string }>(sql`select id from users where email = ${email(who)}`)).id;
    const projectId = async (name: string) =>
      (await one<{ id: string }>(sql`select id from projects where name = ${name}`)).id;
    const setServerRole = async (project: string, who: string, role: string) =>
      sql`update members set role = ${role} where project_id = ${project} and user_id = ${await userId(who)}`.execute(
        db.kysely,
      );

    const logins = new Map<string, { client: CofferClient; keys: UserKeys }>();
    /** A user's SDK client (signed in) and keys, to read the chain through the API. */
    async function sdkLogin(who: string): Promise<{ client: CofferClient; keys: UserKeys }> {
      const known = logins.get(who);
      if (known) return known;
      const client = new CofferClient({
        baseUrl: server.url,
        fetch: await transportFetch(server.caFile),
      });
      const { keys } = await logIn(client, { email: email(who), password: PASSWORD(who) });
      logins.set(who, { client, keys });
      return { client, keys };
    }
    /** The project's chain as the API serves it, verified. */
    async function chainOf(project: string) {
      const { client } = await sdkLogin('alice');
      const { statements } = await getMembershipChain(client, project);
      return { statements, state: verifyMembershipChain(statements, project) };
    }
    const chainJson = async (who: string, project: string) =>
      JSON.parse(
        ok(await as(who, ['vault', 'chain', '--project', project, '--json']), 'vault chain --json')
          .stdout,
      ) as ChainJson;

    async function signup(who: string, invitation?: string) {
      users[who] = userEnv(server, tempDir(who));
      ok(
        await as(
          who,
          [
            'signup',
            '--email',
            email(who),
            '--name',
            who,
            '--password-stdin',
            ...(invitation ? ['--invitation', invitation] : []),
          ],
          `${PASSWORD(who)}\n`,
        ),
        `${who} signup`,
      );
    }

    /**
     * Invites `who` into `project` with `role`, signs them up and has them
     * accept (with the introduction link, or through the e-mail alone); returns
     * what `invitations accept` printed.
     */
    async function joinProject(
      who: string,
      project: string,
      role: 'admin' | 'developer',
      how: 'introduction' | 'email',
    ): Promise<CliResult> {
      const invited = JSON.parse(
        ok(
          await as('alice', [
            'members',
            'invite',
            email(who),
            '--project',
            project,
            '--role',
            role,
            '--json',
          ]),
          `invite ${who}`,
        ).stdout,
      ) as { id: string; introduction_link: string };
      const link = await invitationLink(server, email(who));
      if (!users[who]) await signup(who, link);
      return ok(
        await as(
          who,
          how === 'introduction'
            ? ['invitations', 'accept', '--introduction', invited.introduction_link]
            : ['invitations', 'accept', invited.id, '--json'],
        ),
        `${who} accepts`,
      );
    }

    async function grant(who: string, project: string) {
      const fingerprint = (
        JSON.parse(ok(await as(who, ['whoami', '--json']), 'whoami').stdout) as {
          fingerprint: string;
        }
      ).fingerprint;
      ok(
        await as('alice', [
          'vault',
          'grant',
          email(who),
          '--project',
          project,
          '--fingerprint',
          fingerprint,
        ]),
        `grant ${who}`,
      );
    }

    before(async () => {
      await ready();
      buildOnce();
      if (dialect === 'postgres') {
        database = await createPostgresDatabase(POSTGRES_URL!);
        server = await startServer({ DATABASE_URL: database.url });
        db = await openDatabase({ kind: 'postgres', url: database.url, maxConnections: 2 });
      } else {
        server = await startServer();
        db = await openDatabase({ kind: 'sqlite', file: join(server.dataDir, 'coffer.db') });
      }
      work = tempDir('chain-work');
      await signup('alice');
      ok(await as('alice', ['projects', 'create', 'Shop']), 'project');
      ok(await as('alice', ['setup', '--project', 'Shop', '--env', 'development']), 'setup');
      ok(await as('alice', ['secrets', 'set', 'DATABASE_URL', 'postgres://real']), 'secret');
      shop = await projectId('Shop');
    });
    after(async () => {
      await db?.close();
      await server?.cleanup();
      await database?.drop();
    });

    test('joining prints the project fingerprint; `coffer vault chain` lists every statement with e-mails', async () => {
      const bobJoined = await joinProject('bob', 'Shop', 'developer', 'introduction');
      const carolJoined = JSON.parse(
        (await joinProject('carol', 'Shop', 'developer', 'email')).stdout,
      ) as { project_fingerprint: string | null; project_verified: boolean };
      await grant('bob', 'Shop');
      await grant('carol', 'Shop');

      const shown = await chainJson('alice', 'Shop');
      assert.match(shown.fingerprint ?? '', /^([0-9A-F]{8} ){4}[0-9A-F]{8}$/);
      assert.match(
        bobJoined.stderr,
        new RegExp(`Project fingerprint: ${shown.fingerprint} \\(it matched the introduction link`),
      );
      assert.equal(carolJoined.project_fingerprint, shown.fingerprint);
      // Joined through the e-mail alone: nothing from the inviter vouched for the project.
      assert.equal(carolJoined.project_verified, false);
      assert.equal(shown.fingerprint, (await chainOf(shop)).state.fingerprint);
      assert.deepEqual(
        shown.statements.map((s) => [s.seq, s.kind, s.email, s.role, s.signer_email]),
        [
          [0, 'root', email('alice'), 'admin', email('alice')],
          [1, 'add', email('bob'), 'developer', email('alice')],
          [2, 'add', email('carol'), 'developer', email('alice')],
        ],
      );
      assert.deepEqual(shown.members.map((m) => [m.email, m.role]).sort(), [
        [email('alice'), 'admin'],
        [email('bob'), 'developer'],
        [email('carol'), 'developer'],
      ]);
      // A developer reads (and verifies) the same chain.
      assert.deepEqual(await chainJson('bob', 'Shop'), shown);

      const text = ok(await as('alice', ['vault', 'chain']), 'vault chain');
      assert.equal(text.stderr, '');
      const lines = text.stdout.split('\n');
      assert.ok(lines.includes(`Fingerprint:  ${shown.fingerprint}`), text.stdout);
      assert.match(
        lines.find((l) => l.startsWith('SEQ')) ?? '',
        /^SEQ\s+KIND\s+MEMBER\s+ROLE\s+SIGNED BY\s+DATE$/,
      );
      const row = (seq: number) => lines.find((l) => l.startsWith(`${seq} `)) ?? '';
      assert.match(
        row(0),
        /^0\s+root\s+alice@example\.test\s+admin\s+alice@example\.test\s+\d{4}-\d\d-\d\d \d\d:\d\d$/,
      );
      assert.match(
        row(2),
        /^2\s+add\s+carol@example\.test\s+developer\s+alice@example\.test\s+\d{4}-/,
      );

      const status = ok(await as('bob', ['vault', 'status']), 'vault status');
      assert.ok(status.stdout.includes(`Fingerprint:       ${shown.fingerprint}`), status.stdout);
    });

    test('`members set-role` and `members remove` sign role and remove statements; without a key, or not a chain admin, they say the chain was not signed', async () => {
      await joinProject('dave', 'Shop', 'developer', 'introduction');
      await grant('dave', 'Shop');
      const daveId = await userId('dave');
      const aliceId = await userId('alice');

      ok(await as('alice', ['members', 'set-role', email('dave'), 'admin']), 'promote dave');
      let { statements, state } = await chainOf(shop);
      const promoted = statements.at(-1)!;
      assert.deepEqual(
        [promoted.kind, promoted.user_id, promoted.role, promoted.signer_id],
        ['role', daveId, 'admin', aliceId],
      );
      assert.equal(state.members.get(daveId)?.role, 'admin');

      // An admin awaiting a grant (no project key) changes the role on the server only, and says so.
      await joinProject('erin', 'Shop', 'admin', 'introduction');
      const unsigned = ok(
        await as('erin', ['members', 'set-role', email('dave'), 'developer']),
        'erin demotes dave',
      );
      assert.match(
        unsigned.stderr,
        /warning: the role change of dave@example\.test was made on the server but not signed into the project's membership chain \(you hold no vault key yet\)/,
      );
      assert.equal((await chainOf(shop)).statements.length, statements.length);
      assert.equal(
        (await chainOf(shop)).state.members.get(daveId)?.role,
        'admin',
        'the chain still says admin',
      );
      // An admin of the chain signs it with the same command.
      ok(
        await as('alice', ['members', 'set-role', email('dave'), 'developer']),
        'alice demotes dave',
      );
      ({ statements, state } = await chainOf(shop));
      assert.deepEqual([statements.at(-1)!.kind, statements.at(-1)!.role], ['role', 'developer']);

      // A member the server made admin without a signed statement cannot sign: the change is named.
      await setServerRole(shop, 'carol', 'admin');
      const refused = failsWith(
        await as('carol', ['members', 'set-role', email('dave'), 'viewer']),
        'not_chain_admin',
        'dave@example.test',
        'made on the server',
      );
      assert.match(refused, /not an admin in the signed membership chain/);
      assert.equal((await chainOf(shop)).statements.length, statements.length);
      await setServerRole(shop, 'carol', 'developer');
      await setServerRole(shop, 'dave', 'developer');

      const removed = ok(await as('alice', ['members', 'remove', email('dave')]), 'remove dave');
      assert.match(removed.stderr, /Removed dave@example\.test/);
      ({ statements, state } = await chainOf(shop));
      const removal = statements.at(-1)!;
      assert.deepEqual(
        [removal.kind, removal.user_id, removal.role, removal.signer_id],
        ['remove', daveId, null, aliceId],
      );
      assert.ok(!state.members.has(daveId));
      // The removed member's statements still show their address (from the pins).
      const shown = await chainJson('alice', 'Shop');
      assert.deepEqual(shown.statements.at(-1), {
        ...shown.statements.at(-1),
        kind: 'remove',
        email: email('dave'),
        role: null,
      });
      // erin is no member of the chain (never granted): removing her signs nothing.
      ok(await as('alice', ['members', 'remove', email('erin')]), 'remove erin');
      assert.equal((await chainOf(shop)).statements.length, statements.length);
    });

    test('a developer the server made admin plants a grant signed with their real key: `coffer run` refuses it, naming them', async () => {
      const bobId = await userId('bob');
      const carolId = await userId('carol');
      const stored = await one<{
        sealed_key: string;
        signature: string;
        granter_id: string;
        epoch: number;
      }>(
        sql`select sealed_key, signature, granter_id, epoch from vault_grants where project_id = ${shop} and recipient_id = ${bobId} and kind = 'project_key'`,
      );
      const bobKey = await one<{ public_key: string }>(
        sql`select public_key from users where id = ${bobId}`,
      );
      const carol = await sdkLogin('carol');
      const planted = createGrant({
        key: generateProjectKey(),
        kind: 'project_key',
        projectId: shop,
        epoch: stored.epoch,
        recipientId: bobId,
        recipientPublicKey: bobKey.public_key,
        granterId: carolId,
        granterSigningSecretKey: carol.keys.signing.secretKey,
      });
      const plant = (g: { sealed_key: string; signature: string; granter_id: string }) =>
        sql`update vault_grants set sealed_key = ${g.sealed_key}, signature = ${g.signature}, granter_id = ${g.granter_id} where project_id = ${shop} and recipient_id = ${bobId} and kind = 'project_key'`.execute(
          db.kysely,
        );
      await setServerRole(shop, 'carol', 'admin');
      await plant({ ...planted, granter_id: carolId });
      failsWith(
        await as('bob', ['run', '--', 'printenv', 'DATABASE_URL']),
        'untrusted_granter',
        'carol@example.test',
        'membership chain does not show as an admin',
      );
      failsWith(await as('bob', ['secrets', 'set', 'PLANTED', 'x']), 'untrusted_granter');
      await plant(stored);
      await setServerRole(shop, 'carol', 'developer');
      assert.equal(
        ok(await as('bob', ['run', '--', 'printenv', 'DATABASE_URL']), 'bob run again').stdout,
        'postgres://real\n',
      );
    });

    test('a statement tampered in the database: `coffer run` fails with chain_invalid', async () => {
      const row = await one<{ statement: string }>(
        sql`select statement from membership_statements where project_id = ${shop} and seq = 1`,
      );
      const original = JSON.parse(row.statement) as MembershipStatement;
      assert.equal(original.kind, 'add');
      const write = (statement: string) =>
        sql`update membership_statements set statement = ${statement} where project_id = ${shop} and seq = 1`.execute(
          db.kysely,
        );
      await write(JSON.stringify({ ...original, role: 'admin' }));
      failsWith(
        await as('bob', ['run', '--', 'printenv', 'DATABASE_URL']),
        'chain_invalid',
        'does not verify',
        'refusing',
      );
      failsWith(await as('alice', ['vault', 'chain']), 'chain_invalid');
      await write(row.statement);
      assert.equal(
        ok(await as('bob', ['run', '--', 'printenv', 'DATABASE_URL']), 'bob run again').stdout,
        'postgres://real\n',
      );
    });

    test('a project from before chains: runs with a warning until `coffer vault chain sign` signs its key holders', async () => {
      ok(await as('alice', ['projects', 'create', 'Legacy']), 'project');
      const legacy = await projectId('Legacy');
      // As a project created before chains: no statement (nobody pinned its root yet).
      await sql`delete from membership_statements where project_id = ${legacy}`.execute(db.kysely);
      const inLegacy = ['--project', 'Legacy', '--env', 'development'];
      ok(await as('alice', ['secrets', 'set', 'LEGACY', 'old but gold', ...inLegacy]), 'set');
      const bobJoined = JSON.parse(
        (await joinProject('bob', 'Legacy', 'developer', 'email')).stdout,
      ) as {
        project_fingerprint: string | null;
      };
      assert.equal(bobJoined.project_fingerprint, null);
      await grant('bob', 'Legacy');

      for (const who of ['alice', 'bob']) {
        const run = ok(
          await as(who, ['run', ...inLegacy, '--', 'printenv', 'LEGACY']),
          `${who} run`,
        );
        assert.equal(run.stdout, 'old but gold\n', 'stdout stays clean');
        assert.match(run.stderr, UNCHAINED);
        assert.equal(run.stderr.match(/no signed membership chain/g)?.length, 1, 'warned once');
      }
      const exported = ok(
        await as('alice', ['secrets', 'export', '--format', 'dotenv', ...inLegacy]),
        'export',
      );
      assert.equal(exported.stdout.trim(), 'LEGACY=old but gold');
      assert.match(exported.stderr, UNCHAINED);
      const none = ok(await as('alice', ['vault', 'chain', '--project', 'Legacy']), 'vault chain');
      assert.match(none.stdout, /has no signed membership chain yet/);
      assert.equal((await chainJson('alice', 'Legacy')).fingerprint, null);

      // Only a holder of the key who is admin signs, and not without --yes when no one can be asked.
      failsWith(
        await as('bob', ['vault', 'chain', 'sign', '--project', 'Legacy', '--yes']),
        'forbidden',
        'only an admin',
      );
      const unconfirmed = await as('alice', ['vault', 'chain', 'sign', '--project', 'Legacy']);
      assert.equal(unconfirmed.code, 1);
      assert.match(unconfirmed.stderr, /\(confirmation_required\)\n$/);
      assert.equal(await chainJson('alice', 'Legacy').then((c) => c.length), 0);

      const signed = ok(
        await as('alice', ['vault', 'chain', 'sign', '--project', 'Legacy', '--yes']),
        'vault chain sign',
      );
      const bobPrint = (
        JSON.parse(ok(await as('bob', ['whoami', '--json']), 'whoami').stdout) as {
          fingerprint: string;
        }
      ).fingerprint;
      assert.match(signed.stderr, /alice@example\.test\s+admin\s+.+\s+you/);
      assert.match(
        signed.stderr,
        new RegExp(`bob@example\\.test\\s+developer\\s+${bobPrint}\\s+verified`),
      );
      const fingerprint = /^Project fingerprint: (.+)$/m.exec(signed.stdout)?.[1];
      const { state } = await chainOf(legacy);
      assert.equal(fingerprint, state.fingerprint);

      for (const who of ['alice', 'bob']) {
        const run = ok(
          await as(who, ['run', ...inLegacy, '--', 'printenv', 'LEGACY']),
          `${who} run`,
        );
        assert.equal(run.stdout, 'old but gold\n');
        assert.equal(run.stderr, '', 'no warning once signed');
      }
      const shown = await chainJson('bob', 'Legacy');
      assert.equal(shown.fingerprint, fingerprint);
      assert.deepEqual(
        shown.statements.map((s) => [s.kind, s.email, s.role, s.signer_email]),
        [
          ['root', email('alice'), 'admin', email('alice')],
          ['add', email('bob'), 'developer', email('alice')],
        ],
      );
      const text = ok(await as('alice', ['vault', 'chain', '--project', 'Legacy']), 'vault chain');
      assert.match(
        text.stdout,
        /^1\s+add\s+bob@example\.test\s+developer\s+alice@example\.test\s/m,
      );
      failsWith(
        await as('alice', ['vault', 'chain', 'sign', '--project', 'Legacy', '--yes']),
        'already_chained',
      );
      // Hiding the chain again, once clients pinned it, is refused rather than warned about.
      await sql`delete from membership_statements where project_id = ${legacy}`.execute(db.kysely);
      failsWith(
        await as('bob', ['run', ...inLegacy, '--', 'printenv', 'LEGACY']),
        'chain_rollback',
      );
    });
  });
}
