import { encodeParts, fromBase64url, toBase64url } from './encoding.js';
import { CryptoError } from './errors.js';
import { publicKeyBytes } from './fingerprint.js';
import { sodium } from './sodium.js';

// The keys a user has accepted for the people they deal with, as one document
// signed by the user's own Ed25519 key and stored on the server (so the pins
// travel with the account). The server can withhold or roll it back (clients
// remember the highest version they saw) but cannot alter it.

export type KeyPinStatus = 'tofu' | 'verified';

export interface KeyPin {
  user_id: string;
  /** The e-mail address shown when the key was pinned (for messages). */
  email: string;
  /** X25519, base64url */
  public_key: string;
  /** Ed25519, base64url */
  signing_public_key: string;
  /** `tofu`: accepted on first use; `verified`: fingerprint compared or introduction verified. */
  status: KeyPinStatus;
  /** ISO timestamp of when the pin was set. */
  at: string;
}

/**
 * A project's membership chain as the owner last saw it: its root (the
 * project's identity, pinned at first sight) and the link hash at `seq`, which
 * every later view of the chain must still hold (no rollback, no fork).
 */
export interface ProjectPin {
  project_id: string;
  /** Link hash of the chain's root, base64url. */
  root: string;
  /** Position of the last statement seen. */
  seq: number;
  /** Link hash of that statement, base64url. */
  head: string;
  /** ISO timestamp of when the root was pinned. */
  at: string;
}

export interface KeyPinsDocument {
  /** The owner: whose key signs the document. */
  user_id: string;
  /** Grows by at least 1 with every change; the server refuses one that does not. */
  version: number;
  /** Sorted by user_id, one per user. */
  pins: KeyPin[];
  /** Sorted by project_id, one per project. Absent (or empty) in documents without any. */
  projects?: ProjectPin[];
}

export interface SignedKeyPins {
  document: KeyPinsDocument;
  /** Ed25519 over `keyPinsMessage(document)`, base64url */
  signature: string;
}

const MAX_PINS = 10_000;

function checkDocument(document: KeyPinsDocument, code: 'invalid_input' | 'invalid_signature') {
  const bad = (why: string) => new CryptoError(code, `malformed key pins document: ${why}`);
  if (typeof document !== 'object' || document === null) throw bad('not an object');
  if (typeof document.user_id !== 'string' || document.user_id === '') throw bad('user_id');
  if (!Number.isSafeInteger(document.version) || document.version < 1) throw bad('version');
  if (!Array.isArray(document.pins) || document.pins.length > MAX_PINS) throw bad('pins');
  let previous = '';
  for (const pin of document.pins) {
    if (typeof pin !== 'object' || pin === null) throw bad('pin');
    if (typeof pin.user_id !== 'string' || pin.user_id === '') throw bad('pin user_id');
    if (pin.user_id <= previous) throw bad('pins must be sorted by user_id, one per user');
    previous = pin.user_id;
    if (typeof pin.email !== 'string') throw bad('pin email');
    if (pin.status !== 'tofu' && pin.status !== 'verified') throw bad('pin status');
    if (typeof pin.at !== 'string') throw bad('pin at');
    publicKeyBytes(pin.public_key, code);
    publicKeyBytes(pin.signing_public_key, code);
  }
  if (document.projects === undefined) return;
  if (!Array.isArray(document.projects) || document.projects.length > MAX_PINS) {
    throw bad('projects');
  }
  previous = '';
  for (const project of document.projects) {
    if (typeof project !== 'object' || project === null) throw bad('project pin');
    if (typeof project.project_id !== 'string' || project.project_id <= previous) {
      throw bad('project pins must be sorted by project_id, one per project');
    }
    previous = project.project_id;
    if (!Number.isSafeInteger(project.seq) || project.seq < 0) throw bad('project seq');
    if (typeof project.at !== 'string') throw bad('project at');
    fromBase64url(project.root, { code, length: 32 });
    fromBase64url(project.head, { code, length: 32 });
  }
}

/**
 * What is signed: encodeParts(['coffer/v1/key-pins', user_id, version, count,
 * then per pin: user_id, email, x25519 (32 raw bytes), ed25519 (32 raw bytes), status, at,
 * and, only when there are project pins: 'projects', count, then per project:
 * project_id, root (32 raw bytes), seq, head (32 raw bytes), at]).
 */
export function keyPinsMessage(document: KeyPinsDocument): Uint8Array {
  checkDocument(document, 'invalid_input');
  return encodeParts([
    'coffer/v1/key-pins',
    document.user_id,
    String(document.version),
    String(document.pins.length),
    ...document.pins.flatMap((pin) => [
      pin.user_id,
      pin.email,
      publicKeyBytes(pin.public_key),
      publicKeyBytes(pin.signing_public_key),
      pin.status,
      pin.at,
    ]),
    ...(document.projects?.length
      ? [
          'projects',
          String(document.projects.length),
          ...document.projects.flatMap((p) => [
            p.project_id,
            fromBase64url(p.root, { length: 32 }),
            String(p.seq),
            fromBase64url(p.head, { length: 32 }),
            p.at,
          ]),
        ]
      : []),
  ]);
}

/** Sorts the pins by user id and signs the document with the owner's Ed25519 secret key. */
export function signKeyPins(
  document: KeyPinsDocument,
  signingSecretKey: Uint8Array,
): SignedKeyPins {
  if (!(signingSecretKey instanceof Uint8Array) || signingSecretKey.length !== 64) {
    throw new CryptoError('invalid_input', 'signing secret key must be 64 bytes');
  }
  const sorted: KeyPinsDocument = {
    user_id: document.user_id,
    version: document.version,
    pins: [...document.pins]
      .sort((a, b) => (a.user_id < b.user_id ? -1 : a.user_id > b.user_id ? 1 : 0))
      .map((p) => ({
        user_id: p.user_id,
        email: p.email,
        public_key: p.public_key,
        signing_public_key: p.signing_public_key,
        status: p.status,
        at: p.at,
      })),
    ...(document.projects?.length
      ? {
          projects: [...document.projects]
            .sort((a, b) =>
              a.project_id < b.project_id ? -1 : a.project_id > b.project_id ? 1 : 0,
            )
            .map((p) => ({
              project_id: p.project_id,
              root: p.root,
              seq: p.seq,
              head: p.head,
              at: p.at,
            })),
        }
      : {}),
  };
  const signature = sodium().crypto_sign_detached(keyPinsMessage(sorted), signingSecretKey);
  return { document: sorted, signature: toBase64url(signature) };
}

/**
 * Checks a signed document against the owner's Ed25519 public key (which the
 * client must know on its own, not from the server). Throws
 * `invalid_signature` for a malformed document or a signature that fails.
 */
export function verifyKeyPins(
  signed: SignedKeyPins,
  ownerSigningPublicKey: string | Uint8Array,
): KeyPinsDocument {
  if (typeof signed !== 'object' || signed === null) throw new CryptoError('invalid_signature');
  checkDocument(signed.document, 'invalid_signature');
  const signature = fromBase64url(signed.signature, { code: 'invalid_signature', length: 64 });
  const ok = sodium().crypto_sign_verify_detached(
    signature,
    keyPinsMessage(signed.document),
    publicKeyBytes(ownerSigningPublicKey),
  );
  if (!ok)
    throw new CryptoError('invalid_signature', 'the key pins document is not signed by its owner');
  return signed.document;
}
