/**
 * Exact shapes of the base64url values in API payloads, for servers' request
 * schemas (use `.source` as a JSON schema `pattern`). Exact means canonical:
 * the right length and zero bits after the last byte, as fromBase64url
 * requires, so a value that passes can be decoded by every client.
 */
const BASE64URL = 'A-Za-z0-9_-';

/** Characters whose unused low bits are zero, for 2 or 4 unused bits. */
const LAST_CHAR_2_SPARE_BITS = 'AEIMQUYcgkosw048';
const LAST_CHAR_4_SPARE_BITS = 'AQgw';

export function base64urlPattern(byteLength: number): RegExp {
  const fullChars = Math.floor(byteLength / 3) * 4;
  const rest = byteLength % 3;
  const tail =
    rest === 0
      ? ''
      : rest === 1
        ? `[${BASE64URL}][${LAST_CHAR_4_SPARE_BITS}]`
        : `[${BASE64URL}]{2}[${LAST_CHAR_2_SPARE_BITS}]`;
  return new RegExp(`^[${BASE64URL}]{${fullChars}}${tail}$`);
}

/** 32 bytes: X25519 and Ed25519 public keys, auth keys, token key parts. */
export const KEY_32_PATTERN = base64urlPattern(32);
/** 16 bytes: the Argon2id salt in KdfParams. */
export const KDF_SALT_PATTERN = base64urlPattern(16);
/** 80 bytes: a grant's sealed_key (32-byte key sealed with crypto_box_seal). */
export const SEALED_KEY_PATTERN = base64urlPattern(80);
/** 64 bytes: a grant's Ed25519 signature. */
export const SIGNATURE_PATTERN = base64urlPattern(64);
