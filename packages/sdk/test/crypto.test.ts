import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import {
  CryptoError,
  DEFAULT_KDF_PARAMS,
  KDF_SALT_PATTERN,
  KEY_32_PATTERN,
  SEALED_KEY_PATTERN,
  SIGNATURE_PATTERN,
  MAX_SECRET_ENVELOPE_LENGTH,
  MAX_SECRET_VALUE_BYTES,
  SECRET_ENVELOPE_PATTERN,
  TOKEN_PREFIXES,
  WRAPPED_PRIVATE_KEYS_PATTERN,
  assertKdfParamsStrength,
  base64urlPattern,
  createGrant,
  decryptSecretValue,
  deriveEnvironmentKey,
  derivePasswordKeys,
  deriveRecoveryKeys,
  encodeParts,
  encryptSecretValue,
  fingerprint,
  formatRecoveryKey,
  fromBase64url,
  generateBearer,
  generateKdfParams,
  generateProjectKey,
  generateRecoveryKey,
  generateTokenCredential,
  generateUserKeys,
  hashBearer,
  hmacSha256,
  isCryptoError,
  isWellFormedBearer,
  openGrant,
  parseCredential,
  parseEnvelope,
  parseRecoveryKey,
  ready,
  toBase64url,
  tokenKeyPairFromKeyPart,
  unwrapPrivateKeys,
  verifyGrantSignature,
  wrapPrivateKeys,
  type CreateGrantInput,
  type CryptoErrorCode,
  type Grant,
  type OpenGrantOptions,
  type UserKeys,
} from '../src/crypto/index.js';
import { sodium } from '../src/crypto/sodium.js';

await ready();

const CHEAP_KDF = { ops_limit: 2, mem_limit_kib: 8192 } as const;

function rejects(fn: () => unknown, code: CryptoErrorCode, message?: string): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof CryptoError, `expected a CryptoError, got ${String(error)}`);
    assert.equal(error.code, code, message);
    return true;
  });
}

function randomId(prefix: string): string {
  return `${prefix}_${toBase64url(sodium().randombytes_buf(9))}`;
}

/** Flips one bit of the byte at `index` (negative counts from the end) of a base64url field. */
function flipBit(text: string, index: number): string {
  const bytes = fromBase64url(text);
  bytes[(index + bytes.length) % bytes.length]! ^= 0x01;
  return toBase64url(bytes);
}

test('ready() can be awaited repeatedly', async () => {
  await Promise.all([ready(), ready()]);
});

describe('encoding', () => {
  test('encodeParts never collides across part boundaries', () => {
    assert.notDeepEqual(encodeParts(['ab', 'c']), encodeParts(['a', 'bc']));
    assert.notDeepEqual(encodeParts(['a', '']), encodeParts(['a']));
    assert.notDeepEqual(encodeParts(['x']), encodeParts([new Uint8Array([0, 0, 0, 1, 0x78])]));
  });

  test('base64url is strict and unpadded', () => {
    assert.equal(toBase64url(new Uint8Array([0xfb, 0xff])), '-_8');
    for (const bad of ['-_8=', '+/8', 'A', 'AB', ' AA', 'AA\n']) {
      rejects(() => fromBase64url(bad), 'invalid_input', bad);
    }
    rejects(() => fromBase64url('AAAA', { length: 2 }), 'invalid_input');
  });

  test('HMAC matches libsodium one-shot crypto_auth_hmacsha256 for 32-byte keys', () => {
    const key = sodium().randombytes_buf(32);
    const message = sodium().randombytes_buf(100);
    assert.deepEqual(hmacSha256(key, message), sodium().crypto_auth_hmacsha256(message, key));
  });
});

describe('password keys', () => {
  const params = generateKdfParams(CHEAP_KDF);

  test('defaults are argon2id, ops 3, 64 MiB, random 16-byte salt', () => {
    const fresh = generateKdfParams();
    assert.equal(fresh.algorithm, 'argon2id');
    assert.equal(fresh.ops_limit, DEFAULT_KDF_PARAMS.ops_limit);
    assert.equal(fresh.mem_limit_kib, 65536);
    assert.equal(fromBase64url(fresh.salt).length, 16);
    assert.notEqual(fresh.salt, generateKdfParams().salt);
  });

  test('same password and params give the same keys; auth and wrap keys differ', () => {
    const one = derivePasswordKeys('s3cret password', params);
    const two = derivePasswordKeys('s3cret password', params);
    assert.deepEqual(one, two);
    assert.equal(fromBase64url(one.authKey).length, 32);
    assert.notEqual(one.authKey, toBase64url(one.wrapKey));
  });

  test('a different password or salt gives different keys', () => {
    const base = derivePasswordKeys('s3cret password', params);
    assert.notEqual(derivePasswordKeys('s3cret passwort', params).authKey, base.authKey);
    assert.notEqual(
      derivePasswordKeys('s3cret password', { ...params, salt: generateKdfParams().salt }).authKey,
      base.authKey,
    );
  });

  test('the password is NFC-normalised', () => {
    assert.equal(
      derivePasswordKeys('caf\u0065\u0301', params).authKey,
      derivePasswordKeys('caf\u00e9', params).authKey,
    );
  });

  test('malformed parameters are rejected before any hashing', () => {
    const bad: unknown[] = [
      { ...params, algorithm: 'argon2i' },
      { ...params, ops_limit: 0 },
      { ...params, ops_limit: 1.5 },
      { ...params, ops_limit: 1000 },
      { ...params, mem_limit_kib: 4 },
      { ...params, mem_limit_kib: 64 * 1024 * 1024 },
      { ...params, salt: 'c2hvcnQ' },
      { ...params, salt: params.salt + '==' },
    ];
    for (const candidate of bad) {
      rejects(
        () => derivePasswordKeys('pw', candidate as typeof params),
        'invalid_kdf_params',
        JSON.stringify(candidate),
      );
    }
  });

  test('a server cannot downgrade the parameters unnoticed', () => {
    assert.doesNotThrow(() => assertKdfParamsStrength(generateKdfParams()));
    rejects(() => assertKdfParamsStrength(params), 'weak_kdf_params');
    rejects(
      () => assertKdfParamsStrength({ ...generateKdfParams(), ops_limit: 1 }),
      'weak_kdf_params',
    );
  });
});

describe('user keys', () => {
  const keys = generateUserKeys();
  const wrapKey = sodium().randombytes_buf(32);

  test('round-trip through both wrap contexts', () => {
    for (const context of ['password', 'recovery'] as const) {
      const wrapped = wrapPrivateKeys(keys, wrapKey, context);
      assert.match(wrapped, WRAPPED_PRIVATE_KEYS_PATTERN);
      assert.deepEqual(unwrapPrivateKeys(wrapped, wrapKey, context), keys);
    }
  });

  test('fresh nonce for every wrap', () => {
    assert.notEqual(
      wrapPrivateKeys(keys, wrapKey, 'password'),
      wrapPrivateKeys(keys, wrapKey, 'password'),
    );
  });

  test('a wrong wrap key, a wrong context or tampering fail with decryption_failed', () => {
    const wrapped = wrapPrivateKeys(keys, wrapKey, 'password');
    const [version, nonce, ciphertext] = wrapped.split('.') as [string, string, string];
    rejects(
      () => unwrapPrivateKeys(wrapped, sodium().randombytes_buf(32), 'password'),
      'decryption_failed',
    );
    rejects(() => unwrapPrivateKeys(wrapped, wrapKey, 'recovery'), 'decryption_failed');
    rejects(
      () => unwrapPrivateKeys(`${version}.${flipBit(nonce, 0)}.${ciphertext}`, wrapKey, 'password'),
      'decryption_failed',
    );
    rejects(
      () => unwrapPrivateKeys(`${version}.${nonce}.${flipBit(ciphertext, 5)}`, wrapKey, 'password'),
      'decryption_failed',
    );
    rejects(
      () =>
        unwrapPrivateKeys(`${version}.${nonce}.${flipBit(ciphertext, -1)}`, wrapKey, 'password'),
      'decryption_failed',
    );
  });

  test('malformed wrapped keys fail with invalid_envelope', () => {
    const wrapped = wrapPrivateKeys(keys, wrapKey, 'password');
    for (const bad of [
      '',
      wrapped.replace('v1.', 'v2.'),
      wrapped.slice(0, -1),
      `${wrapped}.x`,
      `${wrapped}=`,
    ]) {
      rejects(() => unwrapPrivateKeys(bad, wrapKey, 'password'), 'invalid_envelope');
    }
  });

  test('fingerprint: 5 groups of 8 uppercase hex digits, bound to both keys', () => {
    const print = fingerprint(keys.encryption.publicKey, keys.signing.publicKey);
    assert.match(print, /^[0-9A-F]{8}( [0-9A-F]{8}){4}$/);
    assert.equal(
      fingerprint(toBase64url(keys.encryption.publicKey), toBase64url(keys.signing.publicKey)),
      print,
    );
    const other = generateUserKeys();
    assert.notEqual(fingerprint(other.encryption.publicKey, keys.signing.publicKey), print);
    assert.notEqual(fingerprint(keys.encryption.publicKey, other.signing.publicKey), print);
    rejects(() => fingerprint(new Uint8Array(31), keys.signing.publicKey), 'invalid_input');
  });
});

describe('recovery key', () => {
  test('round-trip, and it is tolerant of case, spaces and a missing prefix', () => {
    const { bytes, text } = generateRecoveryKey();
    assert.match(text, /^CRK(-[0-9A-Z]{4}){13}-[0-9A-Z]{3}$/);
    assert.deepEqual(parseRecoveryKey(text), bytes);
    assert.deepEqual(parseRecoveryKey(text.toLowerCase()), bytes);
    assert.deepEqual(parseRecoveryKey(`  ${text.replace(/-/g, ' ')}\n`), bytes);
    assert.deepEqual(parseRecoveryKey(text.slice(4)), bytes);
    assert.deepEqual(parseRecoveryKey(text.slice(4).replace(/-/g, '')), bytes);
  });

  test('O, I and L are read as 0, 1 and 1', () => {
    const bytes = new Uint8Array(32);
    bytes[0] = 0x08; // first characters "10…"
    const text = formatRecoveryKey(bytes);
    assert.ok(text.startsWith('CRK-10'));
    assert.deepEqual(parseRecoveryKey(text.replace('CRK-10', 'CRK-lO')), bytes);
    assert.deepEqual(parseRecoveryKey(text.replace('CRK-10', 'CRK-Io')), bytes);
  });

  test('a typo is caught by the checksum', () => {
    // A fixed key: with a random one, 1 typo in 65536 would pass a 2-byte checksum.
    const text = formatRecoveryKey(new Uint8Array(32).map((_, i) => i * 7));
    for (const index of [4, 10, 30, 50]) {
      const swapped = text[index] === 'A' ? 'B' : 'A';
      rejects(
        () => parseRecoveryKey(text.slice(0, index) + swapped + text.slice(index + 1)),
        'invalid_recovery_key',
      );
    }
  });

  test('wrong length, foreign characters and non-canonical endings are rejected', () => {
    const { text } = generateRecoveryKey();
    for (const bad of [
      '',
      'CRK-',
      text.slice(0, -1),
      `${text}A`,
      text.replace(/[A-Z0-9]$/, 'U'),
      'XYZ' + text.slice(3),
    ]) {
      rejects(() => parseRecoveryKey(bad), 'invalid_recovery_key', bad);
    }
    // The last character carries 2 bits; the other 3 must be zero.
    const last = text.at(-1)!;
    const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    const nonCanonical = alphabet[alphabet.indexOf(last) + 1]!;
    rejects(() => parseRecoveryKey(text.slice(0, -1) + nonCanonical), 'invalid_recovery_key');
  });

  test('recovery auth and wrap keys differ from each other and from the password keys', () => {
    const { bytes } = generateRecoveryKey();
    const derived = deriveRecoveryKeys(bytes);
    assert.notEqual(derived.authKey, toBase64url(derived.wrapKey));
    assert.deepEqual(deriveRecoveryKeys(bytes), derived);
  });
});

describe('secret values', () => {
  const projectKey = generateProjectKey();
  const binding = { projectId: 'prj_a', environmentId: 'env_prod', name: 'DATABASE_URL', epoch: 3 };
  const environmentKey = deriveEnvironmentKey(
    projectKey,
    binding.projectId,
    binding.environmentId,
    binding.epoch,
  );
  const envelope = encryptSecretValue({ ...binding, environmentKey, value: 'postgres://u:p@h/db' });

  test('environment keys are separated by project, environment and epoch', () => {
    const keys = [
      environmentKey,
      deriveEnvironmentKey(projectKey, 'prj_b', binding.environmentId, binding.epoch),
      deriveEnvironmentKey(projectKey, binding.projectId, 'env_staging', binding.epoch),
      deriveEnvironmentKey(projectKey, binding.projectId, binding.environmentId, binding.epoch + 1),
      deriveEnvironmentKey(
        generateProjectKey(),
        binding.projectId,
        binding.environmentId,
        binding.epoch,
      ),
    ].map(toBase64url);
    assert.equal(new Set(keys).size, keys.length);
    rejects(() => deriveEnvironmentKey(projectKey, 'p', 'e', 0), 'invalid_input');
    rejects(() => deriveEnvironmentKey(projectKey.subarray(1), 'p', 'e', 1), 'invalid_input');
  });

  test('round-trip with random inputs', () => {
    for (let i = 0; i < 25; i++) {
      const pmk = generateProjectKey();
      const randomBinding = {
        projectId: randomId('prj'),
        environmentId: randomId('env'),
        name: `SECRET_${i}`,
        epoch: 1 + sodium().randombytes_uniform(1000),
      };
      const key = deriveEnvironmentKey(
        pmk,
        randomBinding.projectId,
        randomBinding.environmentId,
        randomBinding.epoch,
      );
      const value = i % 5 === 0 ? '' : toBase64url(sodium().randombytes_buf(i * 37)) + ' é 🔐 \n';
      const sealed = encryptSecretValue({ ...randomBinding, environmentKey: key, value });
      assert.match(sealed, SECRET_ENVELOPE_PATTERN);
      assert.equal(parseEnvelope(sealed).epoch, randomBinding.epoch);
      assert.equal(
        decryptSecretValue({ ...randomBinding, environmentKey: key, envelope: sealed }),
        value,
      );
    }
  });

  test('the envelope has the documented shape and a fresh nonce each time', () => {
    const parts = envelope.split('.');
    assert.deepEqual(parts.slice(0, 3), ['v1', 'xc20p', '3']);
    assert.equal(fromBase64url(parts[3]!).length, 24);
    assert.notEqual(
      encryptSecretValue({ ...binding, environmentKey, value: 'x' }),
      encryptSecretValue({ ...binding, environmentKey, value: 'x' }),
    );
  });

  test('another project, environment, name or epoch cannot decrypt it', () => {
    const wrongBindings = [
      { projectId: 'prj_b' },
      { environmentId: 'env_staging' },
      { name: 'DATABASE_URL_2' },
      { name: 'database_url' },
      { epoch: 4 },
    ];
    for (const wrong of wrongBindings) {
      rejects(
        () => decryptSecretValue({ ...binding, ...wrong, environmentKey, envelope }),
        'decryption_failed',
        JSON.stringify(wrong),
      );
    }
    // Even with the matching key for the claimed environment or epoch.
    const stagingKey = deriveEnvironmentKey(
      projectKey,
      binding.projectId,
      'env_staging',
      binding.epoch,
    );
    rejects(
      () =>
        decryptSecretValue({
          ...binding,
          environmentId: 'env_staging',
          environmentKey: stagingKey,
          envelope,
        }),
      'decryption_failed',
    );
    const relabelled = envelope.replace('v1.xc20p.3.', 'v1.xc20p.4.');
    const epoch4Key = deriveEnvironmentKey(projectKey, binding.projectId, binding.environmentId, 4);
    rejects(
      () =>
        decryptSecretValue({
          ...binding,
          epoch: 4,
          environmentKey: epoch4Key,
          envelope: relabelled,
        }),
      'decryption_failed',
    );
    rejects(
      () => decryptSecretValue({ ...binding, epoch: 4, environmentKey, envelope: relabelled }),
      'decryption_failed',
    );
  });

  test('a wrong key fails', () => {
    rejects(
      () =>
        decryptSecretValue({ ...binding, environmentKey: sodium().randombytes_buf(32), envelope }),
      'decryption_failed',
    );
  });

  test('tampered nonce or ciphertext fails with decryption_failed', () => {
    const [v, alg, epoch, nonce, ciphertext] = envelope.split('.') as [
      string,
      string,
      string,
      string,
      string,
    ];
    const tampered = [
      [v, alg, epoch, flipBit(nonce, 3), ciphertext],
      [v, alg, epoch, nonce, flipBit(ciphertext, 0)],
      [v, alg, epoch, nonce, flipBit(ciphertext, -1)],
      [v, alg, epoch, nonce, toBase64url(fromBase64url(ciphertext).subarray(0, -1))],
    ];
    for (const parts of tampered) {
      rejects(
        () => decryptSecretValue({ ...binding, environmentKey, envelope: parts.join('.') }),
        'decryption_failed',
      );
    }
  });

  test('malformed envelopes fail with invalid_envelope', () => {
    for (const bad of [
      '',
      'v1',
      envelope.replace('xc20p', 'XC20P'),
      envelope.replace('.3.', '.-3.'),
      `${envelope} `,
      envelope.replace(/\.[^.]+$/, ''),
    ]) {
      rejects(() => parseEnvelope(bad), 'invalid_envelope', bad);
      rejects(
        () => decryptSecretValue({ ...binding, environmentKey, envelope: bad }),
        'invalid_envelope',
        bad,
      );
    }
    rejects(() => parseEnvelope(42 as unknown as string), 'invalid_envelope');
  });

  test('values are limited to MAX_SECRET_VALUE_BYTES of UTF-8', () => {
    const largest = encryptSecretValue({
      ...binding,
      environmentKey,
      value: 'a'.repeat(MAX_SECRET_VALUE_BYTES),
    });
    assert.match(largest, SECRET_ENVELOPE_PATTERN);
    assert.ok(largest.length <= MAX_SECRET_ENVELOPE_LENGTH);
    assert.equal(
      decryptSecretValue({ ...binding, environmentKey, envelope: largest }).length,
      MAX_SECRET_VALUE_BYTES,
    );
    rejects(
      () =>
        encryptSecretValue({
          ...binding,
          environmentKey,
          value: 'a'.repeat(MAX_SECRET_VALUE_BYTES + 1),
        }),
      'value_too_large',
    );
    rejects(
      () =>
        encryptSecretValue({
          ...binding,
          environmentKey,
          value: 'é'.repeat(MAX_SECRET_VALUE_BYTES / 2 + 1),
        }),
      'value_too_large',
    );
  });

  test('the server-side pattern accepts envelopes and rejects other shapes', () => {
    assert.match(envelope, SECRET_ENVELOPE_PATTERN);
    assert.ok(new RegExp(SECRET_ENVELOPE_PATTERN.source).test(envelope));
    for (const bad of [
      'plaintext',
      envelope.replace('v1.', 'v0.'),
      envelope.replace('.3.', '.0.'),
      `${envelope}\n`,
    ]) {
      assert.equal(SECRET_ENVELOPE_PATTERN.test(bad), false, bad);
    }
  });

  test('errors do not reveal key material or plaintext', () => {
    try {
      decryptSecretValue({ ...binding, name: 'OTHER', environmentKey, envelope });
      assert.fail('expected an error');
    } catch (error) {
      assert.ok(isCryptoError(error, 'decryption_failed'));
      assert.ok(!error.message.includes(toBase64url(environmentKey)));
      assert.ok(!error.message.includes('postgres'));
    }
  });
});

describe('grants', () => {
  let admin: UserKeys;
  let member: UserKeys;
  let mallory: UserKeys;
  let pmk: Uint8Array;
  let input: CreateGrantInput;
  let grant: Grant;
  let openOptions: OpenGrantOptions;

  before(() => {
    admin = generateUserKeys();
    member = generateUserKeys();
    mallory = generateUserKeys();
    pmk = generateProjectKey();
    input = {
      key: pmk,
      kind: 'project_key',
      projectId: 'prj_1',
      epoch: 2,
      recipientId: 'usr_member',
      recipientPublicKey: toBase64url(member.encryption.publicKey),
      granterId: 'usr_admin',
      granterSigningSecretKey: admin.signing.secretKey,
    };
    grant = createGrant(input);
    openOptions = {
      recipientPublicKey: member.encryption.publicKey,
      recipientSecretKey: member.encryption.secretKey,
      granterSigningPublicKey: admin.signing.publicKey,
      expected: { projectId: 'prj_1', epoch: 2, kind: 'project_key', recipientId: 'usr_member' },
    };
  });

  test('a project key grant round-trips and has the API shape', () => {
    assert.deepEqual(Object.keys(grant), [
      'kind',
      'project_id',
      'epoch',
      'environment_id',
      'recipient_id',
      'sealed_key',
      'granter_id',
      'signature',
    ]);
    assert.equal(grant.environment_id, null);
    assert.deepEqual(openGrant(grant, openOptions), pmk);
    assert.equal(verifyGrantSignature(grant, openOptions), true);
  });

  test('an environment key grant to a token round-trips', () => {
    const token = generateTokenCredential(TOKEN_PREFIXES.ci);
    const tokenKeys = tokenKeyPairFromKeyPart(parseCredential(token.credential).keyPart);
    const ek = deriveEnvironmentKey(pmk, 'prj_1', 'env_staging', 2);
    const envGrant = createGrant({
      ...input,
      key: ek,
      kind: 'environment_key',
      environmentId: 'env_staging',
      recipientId: 'tok_1',
      recipientPublicKey: token.publicKey,
    });
    assert.equal(envGrant.environment_id, 'env_staging');
    const opened = openGrant(envGrant, {
      recipientPublicKey: token.publicKey,
      recipientSecretKey: tokenKeys.secretKey,
      granterSigningPublicKey: admin.signing.publicKey,
      expected: {
        projectId: 'prj_1',
        epoch: 2,
        kind: 'environment_key',
        environmentId: 'env_staging',
        recipientId: 'tok_1',
      },
    });
    assert.deepEqual(opened, ek);
  });

  test('a grant signed by another key is rejected before anything else', () => {
    const forged = createGrant({ ...input, granterSigningSecretKey: mallory.signing.secretKey });
    rejects(() => openGrant(forged, openOptions), 'invalid_signature');
    // The server claiming mallory's key is the admin's is what fingerprints are for;
    // against the admin's real key, the forgery fails.
    assert.equal(verifyGrantSignature(forged, openOptions), false);
  });

  test('re-binding any signed field breaks the signature', () => {
    const edits: Partial<Grant>[] = [
      { project_id: 'prj_2' },
      { epoch: 3 },
      { recipient_id: 'usr_other' },
      { granter_id: 'usr_mallory' },
      { sealed_key: flipBit(grant.sealed_key, 40) },
      { signature: flipBit(grant.signature, 0) },
    ];
    for (const edit of edits) {
      rejects(
        () => openGrant({ ...grant, ...edit }, openOptions),
        'invalid_signature',
        JSON.stringify(edit),
      );
    }
  });

  test('a grant re-bound to another environment is rejected', () => {
    const ek = deriveEnvironmentKey(pmk, 'prj_1', 'env_staging', 2);
    const envGrant = createGrant({
      ...input,
      key: ek,
      kind: 'environment_key',
      environmentId: 'env_staging',
    });
    const envExpected = { ...openOptions.expected, kind: 'environment_key' as const };
    // The server relabels it as production: the signature no longer matches.
    rejects(
      () =>
        openGrant(
          { ...envGrant, environment_id: 'env_production' },
          { ...openOptions, expected: { ...envExpected, environmentId: 'env_production' } },
        ),
      'invalid_signature',
    );
    // The server serves the genuine staging grant where production was asked for.
    rejects(
      () =>
        openGrant(envGrant, {
          ...openOptions,
          expected: { ...envExpected, environmentId: 'env_production' },
        }),
      'grant_mismatch',
    );
    // An environment grant offered as the project key.
    rejects(() => openGrant(envGrant, openOptions), 'grant_mismatch');
    rejects(
      () => openGrant({ ...envGrant, kind: 'project_key', environment_id: null }, openOptions),
      'invalid_signature',
    );
  });

  test('a genuine grant for another project, epoch or recipient is a mismatch', () => {
    const mismatches = [{ projectId: 'prj_9' }, { epoch: 1 }, { recipientId: 'usr_admin' }];
    for (const wrong of mismatches) {
      rejects(
        () => openGrant(grant, { ...openOptions, expected: { ...openOptions.expected, ...wrong } }),
        'grant_mismatch',
      );
    }
  });

  test('the wrong recipient cannot open it', () => {
    // Mallory presents her own public key: the signature covers the member's.
    rejects(
      () =>
        openGrant(grant, {
          ...openOptions,
          recipientPublicKey: mallory.encryption.publicKey,
          recipientSecretKey: mallory.encryption.secretKey,
        }),
      'invalid_signature',
    );
    // Mallory claims the member's public key but only has her own secret key.
    rejects(
      () => openGrant(grant, { ...openOptions, recipientSecretKey: mallory.encryption.secretKey }),
      'decryption_failed',
    );
  });

  test('malformed grants are rejected', () => {
    const malformed: Partial<Record<keyof Grant, unknown>>[] = [
      { kind: 'admin_key' },
      { epoch: 0 },
      { epoch: '2' },
      { environment_id: '' },
      { environment_id: 'env_x' }, // a project_key grant names no environment
      { sealed_key: grant.sealed_key.slice(0, -2) },
      { signature: `${grant.signature}==` },
      { recipient_id: 7 },
    ];
    for (const edit of malformed) {
      rejects(
        () => openGrant({ ...grant, ...edit } as Grant, openOptions),
        'invalid_grant',
        JSON.stringify(edit),
      );
    }
  });

  test('createGrant checks kind and environment agree', () => {
    rejects(() => createGrant({ ...input, environmentId: 'env_staging' }), 'invalid_input');
    rejects(() => createGrant({ ...input, kind: 'environment_key' }), 'invalid_input');
    rejects(() => createGrant({ ...input, key: pmk.subarray(0, 16) }), 'invalid_input');
    rejects(() => createGrant({ ...input, recipientPublicKey: 'not a key' }), 'invalid_input');
  });
});

describe('tokens', () => {
  test('bearers have the prefix, 36 base62 characters and a valid checksum', () => {
    for (const prefix of [TOKEN_PREFIXES.apiKey, TOKEN_PREFIXES.ci]) {
      const bearer = generateBearer(prefix);
      assert.ok(bearer.startsWith(prefix));
      assert.match(bearer.slice(prefix.length), /^[0-9A-Za-z]{36}$/);
      assert.equal(isWellFormedBearer(bearer), true);
      assert.notEqual(bearer, generateBearer(prefix));
    }
  });

  test('a changed character fails the checksum', () => {
    const bearer = generateBearer('cek_');
    for (const index of [4, 20, 33, 34, 39]) {
      const changed =
        bearer.slice(0, index) + (bearer[index] === 'x' ? 'y' : 'x') + bearer.slice(index + 1);
      assert.equal(isWellFormedBearer(changed), false, changed);
    }
    assert.equal(isWellFormedBearer(`ci_${bearer.slice(4)}`), false);
    assert.equal(isWellFormedBearer(42 as unknown as string), false);
  });

  test('credentials round-trip and yield the published public key', () => {
    const token = generateTokenCredential('cek_');
    assert.equal(token.credential, `${token.bearer}.${token.keyPart}`);
    assert.deepEqual(parseCredential(token.credential), {
      bearer: token.bearer,
      keyPart: token.keyPart,
      creatorSigningPublicKey: null,
      chainRoot: null,
    });
    assert.deepEqual(parseCredential(` ${token.credential}\n`), {
      bearer: token.bearer,
      keyPart: token.keyPart,
      creatorSigningPublicKey: null,
      chainRoot: null,
    });
    assert.equal(toBase64url(tokenKeyPairFromKeyPart(token.keyPart).publicKey), token.publicKey);
    assert.equal(fromBase64url(token.keyPart).length, 32);
  });

  test('malformed credentials fail with invalid_credential', () => {
    const token = generateTokenCredential('ci_');
    const badChecksum = token.bearer.slice(0, -1) + (token.bearer.endsWith('A') ? 'B' : 'A');
    const bad = [
      '',
      token.bearer,
      token.keyPart,
      `${token.bearer}.`,
      `${token.bearer}.${token.keyPart}.x`,
      `${token.bearer}:${token.keyPart}`,
      `${badChecksum}.${token.keyPart}`,
      `${token.bearer}.${token.keyPart.slice(0, -1)}`,
      `${token.bearer}.${token.keyPart}=`,
      `${token.bearer}.${token.keyPart.replace(/[-_]/g, 'A')}A`,
    ];
    for (const credential of bad)
      rejects(() => parseCredential(credential), 'invalid_credential', credential);
    rejects(() => tokenKeyPairFromKeyPart('short'), 'invalid_credential');
  });

  test('hashBearer is lowercase hex SHA-256', () => {
    const bearer = generateBearer('cek_');
    assert.match(hashBearer(bearer), /^[0-9a-f]{64}$/);
    assert.equal(hashBearer(bearer), hashBearer(bearer));
    assert.notEqual(hashBearer(bearer), hashBearer(generateBearer('cek_')));
  });
});

test('isCryptoError narrows by code', () => {
  const error = new CryptoError('grant_mismatch');
  assert.equal(error.name, 'CryptoError');
  assert.equal(isCryptoError(error), true);
  assert.equal(isCryptoError(error, 'grant_mismatch'), true);
  assert.equal(isCryptoError(error, 'decryption_failed'), false);
  assert.equal(isCryptoError(new Error('x')), false);
});

describe('schema patterns', () => {
  test('accept exactly the canonical base64url encodings of each length', () => {
    for (const length of [1, 2, 3, 16, 32, 64, 80]) {
      const pattern = base64urlPattern(length);
      for (let i = 0; i < 50; i++) {
        const text = toBase64url(sodium().randombytes_buf(length));
        assert.match(text, pattern);
      }
      const longer = toBase64url(sodium().randombytes_buf(length + 1));
      assert.doesNotMatch(longer, pattern);
      // Every string the pattern accepts must decode to `length` bytes.
      const edge = toBase64url(new Uint8Array(length).fill(0xff));
      assert.match(edge, pattern);
      assert.equal(fromBase64url(edge, { length }).length, length);
    }
    // Non-canonical trailing bits: 'AB' decodes nowhere, and the pattern agrees.
    assert.doesNotMatch('AB', base64urlPattern(1));
    assert.match('AA', base64urlPattern(1));
  });

  test('real values match their patterns', () => {
    const keys = generateUserKeys();
    const grant = createGrant({
      key: generateProjectKey(),
      kind: 'project_key',
      projectId: 'p',
      epoch: 1,
      recipientId: 'r',
      recipientPublicKey: keys.encryption.publicKey,
      granterId: 'g',
      granterSigningSecretKey: keys.signing.secretKey,
    });
    assert.match(grant.sealed_key, SEALED_KEY_PATTERN);
    assert.match(grant.signature, SIGNATURE_PATTERN);
    assert.match(toBase64url(keys.signing.publicKey), KEY_32_PATTERN);
    assert.match(generateKdfParams().salt, KDF_SALT_PATTERN);
    assert.match(generateTokenCredential('cek_').keyPart, KEY_32_PATTERN);
  });
});
