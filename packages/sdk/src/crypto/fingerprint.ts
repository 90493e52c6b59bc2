import { encodeParts, fromBase64url } from './encoding.js';
import { CryptoError, type CryptoErrorCode } from './errors.js';
import { sodium } from './sodium.js';

/** Accepts a 32-byte public key as bytes or base64url. */
export function publicKeyBytes(
  key: Uint8Array | string,
  code: CryptoErrorCode = 'invalid_input',
): Uint8Array {
  if (typeof key === 'string') return fromBase64url(key, { code, length: 32 });
  if (key instanceof Uint8Array && key.length === 32) return key;
  throw new CryptoError(code, 'public key must be 32 bytes');
}

/**
 * Human-comparable fingerprint of a user's (or token's) public keys: the first
 * 20 bytes of BLAKE2b-256(encodeParts(['coffer/v1/fingerprint', x25519, ed25519]))
 * as 5 space-separated groups of 8 uppercase hex digits. Keys may be bytes or base64url.
 */
export function fingerprint(
  encryptionPublicKey: Uint8Array | string,
  signingPublicKey: Uint8Array | string,
): string {
  const lib = sodium();
  const digest = lib.crypto_generichash(
    32,
    encodeParts([
      'coffer/v1/fingerprint',
      publicKeyBytes(encryptionPublicKey),
      publicKeyBytes(signingPublicKey),
    ]),
    null,
  );
  const hex = lib.to_hex(digest.subarray(0, 20)).toUpperCase();
  return (hex.match(/.{8}/g) ?? []).join(' ');
}
