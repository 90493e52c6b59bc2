import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, test } from 'node:test';
import {
  createGrant,
  decryptOverride,
  decryptSecretValue,
  deriveOverrideKey,
  encryptOverride,
  deriveEnvironmentKey,
  deriveMasterKey,
  derivePasswordKeys,
  deriveRecoveryKeys,
  encodeParts,
  encryptSecretValue,
  fingerprint,
  formatRecoveryKey,
  fromBase64url,
  hashBearer,
  hkdfSha256,
  isWellFormedBearer,
  membershipLinkHash,
  membershipMessage,
  openGrant,
  openIntroductionSecret,
  parseCredential,
  parseEnvelope,
  parseRecoveryKey,
  ready,
  toBase64url,
  tokenKeyPairFromKeyPart,
  unwrapPrivateKeys,
  verifyInviterProof,
  verifyIntroductionProof,
  signMembershipStatement,
  verifyKeyPins,
  verifyMembershipChain,
  wrapPrivateKeys,
  type Grant,
  type MembershipStatement,
  type SignedKeyPins,
  type KdfParams,
  type TokenPrefix,
  type WrapContext,
} from '../src/crypto/index.js';
import { bytesToHex, hexToBytes, utf8Encode } from '../src/crypto/encoding.js';
import { hkdfExtract, hmacSha256 } from '../src/crypto/hkdf.js';
import { sodium } from '../src/crypto/sodium.js';
import { composeBearer, crc32, decodeKeyPart, encodeKeyPart } from '../src/crypto/token.js';
import { tokenSigningKeyPairFromKeyPart } from '../src/crypto/token-signing.js';
import { userKeysFromSecretKeys } from '../src/crypto/user-keys.js';
import { buildVectors, type VectorPart } from './vectors/generate.js';

function load<T>(file: string): T {
  return JSON.parse(readFileSync(new URL(`./vectors/${file}`, import.meta.url), 'utf8')) as T;
}

const b = (text: string): Uint8Array => fromBase64url(text);

before(ready);

describe('HKDF-SHA-256', () => {
  // Expected values copied from RFC 5869 appendix A, independent of the vector file.
  const rfc = [
    {
      prk: '077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5',
      okm: '3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865',
    },
    {
      prk: '06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244',
      okm:
        'b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c' +
        '59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71' +
        'cc30c58179ec3e87c14c01d5c1f3434f1d87',
    },
    {
      prk: '19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04',
      okm: '8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8',
    },
  ];

  interface RfcCase {
    name: string;
    ikm_hex: string;
    salt_hex: string;
    info_hex: string;
    length: number;
    prk_hex: string;
    okm_hex: string;
  }
  const file = load<{
    rfc5869: RfcCase[];
    coffer: { ikm: string; info_parts: string[]; length: number; okm: string }[];
  }>('hkdf.json');

  test('matches RFC 5869 test cases 1 to 3', () => {
    assert.equal(file.rfc5869.length, 3);
    file.rfc5869.forEach((vector, index) => {
      const ikm = hexToBytes(vector.ikm_hex);
      const salt = hexToBytes(vector.salt_hex);
      const info = hexToBytes(vector.info_hex);
      assert.equal(bytesToHex(hkdfExtract(salt, ikm)), rfc[index]!.prk, vector.name);
      assert.equal(
        bytesToHex(hkdfSha256(ikm, salt, info, vector.length)),
        rfc[index]!.okm,
        vector.name,
      );
      assert.equal(vector.prk_hex, rfc[index]!.prk);
      assert.equal(vector.okm_hex, rfc[index]!.okm);
    });
  });

  test('coffer subkey vectors', () => {
    for (const vector of file.coffer) {
      const okm = hkdfSha256(
        b(vector.ikm),
        new Uint8Array(0),
        encodeParts(vector.info_parts),
        vector.length,
      );
      assert.equal(toBase64url(okm), vector.okm);
    }
  });
});

test('encodeParts vectors', () => {
  const file = load<{ vectors: { name: string; parts: VectorPart[]; encoded: string }[] }>(
    'encoding.json',
  );
  for (const vector of file.vectors) {
    const parts = vector.parts.map((part) => (typeof part === 'string' ? part : b(part.base64url)));
    assert.equal(toBase64url(encodeParts(parts)), vector.encoded, vector.name);
  }
  // The framing itself, spelled out: 4-byte big-endian length, then UTF-8.
  assert.deepEqual([...encodeParts(['é'])], [0, 0, 0, 2, 0xc3, 0xa9]);
});

test('password vectors (Argon2id + HKDF)', () => {
  const file = load<{
    vectors: {
      name: string;
      password: string;
      params: KdfParams;
      master_key: string;
      auth_key: string;
      wrap_key: string;
    }[];
  }>('password.json');
  for (const vector of file.vectors) {
    assert.equal(
      toBase64url(deriveMasterKey(vector.password, vector.params)),
      vector.master_key,
      vector.name,
    );
    const keys = derivePasswordKeys(vector.password, vector.params);
    assert.equal(keys.authKey, vector.auth_key, vector.name);
    assert.equal(toBase64url(keys.wrapKey), vector.wrap_key, vector.name);
  }
  const unicode = file.vectors.find((vector) => vector.name.startsWith('unicode'))!;
  assert.notEqual(unicode.password, unicode.password.normalize('NFC'));
  assert.equal(
    derivePasswordKeys(unicode.password.normalize('NFC'), unicode.params).authKey,
    unicode.auth_key,
  );
});

test('user key wrapping and fingerprint vectors', () => {
  const file = load<{
    keys: {
      x25519_secret_key: string;
      x25519_public_key: string;
      ed25519_secret_key: string;
      ed25519_public_key: string;
      fingerprint: string;
    };
    wrapped: {
      context: WrapContext;
      wrap_key: string;
      nonce: string;
      associated_data: string;
      wrapped: string;
    }[];
  }>('user-keys.json');
  const keys = userKeysFromSecretKeys(
    b(file.keys.x25519_secret_key),
    b(file.keys.ed25519_secret_key),
  );
  assert.equal(toBase64url(keys.encryption.publicKey), file.keys.x25519_public_key);
  assert.equal(toBase64url(keys.signing.publicKey), file.keys.ed25519_public_key);
  assert.equal(
    fingerprint(keys.encryption.publicKey, keys.signing.publicKey),
    file.keys.fingerprint,
  );
  assert.equal(
    fingerprint(file.keys.x25519_public_key, file.keys.ed25519_public_key),
    file.keys.fingerprint,
  );
  for (const vector of file.wrapped) {
    assert.equal(
      toBase64url(encodeParts(['coffer/v1/user-private-keys', vector.context])),
      vector.associated_data,
    );
    const wrapped = wrapPrivateKeys(keys, b(vector.wrap_key), vector.context, {
      nonce: b(vector.nonce),
    });
    assert.equal(wrapped, vector.wrapped);
    const unwrapped = unwrapPrivateKeys(vector.wrapped, b(vector.wrap_key), vector.context);
    assert.deepEqual(unwrapped, keys);
  }
});

test('recovery key vectors', () => {
  const file = load<{
    vectors: { name: string; key: string; text: string; auth_key: string; wrap_key: string }[];
  }>('recovery-key.json');
  for (const vector of file.vectors) {
    assert.equal(formatRecoveryKey(b(vector.key)), vector.text, vector.name);
    assert.match(vector.text, /^CRK(-[0-9A-HJKMNP-TV-Z]{4}){13}-[0-9A-HJKMNP-TV-Z]{3}$/);
    assert.equal(toBase64url(parseRecoveryKey(vector.text)), vector.key, vector.name);
    const derived = deriveRecoveryKeys(b(vector.key));
    assert.equal(derived.authKey, vector.auth_key, vector.name);
    assert.equal(toBase64url(derived.wrapKey), vector.wrap_key, vector.name);
  }
});

test('environment key vectors', () => {
  const file = load<{
    vectors: {
      project_key: string;
      project_id: string;
      environment_id: string;
      epoch: number;
      environment_key: string;
    }[];
  }>('environment-key.json');
  for (const vector of file.vectors) {
    const key = deriveEnvironmentKey(
      b(vector.project_key),
      vector.project_id,
      vector.environment_id,
      vector.epoch,
    );
    assert.equal(toBase64url(key), vector.environment_key);
  }
  assert.equal(
    new Set(file.vectors.map((vector) => vector.environment_key)).size,
    file.vectors.length,
  );
});

test('personal override vectors', () => {
  const file = load<{
    encryption_secret_key: string;
    user_id: string;
    project_id: string;
    environment_id: string;
    override_key: string;
    vectors: {
      name: string;
      secret_name: string;
      nonce: string;
      value: string;
      associated_data: string;
      envelope: string;
    }[];
    invalid: { name: string; envelope: string; error: string }[];
  }>('override.json');
  const overrideKey = deriveOverrideKey(b(file.encryption_secret_key), file.user_id);
  assert.equal(toBase64url(overrideKey), file.override_key);
  const other = deriveOverrideKey(b(file.encryption_secret_key), 'usr_someone_else');
  for (const vector of file.vectors) {
    const binding = {
      userId: file.user_id,
      projectId: file.project_id,
      environmentId: file.environment_id,
      name: vector.secret_name,
    };
    assert.equal(
      toBase64url(
        encodeParts([
          'coffer/v1/override',
          file.user_id,
          file.project_id,
          file.environment_id,
          vector.secret_name,
        ]),
      ),
      vector.associated_data,
    );
    assert.equal(
      encryptOverride({ ...binding, overrideKey, value: vector.value }, { nonce: b(vector.nonce) }),
      vector.envelope,
    );
    assert.equal(
      decryptOverride({ ...binding, overrideKey, envelope: vector.envelope }),
      vector.value,
    );
    // Another owner, name, environment or project opens nothing.
    for (const moved of [
      { ...binding, overrideKey: other },
      { ...binding, overrideKey, userId: 'usr_someone_else' },
      { ...binding, overrideKey, name: 'OTHER' },
      { ...binding, overrideKey, environmentId: 'env_other' },
      { ...binding, overrideKey, projectId: 'prj_2' },
    ]) {
      assert.throws(() => decryptOverride({ ...moved, envelope: vector.envelope }), {
        name: 'CryptoError',
        code: 'decryption_failed',
      });
    }
  }
  for (const vector of file.invalid) {
    assert.throws(
      () =>
        decryptOverride({
          userId: file.user_id,
          projectId: file.project_id,
          environmentId: file.environment_id,
          name: 'X',
          overrideKey,
          envelope: vector.envelope,
        }),
      { name: 'CryptoError', code: vector.error },
      vector.name,
    );
  }
});

test('secret envelope vectors', () => {
  const file = load<{
    vectors: {
      name: string;
      environment_key: string;
      project_id: string;
      environment_id: string;
      secret_name: string;
      epoch: number;
      nonce: string;
      value: string;
      associated_data: string;
      envelope: string;
    }[];
    invalid: { name: string; envelope: string; error: string }[];
  }>('envelope.json');
  for (const vector of file.vectors) {
    const binding = {
      environmentKey: b(vector.environment_key),
      projectId: vector.project_id,
      environmentId: vector.environment_id,
      name: vector.secret_name,
      epoch: vector.epoch,
    };
    assert.equal(
      toBase64url(
        encodeParts([
          'coffer/v1/secret-value',
          vector.project_id,
          vector.environment_id,
          vector.secret_name,
          String(vector.epoch),
        ]),
      ),
      vector.associated_data,
    );
    assert.equal(
      encryptSecretValue({ ...binding, value: vector.value }, { nonce: b(vector.nonce) }),
      vector.envelope,
    );
    assert.equal(decryptSecretValue({ ...binding, envelope: vector.envelope }), vector.value);
    const parsed = parseEnvelope(vector.envelope);
    assert.equal(parsed.epoch, vector.epoch);
    assert.equal(toBase64url(parsed.nonce), vector.nonce);
    assert.equal(parsed.ciphertext.length, utf8Encode(vector.value).length + 16);
  }
  for (const vector of file.invalid) {
    assert.throws(
      () => parseEnvelope(vector.envelope),
      { name: 'CryptoError', code: vector.error },
      vector.name,
    );
  }
});

test('grant vectors', () => {
  const file = load<{
    recipient: { x25519_public_key: string; x25519_secret_key: string };
    granter: { ed25519_public_key: string; ed25519_secret_key: string };
    vectors: { key: string; ephemeral_seed: string; signed_message: string; grant: Grant }[];
  }>('grant.json');
  for (const vector of file.vectors) {
    const { grant } = vector;
    const remade = createGrant(
      {
        key: b(vector.key),
        kind: grant.kind,
        projectId: grant.project_id,
        epoch: grant.epoch,
        environmentId: grant.environment_id,
        recipientId: grant.recipient_id,
        recipientPublicKey: file.recipient.x25519_public_key,
        granterId: grant.granter_id,
        granterSigningSecretKey: b(file.granter.ed25519_secret_key),
      },
      { ephemeralSeed: b(vector.ephemeral_seed) },
    );
    assert.deepEqual(remade, grant);
    const message = encodeParts([
      'coffer/v1/grant',
      grant.kind,
      grant.project_id,
      String(grant.epoch),
      grant.environment_id ?? '',
      grant.recipient_id,
      b(file.recipient.x25519_public_key),
      b(grant.sealed_key),
      grant.granter_id,
    ]);
    assert.equal(toBase64url(message), vector.signed_message);
    const opened = openGrant(grant, {
      recipientPublicKey: file.recipient.x25519_public_key,
      recipientSecretKey: b(file.recipient.x25519_secret_key),
      granterSigningPublicKey: file.granter.ed25519_public_key,
      expected: {
        projectId: grant.project_id,
        epoch: grant.epoch,
        kind: grant.kind,
        environmentId: grant.environment_id,
        recipientId: grant.recipient_id,
      },
    });
    assert.equal(toBase64url(opened), vector.key);
  }
});

test('token vectors', () => {
  const file = load<{
    crc32: { input: string; crc32: number }[];
    bearers: {
      prefix: TokenPrefix;
      body: string;
      crc32: number;
      bearer: string;
      sha256_hex: string;
    }[];
    key_part: {
      key_part: string;
      x25519_public_key: string;
      x25519_secret_key: string;
      credential: string;
    };
    key_part_v2: {
      seed: string;
      creator_signing_public_key: string;
      key_part: string;
      x25519_public_key: string;
      ed25519_public_key: string;
      credential: string;
      invalid: { name: string; key_part: string }[];
    };
    invalid_bearers: { name: string; bearer: string }[];
  }>('token.json');
  assert.equal(crc32(utf8Encode('123456789')), 0xcbf43926); // the standard CRC-32 check value
  for (const vector of file.crc32) assert.equal(crc32(utf8Encode(vector.input)), vector.crc32);
  for (const vector of file.bearers) {
    assert.equal(crc32(utf8Encode(vector.prefix + vector.body)), vector.crc32);
    assert.equal(composeBearer(vector.prefix, vector.body), vector.bearer);
    assert.equal(isWellFormedBearer(vector.bearer), true);
    assert.equal(hashBearer(vector.bearer), vector.sha256_hex);
  }
  const pair = tokenKeyPairFromKeyPart(file.key_part.key_part);
  assert.equal(toBase64url(pair.publicKey), file.key_part.x25519_public_key);
  assert.equal(toBase64url(pair.secretKey), file.key_part.x25519_secret_key);
  assert.deepEqual(parseCredential(file.key_part.credential), {
    bearer: file.bearers[0]!.bearer,
    keyPart: file.key_part.key_part,
    creatorSigningPublicKey: null,
    chainRoot: null,
  });
  // Version 2: 0x02 ‖ seed ‖ creator key, recomputed by hand; the same key pairs as the bare seed.
  const v2 = file.key_part_v2;
  const raw = new Uint8Array([
    2,
    ...fromBase64url(v2.seed),
    ...fromBase64url(v2.creator_signing_public_key),
  ]);
  assert.equal(toBase64url(raw), v2.key_part);
  assert.equal(v2.key_part.length, 87);
  assert.equal(encodeKeyPart(fromBase64url(v2.seed), v2.creator_signing_public_key), v2.key_part);
  const decoded = decodeKeyPart(v2.key_part);
  assert.equal(decoded.version, 2);
  assert.equal(toBase64url(decoded.seed), v2.seed);
  assert.equal(decoded.creatorSigningPublicKey, v2.creator_signing_public_key);
  assert.equal(v2.seed, file.key_part.key_part, 'the v2 vector wraps the v1 seed');
  assert.equal(toBase64url(tokenKeyPairFromKeyPart(v2.key_part).publicKey), v2.x25519_public_key);
  assert.equal(v2.x25519_public_key, file.key_part.x25519_public_key);
  assert.equal(
    toBase64url(tokenSigningKeyPairFromKeyPart(v2.key_part).publicKey),
    v2.ed25519_public_key,
  );
  assert.equal(
    toBase64url(tokenSigningKeyPairFromKeyPart(file.key_part.key_part).publicKey),
    v2.ed25519_public_key,
  );
  assert.deepEqual(parseCredential(v2.credential), {
    bearer: file.bearers[0]!.bearer,
    keyPart: v2.key_part,
    creatorSigningPublicKey: v2.creator_signing_public_key,
    chainRoot: null,
  });
  for (const vector of v2.invalid) {
    assert.throws(
      () => decodeKeyPart(vector.key_part),
      { code: 'invalid_credential' },
      vector.name,
    );
    assert.throws(() => parseCredential(`${file.bearers[0]!.bearer}.${vector.key_part}`), {
      code: 'invalid_credential',
    });
  }
  for (const vector of file.invalid_bearers) {
    assert.equal(isWellFormedBearer(vector.bearer), false, vector.name);
    assert.throws(() => parseCredential(`${vector.bearer}.${file.key_part.key_part}`), {
      code: 'invalid_credential',
    });
  }
});

test('committed vector files equal what generate.ts produces', async () => {
  const built = await buildVectors();
  for (const [name, content] of Object.entries(built)) {
    assert.deepEqual(load(name), JSON.parse(JSON.stringify(content)), name);
  }
});

test('introduction vectors: the proofs and the sealed secret, recomputed from primitives', () => {
  const file = load<{
    secret: string;
    project_id: string;
    member_id: string;
    invitee: { user_id: string; public_key: string; signing_public_key: string; proof: string };
    inviter: { user_id: string; public_key: string; signing_public_key: string; proof: string };
    seal: { project_key: string; epoch: number; nonce: string; sealed: string };
  }>('introduction.json');
  const lib = sodium();
  const secret = b(file.secret);
  const proofKey = hkdfSha256(
    secret,
    new Uint8Array(0),
    encodeParts(['coffer/v1/introduction']),
    32,
  );
  for (const [label, who] of [
    ['coffer/v1/introduction-proof', file.invitee],
    ['coffer/v1/introduction-inviter', file.inviter],
  ] as const) {
    const message = encodeParts([
      label,
      file.project_id,
      file.member_id,
      who.user_id,
      b(who.public_key),
      b(who.signing_public_key),
    ]);
    assert.equal(toBase64url(hmacSha256(proofKey, message)), who.proof, label);
  }
  const keys = {
    projectId: file.project_id,
    memberId: file.member_id,
    userId: file.invitee.user_id,
    publicKey: file.invitee.public_key,
    signingPublicKey: file.invitee.signing_public_key,
  };
  assert.equal(verifyIntroductionProof(secret, keys, file.invitee.proof), true);
  // Any other key, member or user fails.
  assert.equal(
    verifyIntroductionProof(
      secret,
      { ...keys, publicKey: file.inviter.public_key },
      file.invitee.proof,
    ),
    false,
  );
  assert.equal(
    verifyIntroductionProof(secret, { ...keys, memberId: 'mbr_2' }, file.invitee.proof),
    false,
  );
  assert.equal(
    verifyIntroductionProof(secret, { ...keys, userId: 'usr_eve' }, file.invitee.proof),
    false,
  );
  assert.equal(
    verifyInviterProof(
      secret,
      {
        ...keys,
        userId: file.inviter.user_id,
        publicKey: file.inviter.public_key,
        signingPublicKey: file.inviter.signing_public_key,
      },
      file.inviter.proof,
    ),
    true,
  );

  const { epoch } = file.seal;
  const sealKey = hkdfSha256(
    b(file.seal.project_key),
    new Uint8Array(0),
    encodeParts(['coffer/v1/introduction-seal-key', file.project_id, String(epoch)]),
    32,
  );
  const [, sealedEpoch, nonce, ciphertext] = file.seal.sealed.split('.');
  assert.equal(Number(sealedEpoch), epoch);
  assert.equal(nonce, file.seal.nonce);
  const opened = lib.crypto_aead_xchacha20poly1305_ietf_decrypt(
    null,
    b(ciphertext!),
    encodeParts(['coffer/v1/introduction-secret', file.project_id, file.member_id, String(epoch)]),
    b(nonce!),
    sealKey,
  );
  assert.equal(toBase64url(opened), file.secret);
  const binding = { projectKey: b(file.seal.project_key), projectId: file.project_id };
  assert.equal(
    toBase64url(openIntroductionSecret(file.seal.sealed, { ...binding, memberId: file.member_id })),
    file.secret,
  );
  assert.throws(() => openIntroductionSecret(file.seal.sealed, { ...binding, memberId: 'mbr_2' }), {
    code: 'decryption_failed',
  });
  assert.throws(
    () =>
      openIntroductionSecret(file.seal.sealed.replace(`v1.${epoch}.`, `v1.${epoch + 1}.`), {
        ...binding,
        memberId: file.member_id,
      }),
    { code: 'decryption_failed' },
  );
});

/** The signed parts of a key pins document up to its pins, written out by hand from CRYPTO.md. */
const keyPinsParts = (document: SignedKeyPins['document']) => [
  'coffer/v1/key-pins',
  document.user_id,
  String(document.version),
  String(document.pins.length),
  ...document.pins.flatMap((p) => [
    p.user_id,
    p.email,
    b(p.public_key),
    b(p.signing_public_key),
    p.status,
    p.at,
  ]),
];

test('key pins vectors: the signature covers every field', () => {
  const file = load<{ owner_signing_public_key: string; signed: SignedKeyPins }>('key-pins.json');
  const { document, signature } = file.signed;
  const message = encodeParts([...keyPinsParts(document)]);
  assert.deepEqual(
    document.pins.map((p) => p.user_id),
    ['usr_bob', 'usr_carol'],
  );
  assert.equal(
    sodium().crypto_sign_verify_detached(b(signature), message, b(file.owner_signing_public_key)),
    true,
  );
  assert.deepEqual(verifyKeyPins(file.signed, file.owner_signing_public_key), document);
  const tampered: SignedKeyPins[] = [
    { signature, document: { ...document, version: document.version + 1 } },
    {
      signature,
      document: { ...document, pins: document.pins.map((p) => ({ ...p, status: 'verified' })) },
    },
    {
      signature,
      document: {
        ...document,
        pins: [
          { ...document.pins[0]!, public_key: document.pins[1]!.public_key },
          document.pins[1]!,
        ],
      },
    },
    { signature, document: { ...document, pins: document.pins.slice(1) } },
  ];
  for (const forged of tampered) {
    assert.throws(() => verifyKeyPins(forged, file.owner_signing_public_key), {
      code: 'invalid_signature',
    });
  }
});

test('key part version 3 vectors: the seed, the creator key and the chain root', () => {
  const file = load<{
    bearers: { bearer: string }[];
    key_part: { x25519_public_key: string };
    key_part_v3: {
      seed: string;
      creator_signing_public_key: string;
      chain_root: string;
      key_part: string;
      credential: string;
      invalid: { name: string; key_part: string }[];
    };
  }>('token.json');
  const v3 = file.key_part_v3;
  const raw = new Uint8Array([
    3,
    ...fromBase64url(v3.seed),
    ...fromBase64url(v3.creator_signing_public_key),
    ...fromBase64url(v3.chain_root),
  ]);
  assert.equal(toBase64url(raw), v3.key_part);
  assert.equal(v3.key_part.length, 130);
  assert.equal(
    encodeKeyPart(fromBase64url(v3.seed), v3.creator_signing_public_key, v3.chain_root),
    v3.key_part,
  );
  const decoded = decodeKeyPart(v3.key_part);
  assert.equal(decoded.version, 3);
  assert.equal(decoded.chainRoot, v3.chain_root);
  assert.equal(
    toBase64url(tokenKeyPairFromKeyPart(v3.key_part).publicKey),
    file.key_part.x25519_public_key,
  );
  assert.deepEqual(parseCredential(v3.credential), {
    bearer: file.bearers[0]!.bearer,
    keyPart: v3.key_part,
    creatorSigningPublicKey: v3.creator_signing_public_key,
    chainRoot: v3.chain_root,
  });
  for (const vector of v3.invalid) {
    assert.throws(
      () => decodeKeyPart(vector.key_part),
      { code: 'invalid_credential' },
      vector.name,
    );
  }
});

test('key pins vectors with project pins: the projects are signed too', () => {
  const file = load<{ owner_signing_public_key: string; signed_with_projects: SignedKeyPins }>(
    'key-pins.json',
  );
  const { document, signature } = file.signed_with_projects;
  assert.deepEqual(
    document.projects!.map((p) => p.project_id),
    ['proj_a', 'proj_b'],
  );
  const message = encodeParts([
    ...keyPinsParts(document),
    'projects',
    String(document.projects!.length),
    ...document.projects!.flatMap((p) => [p.project_id, b(p.root), String(p.seq), b(p.head), p.at]),
  ]);
  assert.equal(
    sodium().crypto_sign_verify_detached(b(signature), message, b(file.owner_signing_public_key)),
    true,
  );
  assert.deepEqual(
    verifyKeyPins(file.signed_with_projects, file.owner_signing_public_key),
    document,
  );
  const moved = {
    ...document,
    projects: document.projects!.map((p) => ({ ...p, seq: p.seq + 1 })),
  };
  assert.throws(
    () => verifyKeyPins({ document: moved, signature }, file.owner_signing_public_key),
    {
      code: 'invalid_signature',
    },
  );
  const dropped = { ...document, projects: document.projects!.slice(1) };
  assert.throws(
    () => verifyKeyPins({ document: dropped, signature }, file.owner_signing_public_key),
    {
      code: 'invalid_signature',
    },
  );
});

test('membership chain vectors: messages, signatures, link hashes, fingerprint, and refusals', () => {
  const file = load<{
    project_id: string;
    signing_secret_keys: Record<string, string>;
    statements: MembershipStatement[];
    messages: string[];
    hashes: string[];
    root: string;
    fingerprint: string;
    members: { user_id: string; role: string }[];
    invalid: { name: string; statements: MembershipStatement[] }[];
  }>('membership.json');
  for (const [i, s] of file.statements.entries()) {
    const message = encodeParts([
      'coffer/v1/membership',
      s.project_id,
      String(s.seq),
      s.prev,
      s.kind,
      s.user_id,
      b(s.public_key),
      b(s.signing_public_key),
      s.role ?? '',
      s.signer_id,
      s.at,
    ]);
    assert.equal(toBase64url(message), file.messages[i]);
    assert.deepEqual(membershipMessage(s), message);
    // Ed25519 is deterministic: re-signing gives the committed signature.
    assert.equal(
      signMembershipStatement(s, b(file.signing_secret_keys[s.signer_id]!)).signature,
      s.signature,
    );
    const hash = sodium().crypto_generichash(
      32,
      encodeParts(['coffer/v1/membership-link', message, b(s.signature)]),
      null,
    );
    assert.equal(toBase64url(hash), file.hashes[i]);
    assert.equal(membershipLinkHash(s), file.hashes[i]);
    assert.equal(s.prev, i === 0 ? '' : file.hashes[i - 1]);
  }
  const state = verifyMembershipChain(file.statements, file.project_id);
  assert.equal(state.root, file.root);
  assert.equal(state.fingerprint, file.fingerprint);
  const hex = sodium().to_hex(b(file.root).subarray(0, 20)).toUpperCase();
  assert.equal(file.fingerprint, hex.match(/.{8}/g)!.join(' '));
  assert.deepEqual(
    [...state.members.values()].map((m) => [m.user_id, m.role]),
    file.members.map((m) => [m.user_id, m.role]),
  );
  for (const vector of file.invalid) {
    assert.throws(
      () => verifyMembershipChain(vector.statements, file.project_id),
      { code: 'invalid_chain' },
      vector.name,
    );
  }
});
