import { fromBase64url, toBase64url, utf8Encode } from './encoding.js';
import { CryptoError } from './errors.js';
import { deriveSubkey } from './hkdf.js';
import { randomBytes, sodium } from './sodium.js';

/** Argon2id parameters; the server stores them per user and returns them from prelogin. */
export interface KdfParams {
  algorithm: 'argon2id';
  ops_limit: number;
  mem_limit_kib: number;
  /** base64url, 16 bytes */
  salt: string;
}

export const KDF_SALT_BYTES = 16;

export const DEFAULT_KDF_PARAMS = Object.freeze({
  algorithm: 'argon2id',
  ops_limit: 3,
  mem_limit_kib: 65536,
} as const);

/**
 * The weakest parameters a client accepts from a server at login (OWASP's
 * Argon2id floor: t=2, m=19 MiB). A server that lowers a user's parameters
 * would otherwise get an auth key that is cheap to brute-force.
 */
export const MIN_KDF_PARAMS = Object.freeze({ ops_limit: 2, mem_limit_kib: 19456 } as const);

/** Upper bounds, so a hostile server cannot make the client hang or run out of memory. */
export const MAX_KDF_PARAMS = Object.freeze({ ops_limit: 16, mem_limit_kib: 1048576 } as const);

/** Checks the shape and libsodium's bounds; does not judge strength (see assertKdfParamsStrength). */
export function validateKdfParams(params: KdfParams): void {
  if (typeof params !== 'object' || params === null || params.algorithm !== 'argon2id') {
    throw new CryptoError('invalid_kdf_params', 'unsupported KDF algorithm');
  }
  const { ops_limit: ops, mem_limit_kib: mem } = params;
  if (!Number.isInteger(ops) || ops < 1 || ops > MAX_KDF_PARAMS.ops_limit) {
    throw new CryptoError('invalid_kdf_params', 'ops_limit out of range');
  }
  // libsodium's Argon2id needs at least 8 KiB.
  if (!Number.isInteger(mem) || mem < 8 || mem > MAX_KDF_PARAMS.mem_limit_kib) {
    throw new CryptoError('invalid_kdf_params', 'mem_limit_kib out of range');
  }
  fromBase64url(params.salt, { code: 'invalid_kdf_params', length: KDF_SALT_BYTES });
}

/** Throws `weak_kdf_params` when parameters (e.g. from prelogin) are below the minimum. */
export function assertKdfParamsStrength(
  params: KdfParams,
  minimum: { ops_limit: number; mem_limit_kib: number } = MIN_KDF_PARAMS,
): void {
  validateKdfParams(params);
  if (params.ops_limit < minimum.ops_limit || params.mem_limit_kib < minimum.mem_limit_kib) {
    throw new CryptoError('weak_kdf_params');
  }
}

/** New parameters with a fresh random salt; overrides are validated. */
export function generateKdfParams(overrides: Partial<KdfParams> = {}): KdfParams {
  const params: KdfParams = {
    ...DEFAULT_KDF_PARAMS,
    salt: toBase64url(randomBytes(KDF_SALT_BYTES)),
    ...overrides,
  };
  validateKdfParams(params);
  return params;
}

/** Argon2id(NFC(password), salt) → 32-byte master key. Slow by design; blocks the thread. */
export function deriveMasterKey(password: string, params: KdfParams): Uint8Array {
  if (typeof password !== 'string')
    throw new CryptoError('invalid_input', 'password must be a string');
  validateKdfParams(params);
  const lib = sodium();
  const salt = fromBase64url(params.salt, { code: 'invalid_kdf_params', length: KDF_SALT_BYTES });
  const passwordBytes = utf8Encode(password.normalize('NFC'));
  try {
    return lib.crypto_pwhash(
      32,
      passwordBytes,
      salt,
      params.ops_limit,
      params.mem_limit_kib * 1024,
      lib.crypto_pwhash_ALG_ARGON2ID13,
    );
  } finally {
    lib.memzero(passwordBytes);
  }
}

export interface PasswordKeys {
  /** base64url; sent to the server, which stores only a hash of it. */
  authKey: string;
  /** 32 bytes; never leaves the client; wraps the user's private keys. */
  wrapKey: Uint8Array;
}

export function passwordKeysFromMasterKey(masterKey: Uint8Array): PasswordKeys {
  const authKey = deriveSubkey(masterKey, ['coffer/v1/auth-key']);
  const wrapKey = deriveSubkey(masterKey, ['coffer/v1/wrap-key']);
  const encoded = toBase64url(authKey);
  sodium().memzero(authKey);
  return { authKey: encoded, wrapKey };
}

export function derivePasswordKeys(password: string, params: KdfParams): PasswordKeys {
  const masterKey = deriveMasterKey(password, params);
  try {
    return passwordKeysFromMasterKey(masterKey);
  } finally {
    sodium().memzero(masterKey);
  }
}
