import { lazy, Suspense, useSyncExternalStore } from 'react';
import { auth } from '../lib/auth';
import { staged, useStagedSummary } from './store';

// While changes are staged: the leave guard, the lock countdown and their dialogs
// (loaded with the first staged change; the first visit carries only this module).
const ActiveGuard = lazy(() => import('./SafetyNotices').then((m) => ({ default: m.ActiveGuard })));

/** "3 unsaved changes", "1 unsaved change". */
export const unsavedChanges = (count: number) =>
  `${count} unsaved ${count === 1 ? 'change' : 'changes'}`;

/** "production and staging", "development, production and staging". */
export function listNames(names: string[]): string {
  if (names.length <= 1) return names[0] ?? '';
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

// A reload or a closed tab asks first while anything is staged (the browser's own dialog).
const onBeforeUnload = (event: BeforeUnloadEvent) => {
  event.preventDefault();
  // Older browsers show the dialog only when returnValue is set.
  event.returnValue = '';
};
let guarding = false;
staged.subscribe(() => {
  const any = staged.size() > 0;
  if (any === guarding) return;
  guarding = any;
  if (any) window.addEventListener('beforeunload', onBeforeUnload);
  else window.removeEventListener('beforeunload', onBeforeUnload);
});

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

/** Signs out, after asking when staged changes would be lost. */
export function requestSignOut(): void {
  if (staged.size() > 0) setSignOutAsked(true);
  else void auth.signOut();
}

/**
 * Keeps staged (unsaved) changes from vanishing without a word: the browser
 * asks before a reload or a closed tab, leaving the project or signing out
 * asks first, and the auto-lock's last minute is announced (the changes
 * themselves survive the lock, sealed; see store.ts).
 */
export function UnsavedChangesGuard() {
  const { changes } = useStagedSummary();
  if (changes === 0) return null;
  return (
    <Suspense fallback={null}>
      <ActiveGuard changes={changes} />
    </Suspense>
  );
}
