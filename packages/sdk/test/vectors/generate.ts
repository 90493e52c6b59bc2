/**
 * Regenerates the known-answer vectors in this folder:
 *   node --import tsx --conditions=development packages/sdk/test/vectors/generate.ts
 * Every input comes from a fixed label, so the output is deterministic; the
 * vectors test checks that the committed files equal what this produces.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as prettier from 'prettier';
import {
  createGrant,
  deriveEnvironmentKey,
  deriveRecoveryKeys,
  encodeParts,
  encryptSecretValue,
  deriveOverrideKey,
  encryptOverride,
  fingerprint,
  formatRecoveryKey,
  hkdfSha256,
  introductionProof,
  inviterProof,
  membershipLinkHash,
  membershipMessage,
  nextMembershipStatement,
  ready,
  sealIntroductionSecret,
  signKeyPins,
  signMembershipStatement,
  toBase64url,
  tokenKeyPairFromKeyPart,
  verifyMembershipChain,
  wrapPrivateKeys,
  type GrantKind,
  type MembershipStatement,
  type KdfParams,
  type TokenPrefix,
  type WrapContext,
} from '../../src/crypto/index.js';
import { bytesToHex, fromBase64url, hexToBytes } from '../../src/crypto/encoding.js';
import { deriveSubkey, hkdfExtract } from '../../src/crypto/hkdf.js';
import { deriveMasterKey, passwordKeysFromMasterKey } from '../../src/crypto/password.js';
import { sodium } from '../../src/crypto/sodium.js';
import { composeBearer, crc32, encodeKeyPart } from '../../src/crypto/token.js';
import { tokenKeysFromKeyPart } from '../../src/crypto/token-signing.js';
import { userKeysFromSecretKeys } from '../../src/crypto/user-keys.js';

/** Deterministic "random" input: BLAKE2b(label), 16..64 bytes. */
function fixed(label: string, length: number): Uint8Array {
  return sodium().crypto_generichash(length, `coffer test vector: ${label}`, null);
}

/** Bytes parts are written as { "base64url": ... } so JSON can hold both kinds. */
export type VectorPart = string | { base64url: string };

function partToJson(part: string | Uint8Array): VectorPart {
  return typeof part === 'string' ? part : { base64url: toBase64url(part) };
}

function b64(bytes: Uint8Array): string {
  return toBase64url(bytes);
}

function encodingVectors() {
  const cases: { name: string; parts: (string | Uint8Array)[] }[] = [
    { name: 'empty tuple', parts: [] },
    { name: 'one empty string', parts: [''] },
    { name: 'ascii strings', parts: ['coffer/v1/auth-key'] },
    { name: 'split points differ', parts: ['ab', 'c'] },
    { name: 'split points differ (2)', parts: ['a', 'bc'] },
    { name: 'utf-8 string and bytes', parts: ['caf\u00e9 \u{1f510}', fixed('encode-parts', 16)] },
  ];
  return {
    description:
      'encodeParts: each part as a 4-byte big-endian length then its bytes (strings UTF-8).',
    vectors: cases.map(({ name, parts }) => ({
      name,
      parts: parts.map(partToJson),
      encoded: b64(encodeParts(parts)),
    })),
  };
}

function hkdfVectors() {
  // RFC 5869 appendix A, test cases 1 to 3 (SHA-256).
  const rfc = [
    {
      name: 'RFC 5869 A.1 basic',
      ikm_hex: '0b'.repeat(22),
      salt_hex: '000102030405060708090a0b0c',
      info_hex: 'f0f1f2f3f4f5f6f7f8f9',
      length: 42,
    },
    {
      name: 'RFC 5869 A.2 longer inputs and outputs',
      ikm_hex: Array.from({ length: 80 }, (_, i) => i.toString(16).padStart(2, '0')).join(''),
      salt_hex: Array.from({ length: 80 }, (_, i) => (0x60 + i).toString(16).padStart(2, '0')).join(
        '',
      ),
      info_hex: Array.from({ length: 80 }, (_, i) => (0xb0 + i).toString(16).padStart(2, '0')).join(
        '',
      ),
      length: 82,
    },
    {
      name: 'RFC 5869 A.3 zero-length salt and info',
      ikm_hex: '0b'.repeat(22),
      salt_hex: '',
      info_hex: '',
      length: 42,
    },
  ].map((input) => {
    const ikm = hexToBytes(input.ikm_hex);
    const salt = hexToBytes(input.salt_hex);
    const info = hexToBytes(input.info_hex);
    return {
      ...input,
      prk_hex: bytesToHex(hkdfExtract(salt, ikm)),
      okm_hex: bytesToHex(hkdfSha256(ikm, salt, info, input.length)),
    };
  });
  const ikm = fixed('hkdf ikm', 32);
  const contexts = [
    ['coffer/v1/auth-key'],
    ['coffer/v1/wrap-key'],
    ['coffer/v1/recovery-auth-key'],
    ['coffer/v1/recovery-wrap-key'],
  ];
  return {
    description:
      'HKDF-SHA-256 (RFC 5869). rfc5869: the RFC test cases, in hex. coffer: empty salt, ' +
      'info = encodeParts(info_parts), 32 bytes, base64url.',
    rfc5869: rfc,
    coffer: contexts.map((parts) => ({
      ikm: b64(ikm),
      info_parts: parts,
      length: 32,
      okm: b64(deriveSubkey(ikm, parts)),
    })),
  };
}

function passwordVectors() {
  const params: KdfParams = {
    algorithm: 'argon2id',
    ops_limit: 2,
    mem_limit_kib: 8192,
    salt: b64(fixed('kdf salt', 16)),
  };
  const passwords = [
    { name: 'ascii', password: 'correct horse battery staple' },
    // NFD input; NFC-normalised before Argon2id, so it equals the precomposed spelling.
    { name: 'unicode, decomposed input', password: 'p\u0061\u0301ssw\u006f\u0308rd \u{1f510}' },
  ];
  return {
    description:
      'Password keys: master = Argon2id(NFC(password), salt) 32 bytes; auth_key and wrap_key = ' +
      'HKDF(master, info [coffer/v1/auth-key] / [coffer/v1/wrap-key]). Cheap test parameters.',
    vectors: passwords.map(({ name, password }) => {
      const master = deriveMasterKey(password, params);
      const keys = passwordKeysFromMasterKey(master);
      return {
        name,
        password,
        params,
        master_key: b64(master),
        auth_key: keys.authKey,
        wrap_key: b64(keys.wrapKey),
      };
    }),
  };
}

function userKeyVectors() {
  const lib = sodium();
  const box = lib.crypto_box_seed_keypair(fixed('user x25519 seed', 32));
  const sign = lib.crypto_sign_seed_keypair(fixed('user ed25519 seed', 32));
  const keys = userKeysFromSecretKeys(box.privateKey, sign.privateKey);
  const contexts: WrapContext[] = ['password', 'recovery'];
  return {
    description:
      'Wrapped private keys: "v1." nonce "." XChaCha20-Poly1305(x25519_sk ‖ ed25519_sk, ' +
      'AD = encodeParts([coffer/v1/user-private-keys, context])). Fingerprint: first 20 bytes of ' +
      'BLAKE2b-256(encodeParts([coffer/v1/fingerprint, x25519_pk, ed25519_pk])).',
    keys: {
      x25519_secret_key: b64(keys.encryption.secretKey),
      x25519_public_key: b64(keys.encryption.publicKey),
      ed25519_secret_key: b64(keys.signing.secretKey),
      ed25519_public_key: b64(keys.signing.publicKey),
      fingerprint: fingerprint(keys.encryption.publicKey, keys.signing.publicKey),
    },
    wrapped: contexts.map((context) => {
      const wrapKey = fixed(`wrap key ${context}`, 32);
      const nonce = fixed(`wrap nonce ${context}`, 24);
      return {
        context,
        wrap_key: b64(wrapKey),
        nonce: b64(nonce),
        associated_data: b64(encodeParts(['coffer/v1/user-private-keys', context])),
        wrapped: wrapPrivateKeys(keys, wrapKey, context, { nonce }),
      };
    }),
  };
}

function recoveryVectors() {
  const keys = [
    { name: 'fixed', bytes: fixed('recovery key', 32) },
    { name: 'all zero', bytes: new Uint8Array(32) },
    { name: 'all 0xff', bytes: new Uint8Array(32).fill(0xff) },
  ];
  return {
    description:
      'Recovery key: "CRK-" + Crockford base32(key ‖ first 2 bytes of BLAKE2b-256(key)), ' +
      'groups of 4 joined by "-". auth_key / wrap_key = HKDF(key, info ' +
      '[coffer/v1/recovery-auth-key] / [coffer/v1/recovery-wrap-key]).',
    vectors: keys.map(({ name, bytes }) => {
      const derived = deriveRecoveryKeys(bytes);
      return {
        name,
        key: b64(bytes),
        text: formatRecoveryKey(bytes),
        auth_key: derived.authKey,
        wrap_key: b64(derived.wrapKey),
      };
    }),
  };
}

function environmentKeyVectors() {
  const projectKey = fixed('project key', 32);
  const bindings = [
    { project_id: 'prj_1', environment_id: 'env_production', epoch: 1 },
    { project_id: 'prj_1', environment_id: 'env_staging', epoch: 1 },
    { project_id: 'prj_1', environment_id: 'env_production', epoch: 2 },
  ];
  return {
    description:
      'Environment key = HKDF(PMK, info = encodeParts([coffer/v1/environment-key, project_id, ' +
      'environment_id, String(epoch)]), 32).',
    vectors: bindings.map((binding) => ({
      project_key: b64(projectKey),
      ...binding,
      environment_key: b64(
        deriveEnvironmentKey(projectKey, binding.project_id, binding.environment_id, binding.epoch),
      ),
    })),
  };
}

function overrideVectors() {
  const encryptionSecretKey = fixed('override owner x25519 secret key', 32);
  const user_id = 'usr_owner';
  const overrideKey = deriveOverrideKey(encryptionSecretKey, user_id);
  const binding = { user_id, project_id: 'prj_1', environment_id: 'env_development' };
  const values = [
    { name: 'ascii', secret_name: 'DATABASE_URL', value: 'postgres://me@localhost/mine' },
    { name: 'empty value', secret_name: 'EMPTY', value: '' },
    { name: 'unicode', secret_name: 'GREETING', value: 'h\u00e9llo \u{1f510}' },
  ];
  return {
    description:
      'Personal override: override key = HKDF(X25519 secret key, empty salt, encodeParts([coffer/v1/override-key, user_id]), 32); ' +
      '"v1.ov." nonce "." XChaCha20-Poly1305(UTF-8 value, AD = encodeParts([coffer/v1/override, user_id, project_id, environment_id, name])).',
    encryption_secret_key: b64(encryptionSecretKey),
    ...binding,
    override_key: b64(overrideKey),
    vectors: values.map(({ name, secret_name, value }, index) => {
      const nonce = fixed(`override nonce ${index}`, 24);
      return {
        name,
        secret_name,
        nonce: b64(nonce),
        value,
        associated_data: b64(
          encodeParts([
            'coffer/v1/override',
            user_id,
            binding.project_id,
            binding.environment_id,
            secret_name,
          ]),
        ),
        envelope: encryptOverride(
          {
            overrideKey,
            userId: user_id,
            projectId: binding.project_id,
            environmentId: binding.environment_id,
            name: secret_name,
            value,
          },
          { nonce },
        ),
      };
    }),
    invalid: [
      {
        name: 'a secret envelope',
        envelope: 'v1.xc20p.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA',
      },
      {
        name: 'unknown version',
        envelope: 'v2.ov.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA',
      },
      {
        name: 'short nonce',
        envelope: 'v1.ov.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA',
      },
      {
        name: 'short ciphertext',
        envelope: 'v1.ov.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAA',
      },
      {
        name: 'padding',
        envelope: 'v1.ov.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA==',
      },
      { name: 'empty', envelope: '' },
    ].map((entry) => ({ ...entry, error: 'invalid_envelope' })),
  };
}

function envelopeVectors() {
  const environmentKey = fixed('environment key', 32);
  const values = [
    { name: 'ascii', secret_name: 'DATABASE_URL', value: 'postgres://app:s3cret@db/app', epoch: 1 },
    { name: 'empty value', secret_name: 'EMPTY', value: '', epoch: 1 },
    {
      name: 'unicode, later epoch',
      secret_name: 'GREETING',
      value: 'h\u00e9llo \u{1f510}',
      epoch: 7,
    },
  ];
  const binding = { project_id: 'prj_1', environment_id: 'env_production' };
  return {
    description:
      'Secret value envelope: "v1.xc20p." epoch "." nonce "." XChaCha20-Poly1305(UTF-8 value, ' +
      'AD = encodeParts([coffer/v1/secret-value, project_id, environment_id, name, String(epoch)])).',
    vectors: values.map(({ name, secret_name, value, epoch }, index) => {
      const nonce = fixed(`envelope nonce ${index}`, 24);
      return {
        name,
        environment_key: b64(environmentKey),
        ...binding,
        secret_name,
        epoch,
        nonce: b64(nonce),
        value,
        associated_data: b64(
          encodeParts([
            'coffer/v1/secret-value',
            binding.project_id,
            binding.environment_id,
            secret_name,
            String(epoch),
          ]),
        ),
        envelope: encryptSecretValue(
          {
            environmentKey,
            projectId: binding.project_id,
            environmentId: binding.environment_id,
            name: secret_name,
            epoch,
            value,
          },
          { nonce },
        ),
      };
    }),
    invalid: [
      {
        name: 'unknown version',
        envelope: 'v2.xc20p.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA',
      },
      {
        name: 'unknown algorithm',
        envelope: 'v1.aes.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA',
      },
      {
        name: 'epoch zero',
        envelope: 'v1.xc20p.0.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA',
      },
      {
        name: 'epoch with leading zero',
        envelope: 'v1.xc20p.01.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA',
      },
      {
        name: 'short nonce',
        envelope: 'v1.xc20p.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA',
      },
      {
        name: 'ciphertext shorter than the tag',
        envelope: 'v1.xc20p.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAA',
      },
      {
        name: 'padding',
        envelope: 'v1.xc20p.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA==',
      },
      {
        name: 'standard base64 alphabet',
        envelope: 'v1.xc20p.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAA+/',
      },
      {
        name: 'non-canonical trailing bits',
        envelope: 'v1.xc20p.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAB',
      },
      {
        name: 'impossible base64 length',
        envelope: 'v1.xc20p.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAA',
      },
      { name: 'missing part', envelope: 'v1.xc20p.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
      {
        name: 'trailing newline',
        envelope: 'v1.xc20p.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA\n',
      },
      { name: 'empty', envelope: '' },
    ].map((entry) => ({ ...entry, error: 'invalid_envelope' })),
  };
}

function grantVectors() {
  const lib = sodium();
  const recipient = lib.crypto_box_seed_keypair(fixed('grant recipient x25519 seed', 32));
  const granter = lib.crypto_sign_seed_keypair(fixed('grant granter ed25519 seed', 32));
  const projectKey = fixed('project key', 32);
  const cases: { kind: GrantKind; environmentId: string | null; key: Uint8Array; epoch: number }[] =
    [
      { kind: 'project_key', environmentId: null, key: projectKey, epoch: 1 },
      {
        kind: 'environment_key',
        environmentId: 'env_staging',
        key: deriveEnvironmentKey(projectKey, 'prj_1', 'env_staging', 1),
        epoch: 1,
      },
    ];
  return {
    description:
      'Grant: sealed_key = crypto_box_seal(key, recipient_public_key) made deterministic with an ' +
      'ephemeral key pair from crypto_box_seed_keypair(ephemeral_seed) (nonce = BLAKE2b-192(epk ‖ pk)); ' +
      'signature = Ed25519 over signed_message = encodeParts([coffer/v1/grant, kind, project_id, ' +
      'String(epoch), environment_id or "", recipient_id, recipient_public_key bytes, sealed_key ' +
      'bytes, granter_id]).',
    recipient: {
      x25519_public_key: b64(recipient.publicKey),
      x25519_secret_key: b64(recipient.privateKey),
    },
    granter: {
      ed25519_public_key: b64(granter.publicKey),
      ed25519_secret_key: b64(granter.privateKey),
    },
    vectors: cases.map(({ kind, environmentId, key, epoch }) => {
      const ephemeralSeed = fixed(`grant ephemeral seed ${kind}`, 32);
      const grant = createGrant(
        {
          key,
          kind,
          projectId: 'prj_1',
          epoch,
          environmentId,
          recipientId: 'usr_bob',
          recipientPublicKey: b64(recipient.publicKey),
          granterId: 'usr_alice',
          granterSigningSecretKey: granter.privateKey,
        },
        { ephemeralSeed },
      );
      const signedMessage = encodeParts([
        'coffer/v1/grant',
        kind,
        'prj_1',
        String(epoch),
        environmentId ?? '',
        'usr_bob',
        recipient.publicKey,
        lib.from_base64(grant.sealed_key, lib.base64_variants.URLSAFE_NO_PADDING),
        'usr_alice',
      ]);
      return {
        key: b64(key),
        ephemeral_seed: b64(ephemeralSeed),
        signed_message: b64(signedMessage),
        grant,
      };
    }),
  };
}

function tokenVectors() {
  const bearers: { prefix: TokenPrefix; body: string }[] = [
    { prefix: 'cek_', body: '0123456789ABCDEFGHIJKLMNOPQRST' },
    { prefix: 'ci_', body: 'abcdefghijklmnopqrstuvwxyz0123' },
    { prefix: 'cek_', body: '000000000000000000000000000000' },
  ];
  const keyPart = b64(fixed('token key part', 32));
  const pair = tokenKeyPairFromKeyPart(keyPart);
  const bearer = composeBearer('cek_', bearers[0]!.body);
  return {
    description:
      'Bearer = prefix + 30 base62 characters + base62(CRC-32(prefix + body)) left-padded to 6 ' +
      '(alphabet 0-9A-Za-z, most significant first). hash = hex SHA-256(bearer). Key part = ' +
      'base64url 32-byte seed; key pair = crypto_box_seed_keypair(seed); credential = bearer "." key_part. ' +
      'Key part version 2 = base64url(0x02 ‖ seed ‖ creator Ed25519 public key), 87 characters: ' +
      'the same key pairs from the seed; the token opens only grants signed by the creator key.',
    crc32: [
      { input: '123456789', crc32: crc32(new TextEncoder().encode('123456789')) },
      { input: '', crc32: crc32(new Uint8Array(0)) },
    ],
    bearers: bearers.map(({ prefix, body }) => {
      const token = composeBearer(prefix, body);
      return {
        prefix,
        body,
        crc32: crc32(new TextEncoder().encode(prefix + body)),
        bearer: token,
        sha256_hex: sodium().to_hex(sodium().crypto_hash_sha256(token)),
      };
    }),
    key_part: {
      key_part: keyPart,
      x25519_public_key: b64(pair.publicKey),
      x25519_secret_key: b64(pair.secretKey),
      credential: `${bearer}.${keyPart}`,
    },
    key_part_v2: (() => {
      // A version 2 key part: 0x02 ‖ seed (32) ‖ the creator's Ed25519 public key (32).
      const seed = fixed('token key part', 32);
      const creator = sodium().crypto_sign_seed_keypair(fixed('token creator signing seed', 32));
      const encoded = encodeKeyPart(seed, creator.publicKey);
      const keys = tokenKeysFromKeyPart(encoded);
      const raw = fromBase64url(encoded);
      return {
        seed: b64(seed),
        creator_signing_public_key: b64(creator.publicKey),
        key_part: encoded,
        x25519_public_key: keys.publicKey,
        ed25519_public_key: keys.signingPublicKey,
        credential: `${bearer}.${encoded}`,
        invalid: [
          { name: 'version byte 3', key_part: b64(new Uint8Array([3, ...raw.slice(1)])) },
          { name: 'one byte short', key_part: b64(raw.slice(0, -1)) },
          { name: 'one byte more', key_part: b64(new Uint8Array([...raw, 0])) },
        ],
      };
    })(),
    key_part_v3: (() => {
      // Version 3: 0x03 ‖ seed (32) ‖ creator Ed25519 public key (32) ‖ chain root (32).
      const seed = fixed('token key part', 32);
      const creator = sodium().crypto_sign_seed_keypair(fixed('token creator signing seed', 32));
      const root = fixed('token chain root', 32);
      const encoded = encodeKeyPart(seed, creator.publicKey, root);
      const raw = fromBase64url(encoded);
      return {
        seed: b64(seed),
        creator_signing_public_key: b64(creator.publicKey),
        chain_root: b64(root),
        key_part: encoded,
        credential: `${bearer}.${encoded}`,
        invalid: [
          {
            name: 'version byte 2 at version 3 length',
            key_part: b64(new Uint8Array([2, ...raw.slice(1)])),
          },
          { name: 'one byte short', key_part: b64(raw.slice(0, -1)) },
          { name: 'one byte more', key_part: b64(new Uint8Array([...raw, 0])) },
        ],
      };
    })(),
    invalid_bearers: [
      {
        name: 'checksum off by one character',
        bearer: bearer.slice(0, -1) + (bearer.endsWith('0') ? '1' : '0'),
      },
      { name: 'body changed', bearer: 'cek_1' + bearer.slice(5) },
      { name: 'unknown prefix', bearer: 'cik_' + bearer.slice(4) },
      { name: 'too short', bearer: bearer.slice(0, -1) },
      { name: 'bad character', bearer: bearer.slice(0, 10) + '-' + bearer.slice(11) },
    ],
  };
}

function introductionVectors() {
  const secret = fixed('introduction secret', 32);
  const projectKey = fixed('introduction project key', 32);
  const invitee = {
    x25519: sodium().crypto_box_seed_keypair(fixed('introduction invitee x25519', 32)).publicKey,
    ed25519: sodium().crypto_sign_seed_keypair(fixed('introduction invitee ed25519', 32)).publicKey,
  };
  const inviter = {
    x25519: sodium().crypto_box_seed_keypair(fixed('introduction inviter x25519', 32)).publicKey,
    ed25519: sodium().crypto_sign_seed_keypair(fixed('introduction inviter ed25519', 32)).publicKey,
  };
  const nonce = fixed('introduction seal nonce', 24);
  const ids = { projectId: 'prj_1', memberId: 'mbr_1' };
  return {
    description:
      'k = 32 bytes. proof key = HKDF(k, ["coffer/v1/introduction"]). proof = base64url HMAC-SHA-256(' +
      'proof key, encodeParts(["coffer/v1/introduction-proof", project_id, member_id, user_id, x25519, ed25519])) over ' +
      'the invitee; inviter_proof the same with "coffer/v1/introduction-inviter" over the inviter. sealed = ' +
      '"v1.<epoch>.<nonce>.<ciphertext>", XChaCha20-Poly1305 under HKDF(PMK, ["coffer/v1/introduction-seal-key", ' +
      'project_id, epoch]) with AD encodeParts(["coffer/v1/introduction-secret", project_id, member_id, epoch]).',
    secret: b64(secret),
    project_id: ids.projectId,
    member_id: ids.memberId,
    invitee: {
      user_id: 'usr_bob',
      public_key: b64(invitee.x25519),
      signing_public_key: b64(invitee.ed25519),
      proof: introductionProof(secret, {
        ...ids,
        userId: 'usr_bob',
        publicKey: invitee.x25519,
        signingPublicKey: invitee.ed25519,
      }),
    },
    inviter: {
      user_id: 'usr_alice',
      public_key: b64(inviter.x25519),
      signing_public_key: b64(inviter.ed25519),
      proof: inviterProof(secret, {
        ...ids,
        userId: 'usr_alice',
        publicKey: inviter.x25519,
        signingPublicKey: inviter.ed25519,
      }),
    },
    seal: {
      project_key: b64(projectKey),
      epoch: 3,
      nonce: b64(nonce),
      sealed: sealIntroductionSecret(
        { secret, projectKey, projectId: ids.projectId, memberId: ids.memberId, epoch: 3 },
        { nonce },
      ),
    },
  };
}

function keyPinsVectors() {
  const owner = sodium().crypto_sign_seed_keypair(fixed('key pins owner', 32));
  const pinned = (label: string) => ({
    public_key: b64(sodium().crypto_box_seed_keypair(fixed(`${label} x25519`, 32)).publicKey),
    signing_public_key: b64(
      sodium().crypto_sign_seed_keypair(fixed(`${label} ed25519`, 32)).publicKey,
    ),
  });
  const signed = signKeyPins(
    {
      user_id: 'usr_alice',
      version: 2,
      pins: [
        {
          user_id: 'usr_carol',
          email: 'carol@example.test',
          ...pinned('carol'),
          status: 'tofu',
          at: '2026-11-24T10:00:00.000Z',
        },
        {
          user_id: 'usr_bob',
          email: 'bob@example.test',
          ...pinned('bob'),
          status: 'verified',
          at: '2026-11-24T09:00:00.000Z',
        },
      ],
    },
    owner.privateKey,
  );
  const withProjects = signKeyPins(
    {
      ...signed.document,
      version: 3,
      projects: [
        {
          project_id: 'proj_b',
          root: b64(fixed('key pins root b', 32)),
          seq: 0,
          head: b64(fixed('key pins root b', 32)),
          at: '2026-11-24T11:00:00.000Z',
        },
        {
          project_id: 'proj_a',
          root: b64(fixed('key pins root a', 32)),
          seq: 4,
          head: b64(fixed('key pins head a', 32)),
          at: '2026-11-24T12:00:00.000Z',
        },
      ],
    },
    owner.privateKey,
  );
  return {
    description:
      'Signed key pins: pins sorted by user_id; Ed25519 (owner) over encodeParts(["coffer/v1/key-pins", ' +
      'user_id, version, count, then per pin user_id, email, x25519 (raw), ed25519 (raw), status, at]). ' +
      'With project pins (sorted by project_id), the parts go on with "projects", count, then per project ' +
      'project_id, root (raw), seq, head (raw), at.',
    owner_signing_public_key: b64(owner.publicKey),
    signed,
    signed_with_projects: withProjects,
  };
}

function membershipVectors() {
  const person = (label: string) => {
    const encryption = sodium().crypto_box_seed_keypair(fixed(`membership ${label} x25519`, 32));
    const signing = sodium().crypto_sign_seed_keypair(fixed(`membership ${label} ed25519`, 32));
    return {
      subject: {
        user_id: `usr_${label}`,
        public_key: b64(encryption.publicKey),
        signing_public_key: b64(signing.publicKey),
      },
      signingSecretKey: signing.privateKey,
    };
  };
  const alice = person('alice');
  const bob = person('bob');
  const mallory = person('mallory');
  const projectId = 'proj_vectors';
  const steps: [typeof alice, typeof alice, 'root' | 'add' | 'role' | 'remove', string | null][] = [
    [alice, alice, 'root', 'admin'],
    [alice, bob, 'add', 'developer'],
    [alice, bob, 'role', 'admin'],
    [bob, alice, 'role', 'viewer'],
    [bob, alice, 'remove', null],
  ];
  const statements: MembershipStatement[] = [];
  for (const [i, [signer, subject, kind, role]] of steps.entries()) {
    const state = i === 0 ? null : verifyMembershipChain(statements, projectId);
    statements.push(
      nextMembershipStatement(state, {
        projectId,
        kind,
        subject: subject.subject,
        role: role as 'admin' | 'developer' | 'viewer' | null,
        signerId: signer.subject.user_id,
        signingSecretKey: signer.signingSecretKey,
        at: `2026-11-24T1${i}:00:00.000Z`,
      }),
    );
  }
  const state = verifyMembershipChain(statements, projectId);
  const resign = (s: MembershipStatement, by: typeof alice) =>
    signMembershipStatement(s, by.signingSecretKey);
  const invalid: { name: string; statements: MembershipStatement[] }[] = [
    {
      name: 'a role changed after signing',
      statements: [statements[0]!, { ...statements[1]!, role: 'admin' }],
    },
    { name: 'a statement left out', statements: [statements[0]!, statements[2]!] },
    { name: 'the order swapped', statements: [statements[0]!, statements[2]!, statements[1]!] },
    { name: 'no root', statements: statements.slice(1) },
    {
      name: 'signed by a developer',
      statements: [
        statements[0]!,
        statements[1]!,
        resign({ ...statements[2]!, signer_id: 'usr_bob' }, bob),
      ],
    },
    {
      name: 'signed by a stranger who claims to be admin',
      statements: [
        statements[0]!,
        resign(
          {
            ...statements[1]!,
            user_id: 'usr_mallory',
            public_key: mallory.subject.public_key,
            signing_public_key: mallory.subject.signing_public_key,
            role: 'admin',
            signer_id: 'usr_mallory',
          },
          mallory,
        ),
      ],
    },
    {
      name: 'the root signed by another key than its subject’s',
      statements: [resign(statements[0]!, mallory)],
    },
    {
      name: 'a role statement with other keys than the chain holds',
      statements: [
        statements[0]!,
        statements[1]!,
        resign({ ...statements[2]!, public_key: mallory.subject.public_key }, alice),
      ],
    },
    {
      name: 'another project',
      statements: [{ ...statements[0]!, project_id: 'proj_other' }],
    },
  ];
  return {
    description:
      'Membership chain: statement = { project_id, seq, prev, kind, user_id, public_key, signing_public_key, ' +
      'role, signer_id, at, signature }. signature = Ed25519(signer, message) with message = encodeParts([' +
      '"coffer/v1/membership", project_id, seq, prev, kind, user_id, x25519 (raw), ed25519 (raw), role or "", ' +
      'signer_id, at]). link hash = BLAKE2b-256(encodeParts(["coffer/v1/membership-link", message, signature ' +
      '(raw)])); prev = the link hash of statement seq - 1 ("" for the root). The root is self-signed by an ' +
      'admin subject; later statements are signed by a current admin of the chain with the key the chain ' +
      'holds. Fingerprint = the first 20 bytes of the root link hash as 5 groups of 8 uppercase hex digits.',
    project_id: projectId,
    signing_secret_keys: {
      usr_alice: b64(alice.signingSecretKey),
      usr_bob: b64(bob.signingSecretKey),
    },
    statements,
    messages: statements.map((s) => b64(membershipMessage(s))),
    hashes: statements.map((s) => membershipLinkHash(s)),
    root: state.root,
    fingerprint: state.fingerprint,
    members: [...state.members.values()],
    invalid,
  };
}

/** File name → content. */
export async function buildVectors(): Promise<Record<string, unknown>> {
  await ready();
  return {
    'encoding.json': encodingVectors(),
    'hkdf.json': hkdfVectors(),
    'password.json': passwordVectors(),
    'user-keys.json': userKeyVectors(),
    'recovery-key.json': recoveryVectors(),
    'environment-key.json': environmentKeyVectors(),
    'envelope.json': envelopeVectors(),
    'override.json': overrideVectors(),
    'grant.json': grantVectors(),
    'token.json': tokenVectors(),
    'introduction.json': introductionVectors(),
    'key-pins.json': keyPinsVectors(),
    'membership.json': membershipVectors(),
  };
}

async function main(): Promise<void> {
  const directory = fileURLToPath(new URL('.', import.meta.url));
  for (const [file, content] of Object.entries(await buildVectors())) {
    const path = directory + file;
    const options = (await prettier.resolveConfig(path)) ?? {};
    await writeFile(
      path,
      await prettier.format(JSON.stringify(content), { ...options, filepath: path }),
    );
    console.log(`wrote ${path}`);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
