// No silent key substitution, black-box: the SDK against the REAL server app
// over HTTP, with the database changed behind the server's back (direct SQL)
// the way a compromised server or anyone with write access to it could.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CofferApiError,
  KeyPins,
  acceptInvitation,
  acceptWithIntroduction,
  createApiKey,
  createCiToken,
  createGrant,
  createProjectWithVault,
  decodeKeyPart,
  encodeKeyPart,
  fingerprint,
  fromCredential,
  generateProjectKey,
  generateUserKeys,
  getKeyPins,
  getMemberKeys,
  grantMember,
  inviteWithIntroduction,
  openVault,
  parseCredential,
  parseIntroductionLink,
  pendingGrants,
  putKeyPins,
  ready,
  rekey,
  signKeyPins,
  toBase64url,
  vouchFor,
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
import { refuses } from './support/api-errors.js';

for (const dialect of DIALECTS) {
  describe(`key trust (${dialect})`, () => {
    let server: Server;
    const db = () => server.t.testDb.db.kysely;
    const pinsOf = (m: Member, minVersion = 0) =>
      KeyPins.load(m.client, { userId: m.id, keys: m.keys }, { minVersion });

    /** The e-mailed one-time token of an invitation (the address is unverified until it is used). */
    const mailedToken = (m: Member, memberId: string) =>
      eventually(
        async () => invitationTokenIn(await m.mailbox(), memberId),
        `the invitation e-mail to ${m.email}`,
      );

    /** Replaces a user's public keys in the database, as an attacker would. */
    async function substituteKeys(userId: string) {
      const attacker = generateUserKeys();
      await db()
        .updateTable('users')
        .set({
          public_key: toBase64url(attacker.encryption.publicKey),
          signing_public_key: toBase64url(attacker.signing.publicKey),
        })
        .where('id', '=', userId)
        .execute();
      return attacker;
    }

    /** A project of `admin`, with `member` invited with an introduction and accepted through its link. */
    async function introduced(admin: Member, member: Member, name: string) {
      const projectId = (await createProjectWithVault(admin.client, admin.keys, { name })).id;
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      const { member: invited, introductionLink } = await inviteWithIntroduction(
        adminVault,
        member.email,
        'developer',
        { publicUrl: 'https://coffer.example.test' },
      );
      assert.match(
        introductionLink,
        new RegExp(
          `^https://coffer\\.example\\.test/invite\\?member=${invited.id}#k=[A-Za-z0-9_-]{43}&r=[A-Za-z0-9_-]{43}$`,
        ),
      );
      assert.equal(parseIntroductionLink(introductionLink).memberId, invited.id);
      return { projectId, adminVault, memberId: invited.id, introductionLink };
    }

    before(async () => {
      await ready();
      server = await startServer(dialect);
    });
    after(async () => server.close());

    it('introduced: the invitee proves its keys, the admin grants without a fingerprint, both pin each other verified', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const { projectId, adminVault, memberId, introductionLink } = await introduced(
        admin,
        dev,
        'Introduced',
      );
      const devPins = await pinsOf(dev);
      const accepted = await acceptWithIntroduction(
        dev.client,
        { userId: dev.id, keys: dev.keys },
        introductionLink,
        { token: await mailedToken(dev, memberId), pins: devPins },
      );
      assert.equal(accepted.member.status, 'active');
      assert.equal(accepted.inviterVerified, true);
      assert.equal(devPins.get(admin.id)?.status, 'verified');
      assert.equal(devPins.version, 1);

      const [pending] = await pendingGrants(adminVault);
      assert.equal(typeof pending?.introduction?.proof, 'string');
      const adminPins = await pinsOf(admin);
      assert.equal(vouchFor(adminVault, pending!, { pins: adminPins }), 'introduction');
      const granted = await grantMember(adminVault, dev.id, { pins: adminPins });
      assert.equal(granted.userId, dev.id);
      assert.equal(adminPins.get(dev.id)?.status, 'verified');

      const env = await environmentIds(admin.client, projectId);
      await writeSecret(adminVault, env.staging!, 'TOKEN', 'shared');
      const devVault = await openVault(dev.client, projectId, dev.keys, { pins: devPins });
      assert.equal(await readSecret(devVault, env.staging!, 'TOKEN'), 'shared');
    });

    it('the invitee’s keys replaced in the database after it accepted: the grant is refused, fingerprint or not', async () => {
      const admin = await newUser(server);
      const victim = await newUser(server);
      const { adminVault, memberId, introductionLink } = await introduced(admin, victim, 'Victim');
      await acceptWithIntroduction(
        victim.client,
        { userId: victim.id, keys: victim.keys },
        introductionLink,
        { token: await mailedToken(victim, memberId) },
      );
      const attacker = await substituteKeys(victim.id);
      const attackerPrint = fingerprint(attacker.encryption.publicKey, attacker.signing.publicKey);
      await refuses(grantMember(adminVault, victim.id), 'introduction_mismatch', victim.email);
      // An admin talked into comparing the attacker's fingerprint is still refused.
      await refuses(
        grantMember(adminVault, victim.id, { expectedFingerprint: attackerPrint }),
        'introduction_mismatch',
      );
      const [stillPending] = await pendingGrants(adminVault);
      assert.equal(stillPending?.user_id, victim.id, 'nothing was granted');
    });

    it('a sealed introduction moved to another invitation, or a proof swapped in, does not vouch', async () => {
      const admin = await newUser(server);
      const a = await newUser(server);
      const b = await newUser(server);
      const {
        projectId,
        adminVault,
        memberId: aMember,
        introductionLink,
      } = await introduced(admin, a, 'Moved');
      await acceptWithIntroduction(a.client, { userId: a.id, keys: a.keys }, introductionLink, {
        token: await mailedToken(a, aMember),
      });
      const bMember = await join(admin, b, projectId, 'developer');
      const row = await db()
        .selectFrom('members')
        .select(['introduction_sealed_secret', 'introduction_proof'])
        .where('id', '=', aMember)
        .executeTakeFirstOrThrow();
      await db()
        .updateTable('members')
        .set({
          introduction_sealed_secret: row.introduction_sealed_secret,
          introduction_proof: row.introduction_proof,
        })
        .where('id', '=', bMember)
        .execute();
      await refuses(grantMember(adminVault, b.id), 'introduction_mismatch', b.email);
    });

    it('e-mail only (no introduction): the SDK says a fingerprint comparison is needed', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const projectId = (await createProjectWithVault(admin.client, admin.keys, { name: 'Mail' }))
        .id;
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      await join(admin, dev, projectId, 'developer');
      await refuses(grantMember(adminVault, dev.id), 'unverified_member', dev.email);
      await refuses(
        grantMember(adminVault, dev.id, { expectedFingerprint: '0'.repeat(40) }),
        'fingerprint_mismatch',
      );
      const [pending] = await pendingGrants(adminVault);
      const options = { expectedFingerprint: ownFingerprint(dev) };
      assert.equal(vouchFor(adminVault, pending!, options), 'fingerprint');
      await grantMember(adminVault, dev.id, options);
    });

    it('a forged admin signing key and a grant signed by it: the developer’s client refuses instead of using the planted key', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const { projectId, adminVault, memberId, introductionLink } = await introduced(
        admin,
        dev,
        'Planted',
      );
      const devPins = await pinsOf(dev);
      await acceptWithIntroduction(
        dev.client,
        { userId: dev.id, keys: dev.keys },
        introductionLink,
        {
          token: await mailedToken(dev, memberId),
          pins: devPins,
        },
      );
      await grantMember(adminVault, dev.id);
      (await openVault(dev.client, projectId, dev.keys, { pins: devPins })).forget();

      // The attacker shows its own keys as the admin's and plants a grant of a key it knows.
      const attacker = await substituteKeys(admin.id);
      const planted = generateProjectKey();
      const grant = createGrant({
        key: planted,
        kind: 'project_key',
        projectId,
        epoch: 1,
        recipientId: dev.id,
        recipientPublicKey: dev.keys.encryption.publicKey,
        granterId: admin.id,
        granterSigningSecretKey: attacker.signing.secretKey,
      });
      await db()
        .updateTable('vault_grants')
        .set({ sealed_key: grant.sealed_key, signature: grant.signature })
        .where('project_id', '=', projectId)
        .where('recipient_id', '=', dev.id)
        .execute();

      // Even without pins the signed membership chain refuses it: the chain holds
      // the admin's real signing key, not the one the server now shows...
      await refuses(openVault(dev.client, projectId, dev.keys), 'untrusted_granter', admin.email);
      // ...and with pins, the developer's client refuses, naming the admin.
      await refuses(
        openVault(dev.client, projectId, dev.keys, { pins: await pinsOf(dev, devPins.version) }),
        'key_changed',
        admin.email,
      );
    });

    it('a member’s pinned key changed on the server: others refuse naming them until a fingerprint comparison lets the new key in', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const projectId = (await createProjectWithVault(admin.client, admin.keys, { name: 'Pinned' }))
        .id;
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      await join(admin, dev, projectId, 'developer');
      const adminPins = await pinsOf(admin);
      await grantMember(adminVault, dev.id, {
        expectedFingerprint: ownFingerprint(dev),
        pins: adminPins,
      });
      assert.equal(adminPins.get(dev.id)?.status, 'verified');

      const replaced = await substituteKeys(dev.id);
      // The re-key would seal the new key to the substituted key: refused.
      await refuses(
        rekey(admin.client, projectId, admin.keys, { pins: adminPins }),
        'key_changed',
        dev.email,
      );
      // A fingerprint that is not the new key's lets nothing in.
      const shown = (await getMemberKeys(admin.client, projectId)).find(
        (m) => m.user_id === dev.id,
      )!;
      assert.throws(() => adminPins.verify(shown, ownFingerprint(dev)), {
        code: 'fingerprint_mismatch',
      });
      // After comparing the new fingerprint with the member for real, it is accepted.
      adminPins.verify(
        shown,
        fingerprint(replaced.encryption.publicKey, replaced.signing.publicKey),
      );
      await adminPins.save();
      const reloaded = await pinsOf(admin, adminPins.version);
      assert.equal(reloaded.get(dev.id)?.public_key, toBase64url(replaced.encryption.publicKey));
      const result = await rekey(admin.client, projectId, admin.keys, { pins: reloaded });
      assert.equal(result.epoch, 2);
    });

    it('the pins document: signed, versions only grow, a rollback or an edit by the server is refused', async () => {
      const owner = await newUser(server);
      const other = await newUser(server);
      const third = await newUser(server);
      const keysOf = (m: Member) => ({
        user_id: m.id,
        email: m.email,
        public_key: toBase64url(m.keys.encryption.publicKey),
        signing_public_key: toBase64url(m.keys.signing.publicKey),
      });
      const pins = await pinsOf(owner);
      assert.equal(pins.version, 0);
      pins.accept(keysOf(other));
      await pins.save();
      const v1 = await db()
        .selectFrom('key_pins')
        .selectAll()
        .where('user_id', '=', owner.id)
        .executeTakeFirstOrThrow();
      pins.accept(keysOf(third), 'verified');
      await pins.save();
      assert.equal(pins.version, 2);

      // The server refuses a version that does not grow.
      const stale = signKeyPins(
        { user_id: owner.id, version: 2, pins: [] },
        owner.keys.signing.secretKey,
      );
      await assert.rejects(putKeyPins(owner.client, stale), (e: unknown) => {
        assert.ok(e instanceof CofferApiError && e.code === 'version_conflict', String(e));
        return true;
      });
      // ...and a document not signed by the owner.
      const forged = signKeyPins(
        { user_id: owner.id, version: 3, pins: [] },
        other.keys.signing.secretKey,
      );
      await assert.rejects(putKeyPins(owner.client, forged), (e: unknown) => {
        assert.ok(e instanceof CofferApiError && e.status === 422, String(e));
        return true;
      });

      // Rolled back behind the server's back: the client that saw version 2 refuses version 1.
      await db()
        .updateTable('key_pins')
        .set({ version: v1.version, document: v1.document, signature: v1.signature })
        .where('user_id', '=', owner.id)
        .execute();
      assert.equal((await getKeyPins(owner.client)).version, 1);
      await refuses(pinsOf(owner, 2), 'pins_rollback');
      // Edited (a pin's status upgraded): the signature fails.
      const edited = JSON.parse(v1.document) as { pins: { status: string }[] };
      edited.pins[0]!.status = 'verified';
      await db()
        .updateTable('key_pins')
        .set({ document: JSON.stringify(edited) })
        .where('user_id', '=', owner.id)
        .execute();
      await refuses(pinsOf(owner), 'pins_rollback');
    });

    it('a re-key re-seals pending introductions, so the grant after it still checks the proof', async () => {
      const admin = await newUser(server);
      const late = await newUser(server);
      const { projectId, memberId, introductionLink } = await introduced(admin, late, 'Resealed');
      const before = await db()
        .selectFrom('members')
        .select('introduction_sealed_secret')
        .where('id', '=', memberId)
        .executeTakeFirstOrThrow();
      assert.match(before.introduction_sealed_secret!, /^v1\.1\./);
      await rekey(admin.client, projectId, admin.keys);
      const resealed = await db()
        .selectFrom('members')
        .select('introduction_sealed_secret')
        .where('id', '=', memberId)
        .executeTakeFirstOrThrow();
      assert.match(resealed.introduction_sealed_secret!, /^v1\.2\./);
      await acceptWithIntroduction(
        late.client,
        { userId: late.id, keys: late.keys },
        introductionLink,
        {
          token: await mailedToken(late, memberId),
        },
      );
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      assert.equal(adminVault.epoch, 2);
      const [pending] = await pendingGrants(adminVault);
      assert.equal(vouchFor(adminVault, pending!), 'introduction');
      await grantMember(adminVault, late.id);
    });

    it('a re-key leaves a member awaiting a grant pending: their keys (substituted or not) get no key', async () => {
      const admin = await newUser(server);
      const pending = await newUser(server);
      const projectId = (
        await createProjectWithVault(admin.client, admin.keys, { name: 'Still pending' })
      ).id;
      await join(admin, pending, projectId, 'developer');
      // The server substitutes the pending member's keys before anyone vouched for them.
      const attacker = await substituteKeys(pending.id);
      const result = await rekey(admin.client, projectId, admin.keys, {
        pins: pinsOf(admin),
      });
      assert.equal(result.epoch, 2);
      assert.equal(result.grants, 1, 'only the admin, who held the key, is re-granted');
      const grants = await db()
        .selectFrom('vault_grants')
        .select(['recipient_id', 'epoch'])
        .where('project_id', '=', projectId)
        .where('kind', '=', 'project_key')
        .execute();
      assert.deepEqual(grants, [{ recipient_id: admin.id, epoch: 2 }]);
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      const awaiting = await pendingGrants(adminVault);
      assert.deepEqual(
        awaiting.map((p) => [p.user_id, p.public_key]),
        [[pending.id, toBase64url(attacker.encryption.publicKey)]],
      );
      // And the substituted keys still need vouching for.
      await refuses(grantMember(adminVault, pending.id), 'unverified_member', pending.email);
      adminVault.forget();
    });

    it('a granted member’s keys substituted in the database: the re-key refuses naming them, with pins or without', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const projectId = (
        await createProjectWithVault(admin.client, admin.keys, { name: 'Re-key substituted' })
      ).id;
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      await join(admin, dev, projectId, 'developer');
      const adminPins = await pinsOf(admin);
      await grantMember(adminVault, dev.id, {
        expectedFingerprint: ownFingerprint(dev),
        pins: adminPins,
      });
      adminVault.forget();
      await substituteKeys(dev.id);
      // With pins: the pin and the grant both say these are not the keys the admin granted.
      await refuses(
        rekey(admin.client, projectId, admin.keys, {
          pins: pinsOf(admin, adminPins.version),
        }),
        'key_changed',
        dev.email,
      );
      // Without pins: the developer's grant, signed by this admin, does not verify against
      // the keys shown now, so the re-key refuses all the same.
      await refuses(rekey(admin.client, projectId, admin.keys), 'key_changed', dev.email);
      const { vault_epoch } = await db()
        .selectFrom('projects')
        .select('vault_epoch')
        .where('id', '=', projectId)
        .executeTakeFirstOrThrow();
      assert.equal(vault_epoch, 1, 'nothing was re-keyed');
    });

    it('a pending member planted in the snapshot with a grant signed by a forged granter key: refused with pins', async () => {
      const admin = await newUser(server);
      const other = await newUser(server);
      const pending = await newUser(server);
      const projectId = (
        await createProjectWithVault(admin.client, admin.keys, { name: 'Forged granter' })
      ).id;
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      await join(admin, other, projectId, 'admin');
      const adminPins = await pinsOf(admin);
      await grantMember(adminVault, other.id, {
        expectedFingerprint: ownFingerprint(other),
        pins: adminPins,
      });
      adminVault.forget();
      await join(admin, pending, projectId, 'developer');
      // The server substitutes the pending member's keys and the other admin's, and plants a
      // grant "from the other admin" to the substituted keys, so the member looks granted.
      const fakeMember = await substituteKeys(pending.id);
      const fakeAdmin = await substituteKeys(other.id);
      const planted = createGrant({
        key: generateProjectKey(),
        kind: 'project_key',
        projectId,
        epoch: 1,
        recipientId: pending.id,
        recipientPublicKey: fakeMember.encryption.publicKey,
        granterId: other.id,
        granterSigningSecretKey: fakeAdmin.signing.secretKey,
      });
      await db()
        .insertInto('vault_grants')
        .values({
          id: `grt_planted${Date.now()}`,
          project_id: projectId,
          epoch: 1,
          kind: 'project_key',
          recipient_type: 'user',
          recipient_id: pending.id,
          environment_id: null,
          sealed_key: planted.sealed_key,
          signature: planted.signature,
          granter_id: other.id,
          created_at: new Date().toISOString(),
        })
        .execute();
      await refuses(
        rekey(admin.client, projectId, admin.keys, { pins: pinsOf(admin, adminPins.version) }),
        'key_changed',
        other.email,
      );
    });

    it('a token credential names its creator’s key: a grant re-signed by a substituted creator key is refused, an old-format credential still opens', async () => {
      const admin = await newUser(server);
      const projectId = (await createProjectWithVault(admin.client, admin.keys, { name: 'Bound' }))
        .id;
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      const env = await environmentIds(admin.client, projectId);
      await writeSecret(adminVault, env.staging!, 'TOKEN', 'real');
      const { apiKey, credential } = await createApiKey(adminVault, {
        name: 'pipeline',
        role: 'developer',
        scopes: { staging: 'read_write' },
      });
      adminVault.forget();
      const { bearer, keyPart, creatorSigningPublicKey } = parseCredential(credential);
      assert.equal(creatorSigningPublicKey, toBase64url(admin.keys.signing.publicKey));
      // The same token written the old way: the bare seed as its key part.
      const oldFormat = `${bearer}.${toBase64url(decodeKeyPart(keyPart).seed)}`;
      assert.equal(parseCredential(oldFormat).creatorSigningPublicKey, null);

      const pipeline = await fromCredential(server.baseUrl, credential);
      assert.equal(await readSecret(pipeline.vault, env.staging!, 'TOKEN'), 'real');
      // A CI token minted by the API key names the API key's signing key.
      const { credential: ci } = await createCiToken(pipeline.vault, {
        scopes: { staging: 'read' },
      });
      assert.equal(
        parseCredential(ci).creatorSigningPublicKey,
        pipeline.vault.publicKeys.signingPublicKey,
      );
      const ciRun = await fromCredential(server.baseUrl, ci);
      assert.equal(await readSecret(ciRun.vault, env.staging!, 'TOKEN'), 'real');
      const old = await fromCredential(server.baseUrl, oldFormat);
      assert.equal(await readSecret(old.vault, env.staging!, 'TOKEN'), 'real');

      // The server shows an attacker's key as the admin's and re-signs the token's grant
      // of an environment key it knows.
      const attacker = await substituteKeys(admin.id);
      const planted = generateProjectKey();
      const { public_key: tokenPublicKey } = await db()
        .selectFrom('api_keys')
        .select('public_key')
        .where('id', '=', apiKey.id)
        .executeTakeFirstOrThrow();
      const grant = createGrant({
        key: planted,
        kind: 'environment_key',
        projectId,
        epoch: 1,
        environmentId: env.staging!,
        recipientId: apiKey.id,
        recipientPublicKey: tokenPublicKey,
        granterId: admin.id,
        granterSigningSecretKey: attacker.signing.secretKey,
      });
      await db()
        .updateTable('vault_grants')
        .set({ sealed_key: grant.sealed_key, signature: grant.signature })
        .where('project_id', '=', projectId)
        .where('recipient_id', '=', apiKey.id)
        .execute();
      await refuses(fromCredential(server.baseUrl, credential), 'untrusted_granter', admin.email);
      // An old-format credential has nothing to compare with: it takes the planted key.
      const fooled = await fromCredential(server.baseUrl, oldFormat);
      assert.deepEqual((await fooled.vault.environmentKey(env.staging!)).key, planted);
      fooled.vault.forget();
    });

    it('a re-key by another admin than a token’s creator: the credential names the chain, so the new grants open; a creator-only credential refuses them', async () => {
      const admin = await newUser(server);
      const second = await newUser(server);
      const projectId = (
        await createProjectWithVault(admin.client, admin.keys, { name: 'Other re-keyer' })
      ).id;
      const adminVault = await openVault(admin.client, projectId, admin.keys);
      await join(admin, second, projectId, 'admin');
      await grantMember(adminVault, second.id, { expectedFingerprint: ownFingerprint(second) });
      const env = await environmentIds(admin.client, projectId);
      await writeSecret(adminVault, env.staging!, 'TOKEN', 'real');
      const { apiKey, credential } = await createApiKey(adminVault, {
        name: 'pipeline',
        role: 'developer',
        scopes: { staging: 'read' },
      });
      const root = adminVault.chain!.root;
      adminVault.forget();
      const { bearer, keyPart, creatorSigningPublicKey, chainRoot } = parseCredential(credential);
      assert.equal(decodeKeyPart(keyPart).version, 3);
      assert.equal(chainRoot, root);
      const seed = decodeKeyPart(keyPart).seed;
      const creatorOnly = `${bearer}.${encodeKeyPart(seed, creatorSigningPublicKey!)}`;
      const oldFormat = `${bearer}.${toBase64url(seed)}`;

      const byCreator = await rekey(admin.client, projectId, admin.keys);
      assert.equal(byCreator.tokensCreatedByOthers, undefined);
      const stillOpens = await fromCredential(server.baseUrl, credential);
      assert.equal(await readSecret(stillOpens.vault, env.staging!, 'TOKEN'), 'real');

      const byOther = await rekey(second.client, projectId, second.keys);
      assert.deepEqual(byOther.tokensCreatedByOthers, [apiKey.id]);
      const opens = await fromCredential(server.baseUrl, credential);
      assert.equal(await readSecret(opens.vault, env.staging!, 'TOKEN'), 'real');
      await refuses(fromCredential(server.baseUrl, creatorOnly), 'untrusted_granter', second.email);
      const old = await fromCredential(server.baseUrl, oldFormat);
      assert.equal(await readSecret(old.vault, env.staging!, 'TOKEN'), 'real');
    });

    it('the invitation e-mail flow keeps working: accepting with only the token, then a fingerprint grant', async () => {
      const admin = await newUser(server);
      const dev = await newUser(server);
      const { adminVault, memberId } = await introduced(admin, dev, 'Mail only');
      await acceptInvitation(dev.client, memberId, await mailedToken(dev, memberId));
      const [pending] = await pendingGrants(adminVault);
      assert.equal(pending?.introduction?.proof, null);
      await refuses(grantMember(adminVault, dev.id), 'unverified_member');
      await grantMember(adminVault, dev.id, { expectedFingerprint: ownFingerprint(dev) });
    });
  });
}
