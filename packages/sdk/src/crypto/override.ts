import { encodeParts, fromBase64url, toBase64url } from './encoding.js';
import { MAX_SECRET_VALUE_BYTES, openUtf8, sealUtf8 } from './envelope.js';
import { CryptoError } from './errors.js';
import { hkdfSha256 } from './hkdf.js';
import { randomBytes } from './sodium.js';
import { assertId, assertKey } from './vault.js';

// A personal override: a member's own value for one name in one environment,
// readable by that member alone. It is encrypted under a key only the member's
// X25519 private key yields, and bound to its place and owner, so the server
// can neither read it nor make one up, move it to another name or hand it to
// someone else. No project or environment key is involved: a re-key leaves
// overrides as they are, and no other member, admin or token can open them.

const NONCE_BYTES = 24;
const TAG_BYTES = 16;
const b64len = (bytes: number) => Math.ceil((bytes * 4) / 3);

/** `v1.ov.<nonce: 24 bytes>.<ciphertext>`: shape only (for request schemas, `.source`). */
export const OVERRIDE_ENVELOPE_PATTERN = new RegExp(
  `^v1\\.ov\\.([A-Za-z0-9_-]{${b64len(NONCE_BYTES)}})\\.([A-Za-z0-9_-]{${b64len(TAG_BYTES)},${b64len(MAX_SECRET_VALUE_BYTES + TAG_BYTES)}})$`,
);

/** Longest possible override envelope (for a schema's maxLength). */
export const MAX_OVERRIDE_ENVELOPE_LENGTH =
  'v1.ov.'.length + b64len(NONCE_BYTES) + 1 + b64len(MAX_SECRET_VALUE_BYTES + TAG_BYTES);

/** Where an override belongs and whose it is; all of it is authenticated as associated data. */
export interface OverrideBinding {
  userId: string;
  projectId: string;
  environmentId: string;
  name: string;
}

/**
 * The member's override key: HKDF(X25519 secret key, ['coffer/v1/override-key', userId]).
 * Only the holder of the private key can derive it.
 */
export function deriveOverrideKey(encryptionSecretKey: Uint8Array, userId: string): Uint8Array {
  assertKey(encryptionSecretKey, 'encryption secret key');
  assertId(userId, 'userId');
  return hkdfSha256(
    encryptionSecretKey,
    new Uint8Array(0),
    encodeParts(['coffer/v1/override-key', userId]),
    32,
  );
}

function associatedData(b: OverrideBinding): Uint8Array {
  assertId(b.userId, 'userId');
  assertId(b.projectId, 'projectId');
  assertId(b.environmentId, 'environmentId');
  assertId(b.name, 'name');
  return encodeParts(['coffer/v1/override', b.userId, b.projectId, b.environmentId, b.name]);
}

/** XChaCha20-Poly1305 under the override key. `options.nonce` exists for test vectors. */
export function encryptOverride(
  input: OverrideBinding & { overrideKey: Uint8Array; value: string },
  options: { nonce?: Uint8Array } = {},
): string {
  assertKey(input.overrideKey, 'override key');
  if (typeof input.value !== 'string')
    throw new CryptoError('invalid_input', 'value must be a string');
  const nonce = options.nonce ?? randomBytes(NONCE_BYTES);
  if (nonce.length !== NONCE_BYTES)
    throw new CryptoError('invalid_input', 'nonce must be 24 bytes');
  const ciphertext = sealUtf8(input.value, associatedData(input), nonce, input.overrideKey);
  return `v1.ov.${toBase64url(nonce)}.${toBase64url(ciphertext)}`;
}

/** `invalid_envelope` when malformed, `decryption_failed` for another owner, place or any change. */
export function decryptOverride(
  input: OverrideBinding & { overrideKey: Uint8Array; envelope: string },
): string {
  assertKey(input.overrideKey, 'override key');
  const match =
    typeof input.envelope === 'string' ? OVERRIDE_ENVELOPE_PATTERN.exec(input.envelope) : null;
  if (match === null) throw new CryptoError('invalid_envelope');
  const nonce = fromBase64url(match[1]!, { code: 'invalid_envelope', length: NONCE_BYTES });
  const ciphertext = fromBase64url(match[2]!, { code: 'invalid_envelope' });
  return openUtf8(ciphertext, associatedData(input), nonce, input.overrideKey);
}
