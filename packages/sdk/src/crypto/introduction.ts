import { encodeParts, fromBase64url, toBase64url } from './encoding.js';
import { CryptoError } from './errors.js';
import { publicKeyBytes } from './fingerprint.js';
import { deriveSubkey, hmacSha256 } from './hkdf.js';
import { KEY_32_PATTERN } from './patterns.js';
import { randomBytes, sodium } from './sodium.js';
import { assertEpoch, assertId, assertKey } from './vault.js';

// Verified introductions. The inviter's client makes a 32-byte secret k and
// hands it to the invitee through a channel of the inviter's choosing (the
// fragment of the introduction link, which browsers never send to a server).
// The invitee proves possession of k over its own public keys when it accepts;
// any admin opens k (sealed under a key derived from the project key) and checks
// the proof against the keys the server shows before granting.

export const INTRODUCTION_SECRET_BYTES = 32;
const NONCE_BYTES = 24;
const MAC_BYTES = 32;

/** `v1.<epoch>.<nonce: 24 bytes>.<ciphertext: 32 + 16 bytes>` */
export const SEALED_INTRODUCTION_PATTERN =
  /^v1\.([1-9][0-9]{0,9})\.([A-Za-z0-9_-]{32})\.([A-Za-z0-9_-]{64})$/;
/** An HMAC-SHA-256 tag, base64url (32 bytes). */
export const INTRODUCTION_PROOF_PATTERN = KEY_32_PATTERN;

/** A fresh introduction secret (k). */
export function generateIntroductionSecret(): Uint8Array {
  return randomBytes(INTRODUCTION_SECRET_BYTES);
}

export interface IntroducedKeys {
  projectId: string;
  memberId: string;
  userId: string;
  /** X25519, base64url or bytes */
  publicKey: string | Uint8Array;
  /** Ed25519, base64url or bytes */
  signingPublicKey: string | Uint8Array;
}

function proofKey(secret: Uint8Array): Uint8Array {
  assertKey(secret, 'introduction secret');
  return deriveSubkey(secret, ['coffer/v1/introduction']);
}

function proofMessage(label: string, keys: IntroducedKeys): Uint8Array {
  assertId(keys.projectId, 'projectId');
  assertId(keys.memberId, 'memberId');
  assertId(keys.userId, 'userId');
  return encodeParts([
    label,
    keys.projectId,
    keys.memberId,
    keys.userId,
    publicKeyBytes(keys.publicKey),
    publicKeyBytes(keys.signingPublicKey),
  ]);
}

function mac(label: string, secret: Uint8Array, keys: IntroducedKeys): Uint8Array {
  const key = proofKey(secret);
  try {
    return hmacSha256(key, proofMessage(label, keys));
  } finally {
    sodium().memzero(key);
  }
}

function macMatches(label: string, secret: Uint8Array, keys: IntroducedKeys, tag: string): boolean {
  let given: Uint8Array;
  try {
    given = fromBase64url(tag, { length: MAC_BYTES });
  } catch {
    return false;
  }
  return sodium().memcmp(given, mac(label, secret, keys));
}

/**
 * The invitee's proof: HMAC-SHA-256(HKDF(k, ['coffer/v1/introduction']),
 * encodeParts(['coffer/v1/introduction-proof', projectId, memberId, userId,
 * x25519 public key, ed25519 public key])), base64url.
 */
export function introductionProof(secret: Uint8Array, keys: IntroducedKeys): string {
  return toBase64url(mac('coffer/v1/introduction-proof', secret, keys));
}

/** Whether `proof` was made with `secret` over exactly these keys (constant-time compare). */
export function verifyIntroductionProof(
  secret: Uint8Array,
  keys: IntroducedKeys,
  proof: string,
): boolean {
  return macMatches('coffer/v1/introduction-proof', secret, keys, proof);
}

/**
 * The inviter's counterpart, stored with the sealed secret: the same MAC under
 * the label 'coffer/v1/introduction-inviter' over the inviter's own ids and keys
 * (`memberId` is the invitation's). The invitee checks it to pin the inviter's
 * keys as verified when it accepts.
 */
export function inviterProof(secret: Uint8Array, keys: IntroducedKeys): string {
  return toBase64url(mac('coffer/v1/introduction-inviter', secret, keys));
}

export function verifyInviterProof(
  secret: Uint8Array,
  keys: IntroducedKeys,
  proof: string,
): boolean {
  return macMatches('coffer/v1/introduction-inviter', secret, keys, proof);
}

function sealKey(projectKey: Uint8Array, projectId: string, epoch: number): Uint8Array {
  assertKey(projectKey, 'project key');
  assertId(projectId, 'projectId');
  assertEpoch(epoch);
  return deriveSubkey(projectKey, ['coffer/v1/introduction-seal-key', projectId, String(epoch)]);
}

const sealAd = (projectId: string, memberId: string, epoch: number) =>
  encodeParts(['coffer/v1/introduction-secret', projectId, memberId, String(epoch)]);

export interface SealIntroductionInput {
  secret: Uint8Array;
  projectKey: Uint8Array;
  projectId: string;
  memberId: string;
  epoch: number;
}

/**
 * k sealed for the project's admins: XChaCha20-Poly1305 under
 * HKDF(PMK, ['coffer/v1/introduction-seal-key', projectId, epoch]) with
 * AD = encodeParts(['coffer/v1/introduction-secret', projectId, memberId, epoch]).
 * `options.nonce` exists for test vectors.
 */
export function sealIntroductionSecret(
  input: SealIntroductionInput,
  options: { nonce?: Uint8Array } = {},
): string {
  assertKey(input.secret, 'introduction secret');
  assertId(input.memberId, 'memberId');
  const lib = sodium();
  const nonce = options.nonce ?? randomBytes(NONCE_BYTES);
  if (nonce.length !== NONCE_BYTES)
    throw new CryptoError('invalid_input', 'nonce must be 24 bytes');
  const key = sealKey(input.projectKey, input.projectId, input.epoch);
  try {
    const ciphertext = lib.crypto_aead_xchacha20poly1305_ietf_encrypt(
      input.secret,
      sealAd(input.projectId, input.memberId, input.epoch),
      null,
      nonce,
      key,
    );
    return `v1.${input.epoch}.${toBase64url(nonce)}.${toBase64url(ciphertext)}`;
  } finally {
    lib.memzero(key);
  }
}

/** The epoch a sealed introduction secret is sealed under (`invalid_envelope` if malformed). */
export function sealedIntroductionEpoch(sealed: string): number {
  const match = typeof sealed === 'string' ? SEALED_INTRODUCTION_PATTERN.exec(sealed) : null;
  if (!match) throw new CryptoError('invalid_envelope', 'malformed sealed introduction secret');
  return Number(match[1]);
}

/** Opens k; `decryption_failed` under any other project key, project, member or epoch. */
export function openIntroductionSecret(
  sealed: string,
  input: Omit<SealIntroductionInput, 'secret' | 'epoch'>,
): Uint8Array {
  const match = typeof sealed === 'string' ? SEALED_INTRODUCTION_PATTERN.exec(sealed) : null;
  if (!match) throw new CryptoError('invalid_envelope', 'malformed sealed introduction secret');
  const epoch = Number(match[1]);
  const nonce = fromBase64url(match[2]!, { code: 'invalid_envelope', length: NONCE_BYTES });
  const ciphertext = fromBase64url(match[3]!, { code: 'invalid_envelope', length: 48 });
  const lib = sodium();
  const key = sealKey(input.projectKey, input.projectId, epoch);
  try {
    const secret = lib.crypto_aead_xchacha20poly1305_ietf_decrypt(
      null,
      ciphertext,
      sealAd(input.projectId, input.memberId, epoch),
      nonce,
      key,
    );
    if (secret.length !== INTRODUCTION_SECRET_BYTES) throw new Error('length');
    return secret;
  } catch {
    throw new CryptoError('decryption_failed');
  } finally {
    lib.memzero(key);
  }
}
