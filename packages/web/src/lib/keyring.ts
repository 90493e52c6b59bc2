import { KeyPins, openVault, type UserKeys, type VaultSession } from '@coffer/sdk';
import { client } from './client';

/**
 * The unlocked keys, in this module's memory only: never React state (devtools
 * can dump that wholesale), never localStorage, sessionStorage, IndexedDB or a
 * cookie. A reload, a lock or the auto-lock drops them; the session cookie
 * stays, so the user unlocks with the password instead of signing in again.
 */
let userKeys: UserKeys | null = null;
let userId: string | null = null;
let pins: Promise<KeyPins> | null = null;
const vaults = new Map<string, Promise<VaultSession>>();
const listeners = new Set<() => void>();
const onLock = new Set<() => void>();
const beforeLock = new Set<(keys: UserKeys, owner: string) => void>();
const onUnlock = new Set<(keys: UserKeys, owner: string) => void>();

const notify = () => listeners.forEach((listener) => listener());

export const keyring = {
  /** For useSyncExternalStore: whether keys are held (never the keys themselves). */
  subscribe(listener: () => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  isUnlocked: (): boolean => userKeys !== null,
  /** Whose keys are held (the user id), or null while locked. */
  userId: (): string | null => (userKeys ? userId : null),

  unlock(keys: UserKeys, owner: string): void {
    keyring.lock();
    userKeys = keys;
    userId = owner;
    onUnlock.forEach((callback) => callback(keys, owner));
    notify();
  },

  /** Best-effort erasure: the private keys and every opened vault's keys are zeroed. */
  lock(): void {
    const held = userKeys;
    if (held && userId) for (const callback of beforeLock) callback(held, userId);
    userKeys = null;
    pins = null;
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

  /**
   * Runs while the keys are still held, just before a lock drops them: to seal
   * what must survive the lock (the grid's staged changes) to the user's own key.
   */
  beforeLock(callback: (keys: UserKeys, owner: string) => void): () => void {
    beforeLock.add(callback);
    return () => beforeLock.delete(callback);
  },

  /** Runs after an unlock, with the keys: to open what beforeLock sealed. */
  onUnlock(callback: (keys: UserKeys, owner: string) => void): () => void {
    onUnlock.add(callback);
    return () => onUnlock.delete(callback);
  },

  /** The public halves, e.g. to show the user's fingerprint. */
  publicKeys(): { encryption: Uint8Array; signing: Uint8Array } | null {
    return userKeys
      ? { encryption: userKeys.encryption.publicKey, signing: userKeys.signing.publicKey }
      : null;
  },

  /**
   * The keys this user has accepted for the people they work with (signed by
   * their own key, stored on the server): every grant opened or made here is
   * checked against them. The highest version seen is remembered in this
   * browser (it is no secret) so a server serving an older document is caught.
   */
  pins(): Promise<KeyPins> {
    if (!userKeys || !userId) return Promise.reject(new LockedError());
    if (!pins) {
      const storageKey = `coffer.pins-version.${userId}`;
      const seen = Number(window.localStorage.getItem(storageKey)) || 0;
      pins = KeyPins.load(
        client,
        { userId, keys: userKeys },
        {
          minVersion: seen,
          onVersion: (version) => {
            if (version > (Number(window.localStorage.getItem(storageKey)) || 0))
              window.localStorage.setItem(storageKey, String(version));
          },
        },
      );
      pins.catch(() => (pins = null));
    }
    return pins;
  },

  /** The caller's opened vault of a project (its grants fetched and checked once, then cached). */
  vault(projectId: string): Promise<VaultSession> {
    if (!userKeys) return Promise.reject(new LockedError());
    let vault = vaults.get(projectId);
    if (!vault) {
      vault = openVault(client, projectId, userKeys, { pins: keyring.pins() });
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
