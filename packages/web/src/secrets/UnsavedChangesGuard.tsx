import { useEffect, useState, useSyncExternalStore } from 'react';
import { useBlocker, useNavigate } from 'react-router';
import { auth } from '../lib/auth';
import { useLockingAt } from '../lib/autolock';
import { Dialog } from '../ui/Dialog';
import {
  discardAll,
  requestReview,
  staged,
  stagedEnvironmentNames,
  stagedProjectId,
  useStagedSummary,
} from './store';

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
  return (
    <>
      <LockCountdown changes={changes} />
      {asking && changes > 0 ? (
        <Dialog
          title={askedSignOut ? 'Sign out with unsaved changes?' : 'Leave with unsaved changes?'}
          onClose={() => {
            if (blocker.state === 'blocked') blocker.reset();
            setSignOutAsked(false);
          }}
        >
          <div className="stack">
            <p>
              {unsavedChanges(changes)} in {listNames(stagedEnvironmentNames())}{' '}
              {changes === 1 ? 'is' : 'are'} not saved yet. They are discarded if you{' '}
              {askedSignOut ? 'sign out' : 'leave this project'}.
            </p>
            <div className="actions">
              <button type="button" className="danger" onClick={leave}>
                {askedSignOut ? 'Discard and sign out' : 'Discard and leave'}
              </button>
              <button type="button" className="primary" onClick={stay}>
                Review changes
              </button>
            </div>
          </div>
        </Dialog>
      ) : null}
    </>
  );
}

/** The auto-lock's last minute while changes are staged; any activity cancels it. */
function LockCountdown({ changes }: { changes: number }) {
  const lockingAt = useLockingAt();
  const navigate = useNavigate();
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (lockingAt === null) return;
    setNow(Date.now());
    const tick = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(tick);
  }, [lockingAt]);
  if (lockingAt === null || changes === 0) return null;
  const seconds = Math.max(0, Math.ceil((lockingAt - now) / 1000));
  return (
    <div className="lock-countdown" role="alert">
      <p>
        <strong>The dashboard locks in {seconds} s</strong> without activity. Your{' '}
        {unsavedChanges(changes)} will be kept sealed until you unlock.
      </p>
      <div className="actions">
        {/* Any click is activity: the lock is pushed back. */}
        <button type="button">Keep working</button>
        <button
          type="button"
          className="primary"
          onClick={() => {
            const project = stagedProjectId();
            requestReview();
            if (project) void navigate(`/projects/${project}`);
          }}
        >
          Review now
        </button>
      </div>
    </div>
  );
}
