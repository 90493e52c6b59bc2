import {
  isCofferApiError,
  logIn,
  recoverAccount,
  logOut,
  me,
  signUp,
  unlockKeys,
  type SignUpInput,
  type User,
} from '@coffer/sdk';
import { useSyncExternalStore } from 'react';
import { client } from './client';
import { keyring } from './keyring';

/**
 * Who is signed in. `signed-in` with no keys in the keyring is the locked
 * state: the session cookie is valid, the keys are gone (a reload, the
 * auto-lock), and the password unlocks them again without a second login.
 */
export type AuthState =
  | { status: 'loading' }
  /** The server could not be asked (network down, 5xx): offer a retry. */
  | { status: 'unreachable'; error: unknown }
  | { status: 'signed-out'; reason?: 'expired' | 'signed-out' }
  | { status: 'signed-in'; user: User };

let state: AuthState = { status: 'loading' };
const listeners = new Set<() => void>();

function set(next: AuthState): void {
  state = next;
  listeners.forEach((listener) => listener());
}

const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};

export function useAuth(): AuthState {
  return useSyncExternalStore(subscribe, () => state);
}

export function useUnlocked(): boolean {
  return useSyncExternalStore(keyring.subscribe, keyring.isUnlocked);
}

/** Paints before a long synchronous step (Argon2id), so "Deriving keys…" is on screen while it runs. */
export const nextPaint = () =>
  new Promise<void>((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

export const auth = {
  get state() {
    return state;
  },

  /** At start: is there a live session? Keys are never restored; that is the unlock screen's job. */
  async load(): Promise<void> {
    set({ status: 'loading' });
    try {
      set({ status: 'signed-in', user: await me(client) });
    } catch (error) {
      if (isCofferApiError(error) && error.status === 401) set({ status: 'signed-out' });
      else set({ status: 'unreachable', error });
    }
  },

  async signIn(email: string, password: string): Promise<void> {
    await nextPaint();
    const session = await logIn(client, { email, password });
    keyring.unlock(session.keys, session.user.id);
    set({ status: 'signed-in', user: session.user });
  },

  /** Creates the account and signs in; the caller shows the recovery key before going on. */
  async signUp(input: SignUpInput): Promise<{ user: User; recoveryKey: string }> {
    await nextPaint();
    const created = await signUp(client, input);
    keyring.unlock(created.keys, created.user.id);
    return { user: created.user, recoveryKey: created.recoveryKey };
  },

  /** After the recovery key was confirmed stored. */
  enter(user: User): void {
    set({ status: 'signed-in', user });
  },

  /** Sets a new password with the recovery key, then signs in with it. */
  async recover(input: { email: string; recoveryKey: string; newPassword: string }): Promise<void> {
    await nextPaint();
    const session = await recoverAccount(client, input);
    keyring.unlock(session.keys, session.user.id);
    set({ status: 'signed-in', user: session.user });
  },

  async unlock(password: string): Promise<void> {
    await nextPaint();
    const keys = await unlockKeys(client, { password });
    if (state.status === 'signed-in') keyring.unlock(keys, state.user.id);
  },

  lock(): void {
    keyring.lock();
  },

  /** Ends the session on the server; the keys go whatever the answer. */
  async signOut(): Promise<void> {
    keyring.lock();
    try {
      await logOut(client);
    } finally {
      set({ status: 'signed-out', reason: 'signed-out' });
    }
  },

  /** A 401 from any request: the session ended elsewhere or expired. */
  expired(): void {
    if (state.status !== 'signed-in') return;
    keyring.lock();
    set({ status: 'signed-out', reason: 'expired' });
  },

  replaceUser(user: User): void {
    if (state.status === 'signed-in') set({ status: 'signed-in', user });
  },
};
