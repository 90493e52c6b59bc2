import { toBase64url } from './encoding.js';
import { deriveSubkey } from './hkdf.js';
import { sodium } from './sodium.js';
import { decodeKeyPart, tokenKeyPairFromKeyPart } from './token.js';
import type { KeyPair } from './user-keys.js';

/**
 * The token's Ed25519 key pair, so an API key can sign the grants it makes when
 * it mints a CI token. Its seed is HKDF(key part, 'coffer/v1/token-signing-key'),
 * not the key part itself: the X25519 pair already uses the raw seed, and one
 * seed must never feed two algorithms directly.
 */
export function tokenSigningKeyPairFromKeyPart(keyPart: string): KeyPair {
  const { seed } = decodeKeyPart(keyPart);
  const lib = sodium();
  const signingSeed = deriveSubkey(seed, ['coffer/v1/token-signing-key']);
  try {
    const pair = lib.crypto_sign_seed_keypair(signingSeed);
    return { publicKey: pair.publicKey, secretKey: pair.privateKey };
  } finally {
    lib.memzero(seed);
    lib.memzero(signingSeed);
  }
}

/** Both key pairs of a token and their public halves as the API carries them (base64url). */
export interface TokenKeys {
  encryption: KeyPair;
  signing: KeyPair;
  publicKey: string;
  signingPublicKey: string;
}

export function tokenKeysFromKeyPart(keyPart: string): TokenKeys {
  const encryption = tokenKeyPairFromKeyPart(keyPart);
  const signing = tokenSigningKeyPairFromKeyPart(keyPart);
  return {
    encryption,
    signing,
    publicKey: toBase64url(encryption.publicKey),
    signingPublicKey: toBase64url(signing.publicKey),
  };
}
