// The signed membership chain, black-box: the SDK against the REAL server app
// over HTTP, with the database changed behind the server's back (direct SQL)
// the way a compromised server or anyone with write access to it could.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  KeyPins,
  acceptWithIntroduction,
  apiPath,
  changeMemberRole,
  createApiKey,
  createCiToken,
  createGrant,
  createProjectWithVault,
  fromCredential,
  generateProjectKey,
  generateUserKeys,
  getMembershipChain,
  grantMember,
  inviteWithIntroduction,
  nextMembershipStatement,
  openVault,
  parseIntroductionLink,
  ready,
  rekey,
  removeMemberSigned,
  signMembershipChain,
  signMembershipStatement,
  signStatements,
  toBase64url,
  verifyMembershipChain,
  type ChainCandidate,
  type MembershipState,
  type MembershipStatement,
  type MembershipSubject,
} from '../src/index.js';
import { DIALECTS } from '../../server/test/support/db.js';
import { eventually, invitationTokenIn } from '../../server/test/members/fixtures.js';
import {
  environmentIds,
  join,
  newUser,
  ownFingerprint,
  readSecret,
  startServer,
  writeSecret,
  type Member,
  type Server,
} from './vault-support.js';
import { refuses, rejectsWithIssue } from './support/api-errors.js';

for (const dialect of DIALECTS) {
  describe(`membership chain (${dialect})`, () => {
    let server: Server;
    const db = () => server.t.testDb.db.kysely;
    const pinsOf = (m: Member, minVersion = 0) =>
      KeyPins.load(m.client, { userId: m.id, keys: m.keys }, { minVersion });
    const chainOf = async (m: Member, projectId: string) =>
      (await getMembershipChain(m.client, projectId)).statements;
    const subjectOf = (m: Member) => ({
      user_id: m.id,
      public_key: toBase64url(m.keys.encryption.publicKey),
      signing_public_key: toBase64url(m.keys.signing.publicKey),
    });
    /** A statement `by` signs at the head of `state` (null: a root of their own). */
    const signedBy = (
      by: Member,
      state: MembershipState | null,
      projectId: string,
      input: Pick<MembershipStatement, 'kind' | 'role'> & { subject?: MembershipSubject },
      at = new Date().toISOString(),
    ) =>
      nextMembershipStatement(state, {
        projectId,
        kind: input.kind,
        subject: input.subject ?? subjectOf(by),
        role: input.role,
        signerId: by.id,
        signingSecretKey: by.keys.signing.secretKey,
        at,
      });
    /** Writes statements behind the server's back; `replace` drops the stored chain first. */
    async function plant(
      projectId: string,
      statements: MembershipStatement[],
      options: { replace?: boolean } = {},
    ) {
      if (options.replace) {
        await db()
          .deleteFrom('membership_statements')
          .where('project_id', '=', projectId)
          .execute();
      }
      await db()
        .insertInto('membership_statements')
        .values(
          statements.map((statement) => ({
            project_id: projectId,
            seq: statement.seq,
            statement: JSON.stringify(statement),
            created_at: statement.at,
          })),
        )
        .execute();
    }

    /** A project of `admin` with each of `members` joined with `role` and granted the key. */
    async function team(
      name: string,
      members: { member: Member; role: 'admin' | 'developer' }[],
      admin: Member,
    ) {
      const projectId = (await createProjectWithVault(admin.client, admin.keys, { name })).id;
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      for (const { member, role } of members) {
        await join(admin, member, projectId, role);
        await grantMember(adminVault, member.id, { expectedFingerprint: ownFingerprint(member) });
      }
      return { projectId, adminVault };
    }

    /** Rewrites one stored statement in the database. */
    async function tamper(
      projectId: string,
      seq: number,
      change: (s: MembershipStatement) => MembershipStatement,
    ) {
      const row = await db()
        .selectFrom('membership_statements')
        .select('statement')
        .where('project_id', '=', projectId)
        .where('seq', '=', seq)
        .executeTakeFirstOrThrow();
      await db()
        .updateTable('membership_statements')
        .set({ statement: JSON.stringify(change(JSON.parse(row.statement))) })
        .where('project_id', '=', projectId)
        .where('seq', '=', seq)
        .execute();
    }

    before(async () => {
      await ready();
      server = await startServer(dialect);
    });
    after(async () => server.close());

    it('a project starts with its creator’s root; grants, role changes and removals are signed in order', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const { projectId, adminVault } = await team(
        'Chained',
        [{ member: dev, role: 'developer' }],
        admin,
      );

      let statements = await chainOf(admin, projectId);
      assert.deepEqual(
        statements.map((s) => [s.seq, s.kind, s.user_id, s.role, s.signer_id]),
        [
          [0, 'root', admin.id, 'admin', admin.id],
          [1, 'add', dev.id, 'developer', admin.id],
        ],
      );
      const state = verifyMembershipChain(statements, projectId);
      assert.equal(adminVault.chain?.root, state.root);
      assert.match(state.fingerprint, /^([0-9A-F]{8} ){4}[0-9A-F]{8}$/);
      assert.equal(adminVault.projectFingerprint, state.fingerprint);
      assert.equal(adminVault.unchained, false);
      assert.equal(
        state.members.get(dev.id)?.public_key,
        toBase64url(dev.keys.encryption.publicKey),
      );

      const devMember = await db()
        .selectFrom('members')
        .select('id')
        .where('project_id', '=', projectId)
        .where('user_id', '=', dev.id)
        .executeTakeFirstOrThrow();
      await changeMemberRole(adminVault, devMember.id, 'admin');
      await removeMemberSigned(adminVault, { memberId: devMember.id, userId: dev.id });
      statements = await chainOf(admin, projectId);
      assert.deepEqual(
        statements.slice(2).map((s) => [s.kind, s.user_id, s.role]),
        [
          ['role', dev.id, 'admin'],
          ['remove', dev.id, null],
        ],
      );
      const after = verifyMembershipChain(statements, projectId);
      assert.equal(after.members.has(dev.id), false);
      assert.equal(after.root, state.root, 'the root, hence the fingerprint, never changes');
    });

    it('the server appends only a valid continuation signed by the calling admin', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const outsider = await newUser(server);
      const { projectId } = await team('Guarded', [{ member: dev, role: 'developer' }], admin);
      const statements = await chainOf(admin, projectId);
      const state = verifyMembershipChain(statements, projectId);
      const append = (m: Member, list: MembershipStatement[]) =>
        m.client.request('POST', apiPath`/v1/projects/${projectId}/membership-chain`, {
          body: { statements: list },
        });
      const signed = (by: Member, overrides: Partial<MembershipStatement> = {}) =>
        signMembershipStatement(
          {
            ...signedBy(by, state, projectId, {
              kind: 'role',
              subject: subjectOf(dev),
              role: 'admin',
            }),
            ...overrides,
          },
          by.keys.signing.secretKey,
        );

      // A developer may not sign; the server says so before looking at signatures.
      await assert.rejects(append(dev, [signed(dev)]), { status: 403 });
      // Not at the head.
      await rejectsWithIssue(
        append(admin, [signed(admin, { seq: 1, prev: state.hashes[0]! })]),
        409,
        'not_head',
      );
      // Signed by someone else than the caller.
      const forgedSigner = { ...signed(admin), signer_id: dev.id };
      await rejectsWithIssue(append(admin, [forgedSigner]), 422, 'not_yours');
      // A signature that does not verify.
      const badSignature = { ...signed(admin), role: 'viewer' as const };
      await rejectsWithIssue(append(admin, [badSignature]), 422, 'invalid_chain');
      // An `add` with keys that are not the member's account keys.
      const stranger = generateUserKeys();
      const wrongKeys = signedBy(admin, state, projectId, {
        kind: 'add',
        role: 'developer',
        subject: {
          user_id: outsider.id,
          public_key: toBase64url(stranger.encryption.publicKey),
          signing_public_key: toBase64url(stranger.signing.publicKey),
        },
      });
      await rejectsWithIssue(append(admin, [wrongKeys]), 422, 'not_their_keys');
      assert.equal((await chainOf(admin, projectId)).length, 2, 'nothing was stored');
      // A valid one is stored.
      await append(admin, [signed(admin)]);
      assert.equal((await chainOf(admin, projectId)).length, 3);
    });

    it('a developer the server promotes to admin without a signed statement cannot plant a key: other members refuse their grant', async () => {
      const admin = await newUser(server);
      const rogue = await newUser(server);
      const victim = await newUser(server);
      const { projectId } = await team(
        'Promoted',
        [
          { member: rogue, role: 'developer' },
          { member: victim, role: 'developer' },
        ],
        admin,
      );
      // The server (or whoever writes its database) makes the rogue developer an
      // admin and replaces the victim's grant with one of a key the rogue knows,
      // signed with the rogue's real key.
      await db()
        .updateTable('members')
        .set({ role: 'admin' })
        .where('project_id', '=', projectId)
        .where('user_id', '=', rogue.id)
        .execute();
      const planted = generateProjectKey();
      const grant = createGrant({
        key: planted,
        kind: 'project_key',
        projectId,
        epoch: 1,
        recipientId: victim.id,
        recipientPublicKey: victim.keys.encryption.publicKey,
        granterId: rogue.id,
        granterSigningSecretKey: rogue.keys.signing.secretKey,
      });
      await db()
        .updateTable('vault_grants')
        .set({ sealed_key: grant.sealed_key, signature: grant.signature, granter_id: rogue.id })
        .where('project_id', '=', projectId)
        .where('recipient_id', '=', victim.id)
        .execute();
      // Before the chain, the signature (a real user's) was all a client checked.
      await refuses(
        openVault(victim.client, projectId, victim.keys),
        'untrusted_granter',
        rogue.email,
      );
      await refuses(
        openVault(victim.client, projectId, victim.keys, { pins: await pinsOf(victim) }),
        'untrusted_granter',
        rogue.email,
      );
    });

    it('a forged or altered statement fails the whole chain, for members and tokens', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const attacker = await newUser(server);
      const { projectId, adminVault } = await team(
        'Forged',
        [{ member: dev, role: 'developer' }],
        admin,
      );
      const { credential } = await createApiKey(adminVault, {
        name: 'ci',
        role: 'developer',
        scopes: { staging: 'read' },
      });
      // The dev's role raised in place: its signature no longer verifies.
      await tamper(projectId, 1, (s) => ({ ...s, role: 'admin' }));
      await refuses(openVault(dev.client, projectId, dev.keys), 'chain_invalid');
      await refuses(fromCredential(server.baseUrl, credential), 'chain_invalid');
      await tamper(projectId, 1, (s) => ({ ...s, role: 'developer' }));
      (await openVault(dev.client, projectId, dev.keys)).forget();

      // A statement appended by the server, signed by a key that is no admin's.
      const state = verifyMembershipChain(await chainOf(admin, projectId), projectId);
      await plant(projectId, [
        signedBy(attacker, state, projectId, { kind: 'add', role: 'admin' }),
      ]);
      await refuses(openVault(dev.client, projectId, dev.keys), 'chain_invalid', 'not an admin');
    });

    it('a chain rolled back or replaced: a client that saw it refuses; a fresh one sees only what the server shows', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const leaving = await newUser(server);
      const { projectId, adminVault } = await team(
        'Rollback',
        [
          { member: dev, role: 'developer' },
          { member: leaving, role: 'admin' },
        ],
        admin,
      );
      const devPins = await pinsOf(dev);
      (await openVault(dev.client, projectId, dev.keys, { pins: devPins })).forget();
      assert.equal(devPins.project(projectId)?.seq, 2);

      const leavingMember = await db()
        .selectFrom('members')
        .select('id')
        .where('project_id', '=', projectId)
        .where('user_id', '=', leaving.id)
        .executeTakeFirstOrThrow();
      await removeMemberSigned(adminVault, { memberId: leavingMember.id, userId: leaving.id });
      (await openVault(dev.client, projectId, dev.keys, { pins: devPins })).forget();
      assert.equal(devPins.project(projectId)?.seq, 3, 'the pinned head moved on');

      // The server withholds the removal (deletes the last statement).
      await db()
        .deleteFrom('membership_statements')
        .where('project_id', '=', projectId)
        .where('seq', '=', 3)
        .execute();
      await refuses(
        openVault(dev.client, projectId, dev.keys, { pins: await pinsOf(dev, devPins.version) }),
        'chain_rollback',
      );
      // Out of scope, shown plainly: a client that never saw the removal (no pins,
      // or a fresh machine) still takes the removed admin for an admin.
      const fresh = await openVault(dev.client, projectId, dev.keys);
      assert.equal(fresh.chain?.members.get(leaving.id)?.role, 'admin');
      fresh.forget();

      // The server replaces the whole chain with one rooted in its own user.
      const attacker = await newUser(server);
      await plant(
        projectId,
        [signedBy(attacker, null, projectId, { kind: 'root', role: 'admin' })],
        {
          replace: true,
        },
      );
      await refuses(
        openVault(dev.client, projectId, dev.keys, { pins: await pinsOf(dev, devPins.version) }),
        'chain_changed',
      );
      // And with no chain at all where one was pinned:
      await db().deleteFrom('membership_statements').where('project_id', '=', projectId).execute();
      await refuses(
        openVault(dev.client, projectId, dev.keys, { pins: await pinsOf(dev, devPins.version) }),
        'chain_rollback',
      );
    });

    it('a token’s credential names its chain’s root: a replaced chain is refused', async () => {
      const admin = await newUser(server);
      const { projectId, adminVault } = await team('Token root', [], admin);
      const env = await environmentIds(admin.client, projectId);
      await writeSecret(adminVault, env.staging!, 'K', 'v');
      const { credential } = await createApiKey(adminVault, {
        name: 'ci',
        role: 'developer',
        scopes: { staging: 'read' },
      });
      const opened = await fromCredential(server.baseUrl, credential);
      assert.equal(await readSecret(opened.vault, env.staging!, 'K'), 'v');
      // The same admin re-signs a different root (a new chain the token never saw).
      const root = signedBy(
        admin,
        null,
        projectId,
        { kind: 'root', role: 'admin' },
        '2020-01-01T00:00:00.000Z',
      );
      await plant(projectId, [root], { replace: true });
      await refuses(fromCredential(server.baseUrl, credential), 'chain_changed');
    });

    it('a token’s creator removed from the chain: its grants are refused even where the server still serves the token', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const { projectId, adminVault } = await team(
        'Creator removed',
        [{ member: dev, role: 'developer' }],
        admin,
      );
      const env = await environmentIds(admin.client, projectId);
      await writeSecret(adminVault, env.staging!, 'K', 'v');
      const devVault = await openVault(dev.client, projectId, dev.keys);
      const { credential } = await createCiToken(devVault, { scopes: { staging: 'read' } });
      devVault.forget();
      const opened = await fromCredential(server.baseUrl, credential);
      assert.equal(await readSecret(opened.vault, env.staging!, 'K'), 'v');
      // An admin signs the developer's removal; the server does not act on it
      // (it keeps the member and serves the token as before).
      await signStatements(adminVault, (state) => [
        { kind: 'remove', subject: state!.members.get(dev.id)!, role: null },
      ]);
      await refuses(fromCredential(server.baseUrl, credential), 'untrusted_granter', dev.id);
    });

    it('a project from before chains: accepted as unchained until an admin signs its key holders, shown with fingerprints', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const waiting = await newUser(server);
      const { projectId } = await team('Legacy', [{ member: dev, role: 'developer' }], admin);
      await join(admin, waiting, projectId, 'developer'); // awaits a grant: not a key holder
      await db().deleteFrom('membership_statements').where('project_id', '=', projectId).execute();

      const devVault = await openVault(dev.client, projectId, dev.keys);
      assert.equal(devVault.unchained, true);
      assert.equal(devVault.chain, null);
      devVault.forget();

      const session = await openVault(admin.client, projectId, admin.keys, {
        pins: await pinsOf(admin),
      });
      let shown: ChainCandidate[] = [];
      await refuses(
        signMembershipChain(session, (candidates) => {
          shown = candidates;
          return false;
        }),
        'not_chain_admin',
        'cancelled',
      );
      assert.deepEqual(
        shown.map((c) => [c.email, c.role, c.fingerprint, c.pinned]).sort(),
        [
          [admin.email, 'admin', ownFingerprint(admin), 'self'],
          [dev.email, 'developer', ownFingerprint(dev), 'new'], // granted without pins
        ].sort(),
      );
      assert.equal((await chainOf(admin, projectId)).length, 0, 'cancelled: nothing signed');

      const state = await signMembershipChain(session, () => true);
      assert.equal(state?.length, 2);
      assert.deepEqual([...state!.members.keys()].sort(), [admin.id, dev.id].sort());
      const again = await openVault(dev.client, projectId, dev.keys);
      assert.equal(again.unchained, false);
      assert.equal(again.projectFingerprint, state!.fingerprint);
      again.forget();
      await refuses(
        signMembershipChain(session, () => true),
        'already_chained',
      );
      // The member waiting for a grant is signed in when granted.
      await grantMember(session, waiting.id, { expectedFingerprint: ownFingerprint(waiting) });
      const grown = verifyMembershipChain(await chainOf(admin, projectId), projectId);
      assert.equal(grown.members.get(waiting.id)?.role, 'developer');
      // Re-keying checks every recipient against the chain.
      assert.equal((await rekey(admin.client, projectId, admin.keys)).epoch, 2);
    });

    it('the invitee pins the project’s root at join and can compare its fingerprint with the inviter', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const projectId = (await createProjectWithVault(admin.client, admin.keys, { name: 'Join' }))
        .id;
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      const { member, introductionLink } = await inviteWithIntroduction(
        adminVault,
        dev.email,
        'developer',
      );
      const token = await eventually(
        async () => invitationTokenIn(await dev.mailbox(), member.id),
        'the invitation e-mail',
      );
      const pins = await pinsOf(dev);
      const accepted = await acceptWithIntroduction(
        dev.client,
        { userId: dev.id, keys: dev.keys },
        introductionLink,
        { token, pins },
      );
      assert.equal(accepted.projectFingerprint, adminVault.projectFingerprint);
      assert.equal(accepted.projectVerified, true, 'the link named the root');
      assert.equal(parseIntroductionLink(introductionLink).root, adminVault.chain?.root);
      assert.equal(pins.project(projectId)?.root, adminVault.chain?.root);
      const reloaded = await pinsOf(dev, pins.version);
      assert.equal(
        reloaded.project(projectId)?.root,
        adminVault.chain?.root,
        'saved with the pins',
      );
    });

    it('an invitee shown another chain than the introduction link names refuses it', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const attacker = await newUser(server);
      const projectId = (await createProjectWithVault(admin.client, admin.keys, { name: 'Swap' }))
        .id;
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      const { member, introductionLink } = await inviteWithIntroduction(
        adminVault,
        dev.email,
        'developer',
      );
      // The server shows the invitee a chain rooted in its own user.
      await plant(
        projectId,
        [signedBy(attacker, null, projectId, { kind: 'root', role: 'admin' })],
        {
          replace: true,
        },
      );
      const token = await eventually(
        async () => invitationTokenIn(await dev.mailbox(), member.id),
        'the invitation e-mail',
      );
      const pins = await pinsOf(dev);
      await refuses(
        acceptWithIntroduction(dev.client, { userId: dev.id, keys: dev.keys }, introductionLink, {
          token,
          pins,
        }),
        'chain_changed',
      );
      assert.equal(pins.project(projectId), undefined, 'the forged root is not pinned');
    });
  });
}
