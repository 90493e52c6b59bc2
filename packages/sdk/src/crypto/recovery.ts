import { concatBytes, toBase64url } from './encoding.js';
import { CryptoError } from './errors.js';
import { deriveSubkey } from './hkdf.js';
import { randomBytes, sodium } from './sodium.js';

export const RECOVERY_KEY_BYTES = 32;
const CHECKSUM_BYTES = 2;
const PREFIX = 'CRK';
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** 34 bytes = 272 bits → 55 base32 characters (the last carries 2 bits + 3 zero bits). */
const ENCODED_LENGTH = Math.ceil(((RECOVERY_KEY_BYTES + CHECKSUM_BYTES) * 8) / 5);

const DECODE: ReadonlyMap<string, number> = new Map([
  ...[...CROCKFORD].map((char, value) => [char, value] as const),
  // Crockford's decoding aliases for characters easily confused when copied by hand.
  ['O', 0],
  ['I', 1],
  ['L', 1],
]);

/** First 2 bytes of BLAKE2b-256(key); libsodium's BLAKE2b has a 16-byte minimum output. */
function checksum(key: Uint8Array): Uint8Array {
  return sodium().crypto_generichash(32, key, null).slice(0, CHECKSUM_BYTES);
}

function base32Encode(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += CROCKFORD[(buffer >> bits) & 31];
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += CROCKFORD[(buffer << (5 - bits)) & 31];
  return out;
}

function base32Decode(text: string): Uint8Array {
  const out = new Uint8Array(Math.floor((text.length * 5) / 8));
  let buffer = 0;
  let bits = 0;
  let index = 0;
  for (const char of text) {
    const value = DECODE.get(char);
    if (value === undefined) throw new CryptoError('invalid_recovery_key');
    buffer = (buffer << 5) | value;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out[index++] = (buffer >> bits) & 0xff;
    }
    buffer &= (1 << bits) - 1;
  }
  // Leftover bits must be zero, so each key has exactly one spelling.
  if (buffer !== 0) throw new CryptoError('invalid_recovery_key');
  return out;
}

/** `CRK-` + Crockford base32(key ‖ checksum) in dash-separated groups of 4. */
export function formatRecoveryKey(key: Uint8Array): string {
  if (!(key instanceof Uint8Array) || key.length !== RECOVERY_KEY_BYTES) {
    throw new CryptoError('invalid_input', 'recovery key must be 32 bytes');
  }
  const encoded = base32Encode(concatBytes(key, checksum(key)));
  return [PREFIX, ...(encoded.match(/.{1,4}/g) ?? [])].join('-');
}

export function generateRecoveryKey(): { bytes: Uint8Array; text: string } {
  const bytes = randomBytes(RECOVERY_KEY_BYTES);
  return { bytes, text: formatRecoveryKey(bytes) };
}

/**
 * Parses a recovery key as typed by a user: case-insensitive, ignores spaces
 * and dashes, the `CRK` prefix is optional, O/I/L read as 0/1/1.
 */
export function parseRecoveryKey(text: string): Uint8Array {
  if (typeof text !== 'string') throw new CryptoError('invalid_recovery_key');
  let compact = text.replace(/[\s-]+/g, '').toUpperCase();
  if (compact.length === PREFIX.length + ENCODED_LENGTH && compact.startsWith(PREFIX)) {
    compact = compact.slice(PREFIX.length);
  }
  if (compact.length !== ENCODED_LENGTH) throw new CryptoError('invalid_recovery_key');
  const decoded = base32Decode(compact);
  const key = decoded.slice(0, RECOVERY_KEY_BYTES);
  if (sodium().compare(decoded.slice(RECOVERY_KEY_BYTES), checksum(key)) !== 0) {
    throw new CryptoError('invalid_recovery_key', 'recovery key checksum does not match');
  }
  return key;
}

export interface RecoveryKeys {
  /** base64url; sent to the server, which stores only a hash of it. */
  authKey: string;
  /** 32 bytes; wraps the user's private keys (context 'recovery'). */
  wrapKey: Uint8Array;
}

export function deriveRecoveryKeys(recoveryKey: Uint8Array): RecoveryKeys {
  if (!(recoveryKey instanceof Uint8Array) || recoveryKey.length !== RECOVERY_KEY_BYTES) {
    throw new CryptoError('invalid_input', 'recovery key must be 32 bytes');
  }
  const authKey = deriveSubkey(recoveryKey, ['coffer/v1/recovery-auth-key']);
  const encoded = toBase64url(authKey);
  sodium().memzero(authKey);
  return { authKey: encoded, wrapKey: deriveSubkey(recoveryKey, ['coffer/v1/recovery-wrap-key']) };
}
