import type { KeyPair } from '../crypto/index.js';

/** A member's key pairs (from `logIn`) or a token's (from `tokenKeysFromKeyPart`). */
export interface VaultKeys {
  encryption: KeyPair;
  signing: KeyPair;
}
