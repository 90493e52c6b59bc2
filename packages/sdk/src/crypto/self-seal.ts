import { encodeParts, utf8Decode, utf8Encode } from './encoding.js';
import { CryptoError } from './errors.js';
import type { KeyPair } from './user-keys.js';
import { randomBytes, sodium } from './sodium.js';

const KEY_BYTES = 32;
const NONCE_BYTES = 24;

/**
 * Something a client keeps for its own user while it holds no private key
 * (the dashboard's staged changes while it is locked): opaque bytes only the
 * holder of the user's X25519 private key can open. Never sent or stored.
 */
export interface SelfSealed {
  /** A fresh 32-byte key, sealed (crypto_box_seal) to the user's X25519 public key. */
  sealedKey: Uint8Array;
  nonce: Uint8Array;
  /** XChaCha20-Poly1305 of the text under that key; associated data binds the purpose and owner. */
  ciphertext: Uint8Array;
}

function associatedData(purpose: string, owner: string): Uint8Array {
  if (!purpose || !owner) throw new CryptoError('invalid_input', 'purpose and owner are required');
  return encodeParts(['coffer/v1/self-sealed', purpose, owner]);
}

/**
 * Seals `text` to the user's own public key: only the public key is needed,
 * the fresh key is zeroed before returning. `purpose` (e.g. "dashboard staged
 * changes") and `owner` (the user id) are authenticated, so a sealed text
 * opens only for what and whom it was sealed for.
 */
export function sealToSelf(
  publicKey: Uint8Array,
  purpose: string,
  owner: string,
  text: string,
): SelfSealed {
  const lib = sodium();
  const key = randomBytes(KEY_BYTES);
  const plain = utf8Encode(text);
  try {
    const nonce = randomBytes(NONCE_BYTES);
    const ciphertext = lib.crypto_aead_xchacha20poly1305_ietf_encrypt(
      plain,
      associatedData(purpose, owner),
      null,
      nonce,
      key,
    );
    return { sealedKey: lib.crypto_box_seal(key, publicKey), nonce, ciphertext };
  } finally {
    lib.memzero(key);
    lib.memzero(plain);
  }
}

/** Opens what sealToSelf sealed; `decryption_failed` for another key, purpose, owner or altered bytes. */
export function openFromSelf(
  keys: KeyPair,
  purpose: string,
  owner: string,
  sealed: SelfSealed,
): string {
  const lib = sodium();
  let key: Uint8Array;
  try {
    key = lib.crypto_box_seal_open(sealed.sealedKey, keys.publicKey, keys.secretKey);
  } catch {
    throw new CryptoError('decryption_failed', 'not sealed to this key');
  }
  try {
    const plain = lib.crypto_aead_xchacha20poly1305_ietf_decrypt(
      null,
      sealed.ciphertext,
      associatedData(purpose, owner),
      sealed.nonce,
      key,
    );
    try {
      return utf8Decode(plain);
    } finally {
      lib.memzero(plain);
    }
  } catch (error) {
    if (error instanceof CryptoError) throw error;
    throw new CryptoError('decryption_failed', 'sealed text altered or sealed for another purpose');
  } finally {
    lib.memzero(key);
  }
}
