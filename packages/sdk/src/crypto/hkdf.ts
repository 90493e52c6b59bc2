import { concatBytes, encodeParts } from './encoding.js';
import { CryptoError } from './errors.js';
import { sodium } from './sodium.js';

const HASH_LENGTH = 32;

/**
 * HMAC-SHA-256 from libsodium. The streaming API is used because the one-shot
 * `crypto_auth_hmacsha256` only accepts 32-byte keys, while HKDF-Extract keys
 * HMAC with the salt, which may have any length.
 */
export function hmacSha256(key: Uint8Array, message: Uint8Array): Uint8Array {
  const lib = sodium();
  const state = lib.crypto_auth_hmacsha256_init(key);
  lib.crypto_auth_hmacsha256_update(state, message);
  return lib.crypto_auth_hmacsha256_final(state);
}

/** RFC 5869 HKDF-Extract; an empty salt means HashLen zero bytes. */
export function hkdfExtract(salt: Uint8Array, ikm: Uint8Array): Uint8Array {
  return hmacSha256(salt.length === 0 ? new Uint8Array(HASH_LENGTH) : salt, ikm);
}

/** RFC 5869 HKDF-Expand. */
function hkdfExpand(prk: Uint8Array, info: Uint8Array, length: number): Uint8Array {
  if (!Number.isInteger(length) || length < 1 || length > 255 * HASH_LENGTH) {
    throw new CryptoError('invalid_input', 'HKDF output length out of range');
  }
  const okm = new Uint8Array(length);
  let block: Uint8Array = new Uint8Array(0);
  for (let counter = 1, offset = 0; offset < length; counter++) {
    block = hmacSha256(prk, concatBytes(block, info, Uint8Array.of(counter)));
    okm.set(block.subarray(0, Math.min(HASH_LENGTH, length - offset)), offset);
    offset += HASH_LENGTH;
  }
  return okm;
}

/** RFC 5869 HKDF with SHA-256. */
export function hkdfSha256(
  ikm: Uint8Array,
  salt: Uint8Array,
  info: Uint8Array,
  length: number,
): Uint8Array {
  const prk = hkdfExtract(salt, ikm);
  try {
    return hkdfExpand(prk, info, length);
  } finally {
    sodium().memzero(prk);
  }
}

/** Coffer's use of HKDF: empty salt, info = encodeParts(context), 32 bytes unless stated. */
export function deriveSubkey(
  ikm: Uint8Array,
  context: readonly (string | Uint8Array)[],
  length = 32,
): Uint8Array {
  return hkdfSha256(ikm, new Uint8Array(0), encodeParts(context), length);
}
