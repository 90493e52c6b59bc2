import { keyring } from '../lib/keyring';

/**
 * Decrypted values of the secrets on screen, in this module's memory only:
 * never React state or the query cache (which hold ciphertext), never the DOM
 * until the user reveals a cell. Keyed by environment, name and version, so a
 * new version is never shown with an old value. Forgotten on lock.
 */
const values = new Map<string, string>();

const key = (environmentId: string, name: string, version: number) =>
  `${environmentId}\u0000${name}\u0000${version}`;

export const plaintext = {
  get: (environmentId: string, name: string, version: number): string | undefined =>
    values.get(key(environmentId, name, version)),
  set(environmentId: string, name: string, version: number, value: string): void {
    values.set(key(environmentId, name, version), value);
  },
  clear(): void {
    values.clear();
  },
};

keyring.onLock(() => plaintext.clear());
