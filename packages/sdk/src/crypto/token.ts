import { fromBase64url, toBase64url, utf8Encode } from './encoding.js';
import { CryptoError } from './errors.js';
import type { KeyPair } from './user-keys.js';
import { randomBytes, sodium } from './sodium.js';

/** Bearer prefixes: `cek_` for API keys, `ci_` for CI tokens. */
export const TOKEN_PREFIXES = Object.freeze({ apiKey: 'cek_', ci: 'ci_' } as const);
export type TokenPrefix = (typeof TOKEN_PREFIXES)[keyof typeof TOKEN_PREFIXES];

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_CHARS = 30;
const CHECKSUM_CHARS = 6;
const KEY_PART_BYTES = 32;

/** Shape of a bearer token (checksum not included; use isWellFormedBearer). */
export const BEARER_PATTERN = /^(?:cek_|ci_)[0-9A-Za-z]{36}$/;

let crcTable: Uint32Array | undefined;

/** CRC-32 (IEEE 802.3, reflected, as in zlib). A typo/scanner check, not a security primitive. */
export function crc32(bytes: Uint8Array): number {
  if (crcTable === undefined) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (const byte of bytes) crc = crcTable[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** Base62, most significant digit first, left-padded with '0' to 6 characters. */
function base62Checksum(value: number): string {
  let out = '';
  for (let i = 0; i < CHECKSUM_CHARS; i++) {
    out = BASE62[value % 62]! + out;
    value = Math.floor(value / 62);
  }
  return out;
}

function isTokenPrefix(prefix: string): prefix is TokenPrefix {
  return prefix === TOKEN_PREFIXES.apiKey || prefix === TOKEN_PREFIXES.ci;
}

/** prefix + body (30 base62 characters) + base62(CRC-32(prefix + body)). */
export function composeBearer(prefix: TokenPrefix, body: string): string {
  if (!isTokenPrefix(prefix)) throw new CryptoError('invalid_input', 'unknown token prefix');
  if (!/^[0-9A-Za-z]{30}$/.test(body)) {
    throw new CryptoError('invalid_input', 'bearer body must be 30 base62 characters');
  }
  return prefix + body + base62Checksum(crc32(utf8Encode(prefix + body)));
}

export function generateBearer(prefix: TokenPrefix): string {
  const lib = sodium();
  let body = '';
  for (let i = 0; i < RANDOM_CHARS; i++) body += BASE62[lib.randombytes_uniform(62)];
  return composeBearer(prefix, body);
}

/** Checks prefix, charset, length and checksum. Says nothing about validity on a server. */
export function isWellFormedBearer(token: string): boolean {
  if (typeof token !== 'string' || !BEARER_PATTERN.test(token)) return false;
  const prefix = token.startsWith(TOKEN_PREFIXES.ci) ? TOKEN_PREFIXES.ci : TOKEN_PREFIXES.apiKey;
  const body = token.slice(prefix.length, prefix.length + RANDOM_CHARS);
  return composeBearer(prefix, body) === token;
}

/** The version byte of a key part that names its creator's signing key. */
const KEY_PART_V2 = 2;
const KEY_PART_V2_BYTES = 1 + KEY_PART_BYTES + 32;
const KEY_PART_V3 = 0x03;
const KEY_PART_V3_BYTES = KEY_PART_V2_BYTES + 32;

/** What a token's key part holds. */
export interface KeyPartContents {
  /**
   * 1: the bare 32-byte seed (older credentials); 2: the seed and the creator's
   * signing key; 3: those and the root of the project's membership chain.
   */
  version: 1 | 2 | 3;
  /** The 32-byte seed of the token's key pairs (a copy: erase it after use). */
  seed: Uint8Array;
  /**
   * Version 2: the Ed25519 public key (base64url) of whoever created the token,
   * the only key whose grants the token's client accepts. Null for version 1.
   */
  creatorSigningPublicKey: string | null;
  /**
   * Version 3: the link hash (base64url) of the root of the project's
   * membership chain as the creator verified it. The token then accepts grants
   * signed by any admin of that chain. Null for versions 1 and 2.
   */
  chainRoot: string | null;
}

/**
 * Decodes a key part: version 1 is base64url of the 32-byte seed (43
 * characters); version 2 is base64url of `0x02 ‖ seed (32) ‖ creator Ed25519
 * public key (32)` (87 characters). Throws `invalid_credential` otherwise.
 */
export function decodeKeyPart(keyPart: string): KeyPartContents {
  const bytes = fromBase64url(keyPart, { code: 'invalid_credential' });
  if (bytes.length === KEY_PART_BYTES) {
    return { version: 1, seed: bytes, creatorSigningPublicKey: null, chainRoot: null };
  }
  const v2 = bytes.length === KEY_PART_V2_BYTES && bytes[0] === KEY_PART_V2;
  const v3 = bytes.length === KEY_PART_V3_BYTES && bytes[0] === KEY_PART_V3;
  if (v2 || v3) {
    const seed = bytes.slice(1, 1 + KEY_PART_BYTES);
    const creatorSigningPublicKey = toBase64url(bytes.slice(1 + KEY_PART_BYTES, KEY_PART_V2_BYTES));
    const chainRoot = v3 ? toBase64url(bytes.slice(KEY_PART_V2_BYTES)) : null;
    sodium().memzero(bytes);
    return { version: v3 ? 3 : 2, seed, creatorSigningPublicKey, chainRoot };
  }
  throw new CryptoError('invalid_credential', 'unknown key part format');
}

/**
 * A version 2 key part (the token's seed bound to its creator's Ed25519 public
 * key), or with `chainRoot` version 3 (bound to the project's membership chain
 * too): base64url of `0x03 ‖ seed (32) ‖ creator key (32) ‖ root (32)`, 130 characters.
 */
export function encodeKeyPart(
  seed: Uint8Array,
  creatorSigningPublicKey: string | Uint8Array,
  chainRoot?: string | Uint8Array | null,
): string {
  const bytes32 = (v: string | Uint8Array) =>
    typeof v === 'string' ? fromBase64url(v, { length: 32 }) : v;
  const creator = bytes32(creatorSigningPublicKey);
  const root = chainRoot ? bytes32(chainRoot) : null;
  if (
    !(seed instanceof Uint8Array) ||
    seed.length !== KEY_PART_BYTES ||
    creator.length !== 32 ||
    (root !== null && root.length !== 32)
  ) {
    throw new CryptoError('invalid_input', 'a key part takes a 32-byte seed and 32-byte keys');
  }
  const bytes = new Uint8Array(root ? KEY_PART_V3_BYTES : KEY_PART_V2_BYTES);
  bytes[0] = root ? KEY_PART_V3 : KEY_PART_V2;
  bytes.set(seed, 1);
  bytes.set(creator, 1 + KEY_PART_BYTES);
  if (root) bytes.set(root, KEY_PART_V2_BYTES);
  const encoded = toBase64url(bytes);
  sodium().memzero(bytes);
  return encoded;
}

/** The token's X25519 key pair, derived from the 32-byte seed in the key part (either version). */
export function tokenKeyPairFromKeyPart(keyPart: string): KeyPair {
  const { seed } = decodeKeyPart(keyPart);
  const lib = sodium();
  const pair = lib.crypto_box_seed_keypair(seed);
  lib.memzero(seed);
  return { publicKey: pair.publicKey, secretKey: pair.privateKey };
}

export interface TokenCredential {
  /** what the SDK and CLI send as `Authorization: Bearer …` */
  bearer: string;
  /** base64url 32-byte seed; never sent to the server */
  keyPart: string;
  /** `<bearer>.<keyPart>`, shown to the user once */
  credential: string;
  /** X25519 public key (base64url) the server stores and grants are sealed to */
  publicKey: string;
}

export function generateTokenCredential(prefix: TokenPrefix): TokenCredential {
  const bearer = generateBearer(prefix);
  const keyPart = toBase64url(randomBytes(KEY_PART_BYTES));
  const { publicKey } = tokenKeyPairFromKeyPart(keyPart);
  return { bearer, keyPart, credential: `${bearer}.${keyPart}`, publicKey: toBase64url(publicKey) };
}

/**
 * Splits `<bearer>.<keyPart>`; surrounding whitespace is ignored. Throws
 * `invalid_credential`. `creatorSigningPublicKey` is the key a version 2 key
 * part binds (null for version 1): pass it to `openVault` as `granterSigningPublicKey`.
 */
export function parseCredential(credential: string): {
  bearer: string;
  keyPart: string;
  creatorSigningPublicKey: string | null;
  chainRoot: string | null;
} {
  if (typeof credential !== 'string') throw new CryptoError('invalid_credential');
  const parts = credential.trim().split('.');
  if (parts.length !== 2) throw new CryptoError('invalid_credential');
  const [bearer, keyPart] = parts as [string, string];
  if (!isWellFormedBearer(bearer)) throw new CryptoError('invalid_credential');
  const { seed, creatorSigningPublicKey, chainRoot } = decodeKeyPart(keyPart);
  sodium().memzero(seed);
  return { bearer, keyPart, creatorSigningPublicKey, chainRoot };
}

/** Lowercase hex SHA-256 of the bearer (UTF-8): what the server stores and looks up. */
export function hashBearer(bearer: string): string {
  if (typeof bearer !== 'string') throw new CryptoError('invalid_input', 'bearer must be a string');
  const lib = sodium();
  return lib.to_hex(lib.crypto_hash_sha256(utf8Encode(bearer)));
}
