import { encodeParts, fromBase64url, toBase64url, utf8Decode, utf8Encode } from './encoding.js';
import { CryptoError } from './errors.js';
import { randomBytes, sodium } from './sodium.js';
import { assertEpoch, assertId, assertKey } from './vault.js';

/** Maximum size of a secret value, in UTF-8 bytes. */
export const MAX_SECRET_VALUE_BYTES = 65536;

const NONCE_BYTES = 24;
const TAG_BYTES = 16;

function base64urlLength(bytes: number): number {
  return Math.ceil((bytes * 4) / 3);
}

const MIN_CIPHERTEXT_CHARS = base64urlLength(TAG_BYTES);
const MAX_CIPHERTEXT_CHARS = base64urlLength(MAX_SECRET_VALUE_BYTES + TAG_BYTES);

/**
 * Shape of a secret value envelope: `v1.xc20p.<epoch>.<nonce>.<ciphertext>`.
 * For servers' shape validation (use `.source` in a JSON schema `pattern`);
 * it does not prove the base64url decodes — parseEnvelope does.
 */
export const SECRET_ENVELOPE_PATTERN = new RegExp(
  `^v1\\.xc20p\\.([1-9][0-9]{0,14})\\.([A-Za-z0-9_-]{${base64urlLength(NONCE_BYTES)}})` +
    `\\.([A-Za-z0-9_-]{${MIN_CIPHERTEXT_CHARS},${MAX_CIPHERTEXT_CHARS}})$`,
);

const ENVELOPE_PREFIX = 'v1.xc20p.';

/**
 * The key epoch of an envelope whose shape SECRET_ENVELOPE_PATTERN already
 * accepted (a server's request schema), read without decoding it. For an
 * envelope not yet checked, use parseEnvelope.
 */
export function envelopeEpoch(envelope: string): number {
  return Number(
    envelope.slice(ENVELOPE_PREFIX.length, envelope.indexOf('.', ENVELOPE_PREFIX.length)),
  );
}

/** Longest possible envelope string (for a schema's maxLength). */
export const MAX_SECRET_ENVELOPE_LENGTH =
  'v1.xc20p.'.length + 15 + 1 + base64urlLength(NONCE_BYTES) + 1 + MAX_CIPHERTEXT_CHARS;

export interface ParsedEnvelope {
  version: 'v1';
  algorithm: 'xc20p';
  epoch: number;
  nonce: Uint8Array;
  ciphertext: Uint8Array;
}

/** Where a secret value belongs; all of it is authenticated as associated data. */
export interface SecretBinding {
  projectId: string;
  environmentId: string;
  name: string;
  epoch: number;
}

export interface EncryptSecretValueInput extends SecretBinding {
  environmentKey: Uint8Array;
  value: string;
}

export interface DecryptSecretValueInput extends SecretBinding {
  environmentKey: Uint8Array;
  envelope: string;
}

export function parseEnvelope(envelope: string): ParsedEnvelope {
  const match = typeof envelope === 'string' ? SECRET_ENVELOPE_PATTERN.exec(envelope) : null;
  if (match === null) throw new CryptoError('invalid_envelope');
  const epoch = Number(match[1]);
  if (!Number.isSafeInteger(epoch)) throw new CryptoError('invalid_envelope');
  const nonce = fromBase64url(match[2]!, { code: 'invalid_envelope', length: NONCE_BYTES });
  const ciphertext = fromBase64url(match[3]!, { code: 'invalid_envelope' });
  if (ciphertext.length < TAG_BYTES || ciphertext.length > MAX_SECRET_VALUE_BYTES + TAG_BYTES) {
    throw new CryptoError('invalid_envelope');
  }
  return { version: 'v1', algorithm: 'xc20p', epoch, nonce, ciphertext };
}

function checkBinding(binding: SecretBinding & { environmentKey: Uint8Array }): void {
  assertKey(binding.environmentKey, 'environment key');
  assertId(binding.projectId, 'projectId');
  assertId(binding.environmentId, 'environmentId');
  assertId(binding.name, 'name');
  assertEpoch(binding.epoch);
}

function secretAssociatedData(binding: SecretBinding): Uint8Array {
  return encodeParts([
    'coffer/v1/secret-value',
    binding.projectId,
    binding.environmentId,
    binding.name,
    String(binding.epoch),
  ]);
}

/** XChaCha20-Poly1305 under the environment key. `options.nonce` exists for test vectors. */
export function encryptSecretValue(
  input: EncryptSecretValueInput,
  options: { nonce?: Uint8Array } = {},
): string {
  checkBinding(input);
  if (typeof input.value !== 'string')
    throw new CryptoError('invalid_input', 'value must be a string');
  const nonce = options.nonce ?? randomBytes(NONCE_BYTES);
  if (nonce.length !== NONCE_BYTES)
    throw new CryptoError('invalid_input', 'nonce must be 24 bytes');
  const ciphertext = sealUtf8(
    input.value,
    secretAssociatedData(input),
    nonce,
    input.environmentKey,
  );
  return `v1.xc20p.${input.epoch}.${toBase64url(nonce)}.${toBase64url(ciphertext)}`;
}

/** XChaCha20-Poly1305 of a UTF-8 value of at most MAX_SECRET_VALUE_BYTES (secret values, overrides). */
export function sealUtf8(
  value: string,
  associatedData: Uint8Array,
  nonce: Uint8Array,
  key: Uint8Array,
): Uint8Array {
  const plaintext = utf8Encode(value);
  if (plaintext.length > MAX_SECRET_VALUE_BYTES) throw new CryptoError('value_too_large');
  const lib = sodium();
  try {
    return lib.crypto_aead_xchacha20poly1305_ietf_encrypt(
      plaintext,
      associatedData,
      null,
      nonce,
      key,
    );
  } finally {
    lib.memzero(plaintext);
  }
}

/** The inverse of `sealUtf8`: `decryption_failed` for a wrong key or binding, tampering, or invalid UTF-8. */
export function openUtf8(
  ciphertext: Uint8Array,
  associatedData: Uint8Array,
  nonce: Uint8Array,
  key: Uint8Array,
): string {
  const lib = sodium();
  let plaintext: Uint8Array;
  try {
    plaintext = lib.crypto_aead_xchacha20poly1305_ietf_decrypt(
      null,
      ciphertext,
      associatedData,
      nonce,
      key,
    );
  } catch {
    throw new CryptoError('decryption_failed');
  }
  try {
    return utf8Decode(plaintext);
  } catch {
    throw new CryptoError('decryption_failed', 'decrypted value is not valid UTF-8');
  } finally {
    lib.memzero(plaintext);
  }
}

/**
 * Throws `invalid_envelope` when malformed and `decryption_failed` for a wrong
 * key, a wrong binding (project, environment, name, epoch) or tampering.
 */
export function decryptSecretValue(input: DecryptSecretValueInput): string {
  checkBinding(input);
  const parsed = parseEnvelope(input.envelope);
  if (parsed.epoch !== input.epoch) throw new CryptoError('decryption_failed');
  return openUtf8(
    parsed.ciphertext,
    secretAssociatedData(input),
    parsed.nonce,
    input.environmentKey,
  );
}
