import { openVault, type UserKeys, type VaultSession } from '@coffer/sdk';
import { client } from './client';

/**
 * The unlocked keys, in this module's memory only: never React state (devtools
 * can dump that wholesale), never localStorage, sessionStorage, IndexedDB or a
 * cookie. A reload, a lock or the auto-lock drops them; the session cookie
 * stays, so the user unlocks with the password instead of signing in again.
 */
let userKeys: UserKeys | null = null;
const vaults = new Map<string, Promise<VaultSession>>();
const listeners = new Set<() => void>();
const onLock = new Set<() => void>();

const notify = () => listeners.forEach((listener) => listener());

export const keyring = {
  /** For useSyncExternalStore: whether keys are held (never the keys themselves). */
  subscribe(listener: () => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  isUnlocked: (): boolean => userKeys !== null,

  unlock(keys: UserKeys): void {
    keyring.lock();
    userKeys = keys;
    notify();
  },

  /** Best-effort erasure: the private keys and every opened vault's keys are zeroed. */
  lock(): void {
    const held = userKeys;
    userKeys = null;
    for (const vault of vaults.values())
      vault.then(
        (v) => v.forget(),
        () => undefined,
      );
    vaults.clear();
    held?.encryption.secretKey.fill(0);
    held?.signing.secretKey.fill(0);
    onLock.forEach((callback) => callback());
    if (held) notify();
  },

  /** Registers what else must be forgotten on lock (decrypted values, staged edits). */
  onLock(callback: () => void): () => void {
    onLock.add(callback);
    return () => onLock.delete(callback);
  },

  /** The public halves, e.g. to show the user's fingerprint. */
  publicKeys(): { encryption: Uint8Array; signing: Uint8Array } | null {
    return userKeys
      ? { encryption: userKeys.encryption.publicKey, signing: userKeys.signing.publicKey }
      : null;
  },

  /** The caller's opened vault of a project (its grants fetched and checked once, then cached). */
  vault(projectId: string): Promise<VaultSession> {
    if (!userKeys) return Promise.reject(new LockedError());
    let vault = vaults.get(projectId);
    if (!vault) {
      vault = openVault(client, projectId, userKeys);
      vault.catch(() => vaults.delete(projectId));
      vaults.set(projectId, vault);
    }
    return vault;
  },

  /** The private keys, for SDK calls that sign or unwrap (granting, re-key). */
  keys(): UserKeys {
    if (!userKeys) throw new LockedError();
    return userKeys;
  },
};

export class LockedError extends Error {
  constructor() {
    super('The dashboard is locked: unlock it with your password');
    this.name = 'LockedError';
  }
}
