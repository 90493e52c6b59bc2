import { CryptoError, type CryptoErrorCode } from './errors.js';
import { sodium } from './sodium.js';

const BASE64URL_CHARSET = /^[A-Za-z0-9_-]*$/;

/** base64url without padding: the encoding of every binary value in API payloads. */
export function toBase64url(bytes: Uint8Array): string {
  const lib = sodium();
  return lib.to_base64(bytes, lib.base64_variants.URLSAFE_NO_PADDING);
}

/**
 * Strict base64url (no padding) decoding: rejects padding, other alphabets and
 * non-canonical trailing bits, so every byte string has exactly one encoding.
 */
export function fromBase64url(
  text: string,
  options: { code?: CryptoErrorCode; length?: number } = {},
): Uint8Array {
  const code = options.code ?? 'invalid_input';
  if (typeof text !== 'string' || !BASE64URL_CHARSET.test(text)) {
    throw new CryptoError(code, 'expected base64url without padding');
  }
  let bytes: Uint8Array;
  try {
    const lib = sodium();
    bytes = lib.from_base64(text, lib.base64_variants.URLSAFE_NO_PADDING);
  } catch (error) {
    if (error instanceof CryptoError) throw error;
    throw new CryptoError(code, 'expected base64url without padding');
  }
  if (options.length !== undefined && bytes.length !== options.length) {
    throw new CryptoError(code, `expected ${options.length} bytes`);
  }
  return bytes;
}

export function utf8Encode(text: string): Uint8Array {
  return sodium().from_string(text);
}

// `ignoreBOM`: a value that starts with U+FEFF keeps it (libsodium's to_string dropped it).
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Fatal UTF-8 decoding: invalid sequences throw instead of becoming U+FFFD. */
export function utf8Decode(bytes: Uint8Array): string {
  return UTF8.decode(bytes);
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * Unambiguous encoding of a tuple: each part as a 4-byte big-endian length
 * followed by its bytes (strings as UTF-8). Used for every HKDF info, AEAD
 * associated data and signed message, so no two contexts can collide.
 */
export function encodeParts(parts: readonly (string | Uint8Array)[]): Uint8Array {
  const encoded = parts.map((part) => {
    if (typeof part === 'string') return utf8Encode(part);
    if (part instanceof Uint8Array) return part;
    throw new CryptoError('invalid_input', 'encodeParts accepts strings and Uint8Arrays');
  });
  const out = new Uint8Array(encoded.reduce((sum, part) => sum + 4 + part.length, 0));
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const part of encoded) {
    view.setUint32(offset, part.length, false);
    out.set(part, offset + 4);
    offset += 4 + part.length;
  }
  return out;
}

export function bytesToHex(bytes: Uint8Array): string {
  return sodium().to_hex(bytes);
}

export function hexToBytes(hex: string): Uint8Array {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(hex)) throw new CryptoError('invalid_input', 'expected hex');
  return sodium().from_hex(hex);
}
