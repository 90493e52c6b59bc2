import { CryptoError } from './errors.js';
import { deriveSubkey } from './hkdf.js';
import { randomBytes } from './sodium.js';

export const PROJECT_KEY_BYTES = 32;

export function assertEpoch(epoch: number): void {
  if (!Number.isSafeInteger(epoch) || epoch < 1) {
    throw new CryptoError('invalid_input', 'epoch must be an integer >= 1');
  }
}

export function assertId(value: string, what: string): void {
  if (typeof value !== 'string' || value.length === 0) {
    throw new CryptoError('invalid_input', `${what} must be a non-empty string`);
  }
}

export function assertKey(key: Uint8Array, what: string): void {
  if (!(key instanceof Uint8Array) || key.length !== 32) {
    throw new CryptoError('invalid_input', `${what} must be 32 bytes`);
  }
}

/** A fresh project master key (PMK); one per key epoch. */
export function generateProjectKey(): Uint8Array {
  return randomBytes(PROJECT_KEY_BYTES);
}

/** EK = HKDF(PMK, info = encodeParts(['coffer/v1/environment-key', projectId, environmentId, epoch])). */
export function deriveEnvironmentKey(
  projectKey: Uint8Array,
  projectId: string,
  environmentId: string,
  epoch: number,
): Uint8Array {
  assertKey(projectKey, 'project key');
  assertId(projectId, 'projectId');
  assertId(environmentId, 'environmentId');
  assertEpoch(epoch);
  return deriveSubkey(projectKey, [
    'coffer/v1/environment-key',
    projectId,
    environmentId,
    String(epoch),
  ]);
}
