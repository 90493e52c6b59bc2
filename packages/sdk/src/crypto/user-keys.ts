import { encodeParts, fromBase64url, toBase64url } from './encoding.js';
import { CryptoError } from './errors.js';
import { randomBytes, sodium } from './sodium.js';

export interface KeyPair {
  publicKey: Uint8Array;
  secretKey: Uint8Array;
}

/** A user's long-term keys: X25519 to receive grants, Ed25519 to sign grants. */
export interface UserKeys {
  encryption: KeyPair;
  signing: KeyPair;
}

/** Which key wraps the private keys: the password wrap key or the recovery wrap key. */
export type WrapContext = 'password' | 'recovery';

const NONCE_BYTES = 24;
const X25519_SECRET_BYTES = 32;
const ED25519_SECRET_BYTES = 64;

/** `v1.<nonce: 24 bytes>.<ciphertext: 96 + 16 bytes>`, base64url. */
export const WRAPPED_PRIVATE_KEYS_PATTERN = /^v1\.([A-Za-z0-9_-]{32})\.([A-Za-z0-9_-]{150})$/;

export function generateUserKeys(): UserKeys {
  const lib = sodium();
  const box = lib.crypto_box_keypair();
  const sign = lib.crypto_sign_keypair();
  return {
    encryption: { publicKey: box.publicKey, secretKey: box.privateKey },
    signing: { publicKey: sign.publicKey, secretKey: sign.privateKey },
  };
}

/** Rebuilds the key pairs from the two secret keys (public keys are recomputed). */
export function userKeysFromSecretKeys(
  encryptionSecretKey: Uint8Array,
  signingSecretKey: Uint8Array,
): UserKeys {
  if (
    encryptionSecretKey.length !== X25519_SECRET_BYTES ||
    signingSecretKey.length !== ED25519_SECRET_BYTES
  ) {
    throw new CryptoError('invalid_input', 'wrong secret key length');
  }
  const lib = sodium();
  return {
    encryption: {
      publicKey: lib.crypto_scalarmult_base(encryptionSecretKey),
      secretKey: encryptionSecretKey,
    },
    signing: {
      publicKey: lib.crypto_sign_ed25519_sk_to_pk(signingSecretKey),
      secretKey: signingSecretKey,
    },
  };
}

function checkWrapInputs(wrapKey: Uint8Array, context: WrapContext): void {
  if (!(wrapKey instanceof Uint8Array) || wrapKey.length !== 32) {
    throw new CryptoError('invalid_input', 'wrap key must be 32 bytes');
  }
  if (context !== 'password' && context !== 'recovery') {
    throw new CryptoError('invalid_input', "context must be 'password' or 'recovery'");
  }
}

function wrapAssociatedData(context: WrapContext): Uint8Array {
  return encodeParts(['coffer/v1/user-private-keys', context]);
}

/**
 * Encrypts X25519 secret (32 bytes) ‖ Ed25519 secret (64 bytes) with
 * XChaCha20-Poly1305 under the wrap key. `options.nonce` exists for test vectors.
 */
export function wrapPrivateKeys(
  keys: UserKeys,
  wrapKey: Uint8Array,
  context: WrapContext,
  options: { nonce?: Uint8Array } = {},
): string {
  checkWrapInputs(wrapKey, context);
  const { secretKey: boxSecret } = keys.encryption;
  const { secretKey: signSecret } = keys.signing;
  if (boxSecret.length !== X25519_SECRET_BYTES || signSecret.length !== ED25519_SECRET_BYTES) {
    throw new CryptoError('invalid_input', 'wrong secret key length');
  }
  const nonce = options.nonce ?? randomBytes(NONCE_BYTES);
  if (nonce.length !== NONCE_BYTES)
    throw new CryptoError('invalid_input', 'nonce must be 24 bytes');
  const lib = sodium();
  const plaintext = new Uint8Array(X25519_SECRET_BYTES + ED25519_SECRET_BYTES);
  plaintext.set(boxSecret, 0);
  plaintext.set(signSecret, X25519_SECRET_BYTES);
  try {
    const ciphertext = lib.crypto_aead_xchacha20poly1305_ietf_encrypt(
      plaintext,
      wrapAssociatedData(context),
      null,
      nonce,
      wrapKey,
    );
    return `v1.${toBase64url(nonce)}.${toBase64url(ciphertext)}`;
  } finally {
    lib.memzero(plaintext);
  }
}

/** Throws `invalid_envelope` when malformed, `decryption_failed` on a wrong key or context. */
export function unwrapPrivateKeys(
  wrapped: string,
  wrapKey: Uint8Array,
  context: WrapContext,
): UserKeys {
  checkWrapInputs(wrapKey, context);
  const match = typeof wrapped === 'string' ? WRAPPED_PRIVATE_KEYS_PATTERN.exec(wrapped) : null;
  if (match === null) throw new CryptoError('invalid_envelope');
  const nonce = fromBase64url(match[1]!, { code: 'invalid_envelope', length: NONCE_BYTES });
  const ciphertext = fromBase64url(match[2]!, { code: 'invalid_envelope' });
  const lib = sodium();
  let plaintext: Uint8Array;
  try {
    plaintext = lib.crypto_aead_xchacha20poly1305_ietf_decrypt(
      null,
      ciphertext,
      wrapAssociatedData(context),
      nonce,
      wrapKey,
    );
  } catch {
    throw new CryptoError('decryption_failed');
  }
  if (plaintext.length !== X25519_SECRET_BYTES + ED25519_SECRET_BYTES) {
    throw new CryptoError('decryption_failed');
  }
  return userKeysFromSecretKeys(
    plaintext.slice(0, X25519_SECRET_BYTES),
    plaintext.slice(X25519_SECRET_BYTES),
  );
}
