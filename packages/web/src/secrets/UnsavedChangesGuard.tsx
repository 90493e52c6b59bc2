import { lazy, Suspense, useEffect, useSyncExternalStore } from 'react';
import { useBlocker, useNavigate } from 'react-router';
import { auth } from '../lib/auth';
import { useLockingAt } from '../lib/autolock';
import { discardAll, requestReview, staged, stagedProjectId, useStagedSummary } from './store';

const LockCountdown = lazy(() =>
  import('./SafetyNotices').then((m) => ({ default: m.LockCountdown })),
);
const LeaveDialog = lazy(() => import('./SafetyNotices').then((m) => ({ default: m.LeaveDialog })));

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
const setSignOutAsked = (value: boolean) => {
  signOutAsked = value;
  signOutListeners.forEach((listener) => listener());
};

/** Signs out, after asking when staged changes would be lost. */
export function requestSignOut(): void {
  if (staged.all().length > 0) setSignOutAsked(true);
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
  const navigate = useNavigate();
  const askedSignOut = useSyncExternalStore(
    (listener) => {
      signOutListeners.add(listener);
      return () => signOutListeners.delete(listener);
    },
    () => signOutAsked,
  );

  useEffect(() => {
    if (changes === 0) return;
    const onBeforeUnload = (event: BeforeUnloadEvent) => {
      event.preventDefault();
      // Older browsers show the dialog only when returnValue is set.
      event.returnValue = '';
    };
    window.addEventListener('beforeunload', onBeforeUnload);
    return () => window.removeEventListener('beforeunload', onBeforeUnload);
  }, [changes]);

  const blocker = useBlocker(({ nextLocation }) => {
    const project = stagedProjectId();
    if (changes === 0 || project === null) return false;
    return !(
      nextLocation.pathname === `/projects/${project}` ||
      nextLocation.pathname.startsWith(`/projects/${project}/`)
    );
  });

  const stay = () => {
    if (blocker.state === 'blocked') blocker.reset();
    setSignOutAsked(false);
    const project = stagedProjectId();
    if (project) {
      requestReview();
      void navigate(`/projects/${project}`);
    }
  };
  const leave = () => {
    discardAll();
    if (blocker.state === 'blocked') blocker.proceed();
    if (signOutAsked) {
      setSignOutAsked(false);
      void auth.signOut();
    }
  };

  const asking = blocker.state === 'blocked' || askedSignOut;
  const lockingAt = useLockingAt();
  // The dialogs load when first needed: the first visit carries only the guard.
  if (changes === 0 || (!asking && lockingAt === null)) return null;
  return (
    <Suspense fallback={null}>
      {lockingAt !== null ? <LockCountdown changes={changes} lockingAt={lockingAt} /> : null}
      {asking ? (
        <LeaveDialog
          changes={changes}
          signingOut={askedSignOut}
          onStay={stay}
          onLeave={leave}
          onCancel={() => {
            if (blocker.state === 'blocked') blocker.reset();
            setSignOutAsked(false);
          }}
        />
      ) : null}
    </Suspense>
  );
}
