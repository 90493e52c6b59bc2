import { useSyncExternalStore } from 'react';

// What the unsaved-changes guard (UnsavedChangesGuard.tsx, loaded with the
// first screen) and its dialogs (SafetyNotices.tsx, loaded with the first
// staged change) share: the words, and whether a sign-out waits for an answer.

/** "3 unsaved changes", "1 unsaved change". */
export const unsavedChanges = (count: number) =>
  `${count} unsaved ${count === 1 ? 'change' : 'changes'}`;

/** "production and staging", "development, production and staging". */
export function listNames(names: string[]): string {
  if (names.length <= 1) return names[0] ?? '';
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

// Sign-out asked for while changes are staged: the guard asks first.
let signOutAsked = false;
const signOutListeners = new Set<() => void>();
export function setSignOutAsked(value: boolean): void {
  signOutAsked = value;
  signOutListeners.forEach((listener) => listener());
}
export function useSignOutAsked(): boolean {
  return useSyncExternalStore(
    (listener) => {
      signOutListeners.add(listener);
      return () => signOutListeners.delete(listener);
    },
    () => signOutAsked,
  );
}
