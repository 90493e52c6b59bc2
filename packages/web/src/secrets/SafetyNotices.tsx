import { useEffect, useState } from 'react';
import { useBlocker, useNavigate } from 'react-router';
import { auth } from '../lib/auth';
import { useLockingAt } from '../lib/autolock';
import { Dialog } from '../ui/Dialog';
import {
  discardAll,
  dismissRestoredNote,
  requestReview,
  staged,
  stagedEnvironmentNames,
  stagedProjectId,
  type Restored,
} from './store';
import { listNames, setSignOutAsked, unsavedChanges, useSignOutAsked } from './unsaved';
import './dialogs.css';

/** Leaving the project, or signing out, while changes are staged. */
export function LeaveDialog({
  changes,
  signingOut,
  onStay,
  onLeave,
  onCancel,
}: {
  changes: number;
  signingOut: boolean;
  onStay: () => void;
  onLeave: () => void;
  onCancel: () => void;
}) {
  return (
    <Dialog
      title={signingOut ? 'Sign out with unsaved changes?' : 'Leave with unsaved changes?'}
      onClose={onCancel}
    >
      <div className="stack">
        <p>
          {unsavedChanges(changes)} in {listNames(stagedEnvironmentNames())}{' '}
          {changes === 1 ? 'is' : 'are'} not saved yet. They are discarded if you{' '}
          {signingOut ? 'sign out' : 'leave this project'}.
        </p>
        <div className="actions">
          <button type="button" className="danger" onClick={onLeave}>
            {signingOut ? 'Discard and sign out' : 'Discard and leave'}
          </button>
          <button type="button" className="primary" onClick={onStay}>
            Review changes
          </button>
        </div>
      </div>
    </Dialog>
  );
}

/** The auto-lock's last minute while changes are staged; any activity cancels it. */
export function LockCountdown({ changes, lockingAt }: { changes: number; lockingAt: number }) {
  const navigate = useNavigate();
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    setNow(Date.now());
    const tick = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(tick);
  }, [lockingAt]);
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

/** After an unlock: what came back, and (names and environments only) what could not. */
export function RestoredNote({ note, onReview }: { note: Restored; onReview: () => void }) {
  return (
    <div className="notice restored-note" role="status">
      <p>
        <strong>
          {note.restored} staged {note.restored === 1 ? 'change' : 'changes'} restored
        </strong>{' '}
        after the lock; {note.restored === 1 ? 'it is' : 'they are'} still not saved.
      </p>
      {note.dropped.length > 0 ? (
        <>
          <p>Not restored ({note.dropped.length}):</p>
          <ul>
            {note.dropped.map((d) => (
              <li key={`${d.environment}/${d.name}`}>
                <span className="mono">{d.name}</span> in {d.environment}: {d.reason}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      <div className="actions start">
        {note.restored > 0 ? (
          <button type="button" className="primary" onClick={onReview}>
            Review
          </button>
        ) : null}
        <button type="button" onClick={dismissRestoredNote}>
          Dismiss
        </button>
      </div>
    </div>
  );
}

/** The guard while `changes` are staged (see UnsavedChangesGuard). */
export function ActiveGuard({ changes }: { changes: number }) {
  const navigate = useNavigate();
  const askedSignOut = useSignOutAsked();

  const blocker = useBlocker(({ nextLocation }) => {
    const project = stagedProjectId();
    // Nothing staged any more (discarded just now, before this navigation): nothing to ask.
    if (project === null || staged.size() === 0) return false;
    return !(
      nextLocation.pathname === `/projects/${project}` ||
      nextLocation.pathname.startsWith(`/projects/${project}/`)
    );
  });

  // Where the user asked to go, kept until they answer: a navigation already
  // under way when they asked (a tab whose code is still loading) resets the
  // router's blocker as it completes, and the question must not vanish with it.
  const [leavingTo, setLeavingTo] = useState<string | null>(null);
  useEffect(() => {
    if (blocker.state !== 'blocked') return;
    const { pathname, search, hash } = blocker.location;
    setLeavingTo(pathname + search + hash);
  }, [blocker]);

  const stay = () => {
    if (blocker.state === 'blocked') blocker.reset();
    setLeavingTo(null);
    setSignOutAsked(false);
    const project = stagedProjectId();
    if (project) {
      requestReview();
      void navigate(`/projects/${project}`);
    }
  };
  const leave = () => {
    discardAll();
    setLeavingTo(null);
    // With nothing staged any more, the blocker lets the navigation through.
    if (blocker.state === 'blocked') blocker.proceed();
    else if (leavingTo !== null) void navigate(leavingTo);
    if (askedSignOut) {
      setSignOutAsked(false);
      void auth.signOut();
    }
  };

  const asking = blocker.state === 'blocked' || leavingTo !== null || askedSignOut;
  const lockingAt = useLockingAt();
  return (
    <>
      {lockingAt !== null ? <LockCountdown changes={changes} lockingAt={lockingAt} /> : null}
      {asking ? (
        <LeaveDialog
          changes={changes}
          signingOut={askedSignOut}
          onStay={stay}
          onLeave={leave}
          onCancel={() => {
            if (blocker.state === 'blocked') blocker.reset();
            setLeavingTo(null);
            setSignOutAsked(false);
          }}
        />
      ) : null}
    </>
  );
}
