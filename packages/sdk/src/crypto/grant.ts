import { concatBytes, encodeParts, fromBase64url, toBase64url } from './encoding.js';
import { CryptoError } from './errors.js';
import { publicKeyBytes } from './fingerprint.js';
import { sodium } from './sodium.js';
import { assertEpoch, assertId, assertKey } from './vault.js';

export type GrantKind = 'project_key' | 'environment_key';

/** A key sealed to one recipient and signed by the granter (API shape, snake_case). */
export interface Grant {
  kind: GrantKind;
  project_id: string;
  epoch: number;
  /** set for 'environment_key', null for 'project_key' */
  environment_id: string | null;
  recipient_id: string;
  /** base64url of crypto_box_seal(key, recipient X25519 public key) */
  sealed_key: string;
  granter_id: string;
  /** base64url Ed25519 detached signature */
  signature: string;
}

export interface CreateGrantInput {
  key: Uint8Array;
  kind: GrantKind;
  projectId: string;
  epoch: number;
  environmentId?: string | null;
  recipientId: string;
  /** X25519, base64url (or bytes) */
  recipientPublicKey: string | Uint8Array;
  granterId: string;
  /** Ed25519, 64 bytes */
  granterSigningSecretKey: Uint8Array;
}

export interface GrantExpectation {
  projectId: string;
  epoch: number;
  kind: GrantKind;
  environmentId?: string | null;
  recipientId: string;
}

export interface OpenGrantOptions {
  recipientPublicKey: string | Uint8Array;
  recipientSecretKey: Uint8Array;
  /** Must come from a source the client trusts (fingerprint-verified), not just the server. */
  granterSigningPublicKey: string | Uint8Array;
  expected: GrantExpectation;
}

const SEALED_KEY_BYTES = 32 + 48; // key + crypto_box_SEALBYTES
const SIGNATURE_BYTES = 64;

function checkKindAndEnvironment(kind: GrantKind, environmentId: string | null): void {
  if (kind === 'project_key') {
    if (environmentId !== null) {
      throw new CryptoError('invalid_input', 'a project_key grant has no environment');
    }
  } else if (kind === 'environment_key') {
    assertId(environmentId as string, 'environmentId');
  } else {
    throw new CryptoError('invalid_input', 'unknown grant kind');
  }
}

function grantMessage(
  grant: Omit<Grant, 'signature' | 'sealed_key'>,
  recipientPublicKey: Uint8Array,
  sealedKey: Uint8Array,
): Uint8Array {
  return encodeParts([
    'coffer/v1/grant',
    grant.kind,
    grant.project_id,
    String(grant.epoch),
    grant.environment_id ?? '',
    grant.recipient_id,
    recipientPublicKey,
    sealedKey,
    grant.granter_id,
  ]);
}

/**
 * crypto_box_seal. With `ephemeralSeed` (test vectors only) the same sealed box
 * is built from libsodium primitives with a deterministic ephemeral key pair:
 * epk ‖ crypto_box(m, nonce = BLAKE2b-192(epk ‖ pk), pk, esk), exactly as
 * libsodium's crypto_box_seal does, so crypto_box_seal_open opens both.
 */
function seal(
  message: Uint8Array,
  recipientPublicKey: Uint8Array,
  ephemeralSeed?: Uint8Array,
): Uint8Array {
  const lib = sodium();
  if (ephemeralSeed === undefined) return lib.crypto_box_seal(message, recipientPublicKey);
  const ephemeral = lib.crypto_box_seed_keypair(ephemeralSeed);
  const nonce = lib.crypto_generichash(
    lib.crypto_box_NONCEBYTES,
    concatBytes(ephemeral.publicKey, recipientPublicKey),
    null,
  );
  const boxed = lib.crypto_box_easy(message, nonce, recipientPublicKey, ephemeral.privateKey);
  lib.memzero(ephemeral.privateKey);
  return concatBytes(ephemeral.publicKey, boxed);
}

/** Seals `key` to the recipient and signs the whole binding with the granter's Ed25519 key. */
export function createGrant(
  input: CreateGrantInput,
  options: { ephemeralSeed?: Uint8Array } = {},
): Grant {
  assertKey(input.key, 'key');
  assertId(input.projectId, 'projectId');
  assertEpoch(input.epoch);
  assertId(input.recipientId, 'recipientId');
  assertId(input.granterId, 'granterId');
  const environmentId = input.environmentId ?? null;
  checkKindAndEnvironment(input.kind, environmentId);
  const recipientPublicKey = publicKeyBytes(input.recipientPublicKey);
  if (
    !(input.granterSigningSecretKey instanceof Uint8Array) ||
    input.granterSigningSecretKey.length !== 64
  ) {
    throw new CryptoError('invalid_input', 'granter signing secret key must be 64 bytes');
  }
  const sealedKey = seal(input.key, recipientPublicKey, options.ephemeralSeed);
  const unsigned = {
    kind: input.kind,
    project_id: input.projectId,
    epoch: input.epoch,
    environment_id: environmentId,
    recipient_id: input.recipientId,
    granter_id: input.granterId,
  };
  const signature = sodium().crypto_sign_detached(
    grantMessage(unsigned, recipientPublicKey, sealedKey),
    input.granterSigningSecretKey,
  );
  return {
    kind: unsigned.kind,
    project_id: unsigned.project_id,
    epoch: unsigned.epoch,
    environment_id: unsigned.environment_id,
    recipient_id: unsigned.recipient_id,
    sealed_key: toBase64url(sealedKey),
    granter_id: unsigned.granter_id,
    signature: toBase64url(signature),
  };
}

function parseGrant(grant: Grant): { sealedKey: Uint8Array; signature: Uint8Array } {
  if (
    typeof grant !== 'object' ||
    grant === null ||
    (grant.kind !== 'project_key' && grant.kind !== 'environment_key') ||
    typeof grant.project_id !== 'string' ||
    !Number.isSafeInteger(grant.epoch) ||
    grant.epoch < 1 ||
    (grant.environment_id !== null && typeof grant.environment_id !== 'string') ||
    typeof grant.recipient_id !== 'string' ||
    typeof grant.granter_id !== 'string' ||
    // environment_id is signed as '' when null, so '' must not be accepted as a value.
    (grant.kind === 'project_key') !== (grant.environment_id === null) ||
    grant.environment_id === ''
  ) {
    throw new CryptoError('invalid_grant');
  }
  return {
    sealedKey: fromBase64url(grant.sealed_key, { code: 'invalid_grant', length: SEALED_KEY_BYTES }),
    signature: fromBase64url(grant.signature, { code: 'invalid_grant', length: SIGNATURE_BYTES }),
  };
}

/**
 * Checks the granter's signature over the grant as addressed to
 * `recipientPublicKey`. Usable by anyone (the server included); it proves
 * who made the grant, not that the granter may grant.
 */
export function verifyGrantSignature(
  grant: Grant,
  keys: { recipientPublicKey: string | Uint8Array; granterSigningPublicKey: string | Uint8Array },
): boolean {
  const { sealedKey, signature } = parseGrant(grant);
  return sodium().crypto_sign_verify_detached(
    signature,
    grantMessage(grant, publicKeyBytes(keys.recipientPublicKey), sealedKey),
    publicKeyBytes(keys.granterSigningPublicKey),
  );
}

/**
 * Verifies the signature first (`invalid_signature`), then that the grant is
 * bound to what the caller expects (`grant_mismatch`), then opens the sealed
 * key (`decryption_failed`). Returns the 32-byte key.
 */
export function openGrant(grant: Grant, options: OpenGrantOptions): Uint8Array {
  const recipientPublicKey = publicKeyBytes(options.recipientPublicKey);
  const granterSigningPublicKey = publicKeyBytes(options.granterSigningPublicKey);
  if (
    !(options.recipientSecretKey instanceof Uint8Array) ||
    options.recipientSecretKey.length !== 32
  ) {
    throw new CryptoError('invalid_input', 'recipient secret key must be 32 bytes');
  }
  const { sealedKey } = parseGrant(grant);
  if (!verifyGrantSignature(grant, { recipientPublicKey, granterSigningPublicKey })) {
    throw new CryptoError('invalid_signature');
  }
  const { expected } = options;
  if (
    grant.kind !== expected.kind ||
    grant.project_id !== expected.projectId ||
    grant.epoch !== expected.epoch ||
    grant.environment_id !== (expected.environmentId ?? null) ||
    grant.recipient_id !== expected.recipientId
  ) {
    throw new CryptoError('grant_mismatch');
  }
  let key: Uint8Array;
  try {
    key = sodium().crypto_box_seal_open(sealedKey, recipientPublicKey, options.recipientSecretKey);
  } catch {
    throw new CryptoError('decryption_failed');
  }
  if (key.length !== 32) throw new CryptoError('decryption_failed');
  return key;
}
