import { listInvitations } from '@coffer/sdk';
import { useQuery } from '@tanstack/react-query';
import { Link, NavLink, Navigate, Outlet, useLocation } from 'react-router';
import { requestSignOut, UnsavedChangesGuard } from '../secrets/UnsavedChangesGuard';
import { auth, useAuth, useUnlocked } from '../lib/auth';
import { client } from '../lib/client';
import { UnlockScreen } from './Unlock';
import { ErrorNote } from '../ui/ErrorNote';
import { ThemePicker } from '../ui/ThemePicker';
import { useTitle } from '../lib/title';
import type { User } from '@coffer/sdk';
import { invitationsKey } from '../lib/queries';

/** Where sign-in sends the user back to: the page they were on. */
export function signInPath(location: { pathname: string; search: string }): string {
  const next = location.pathname + location.search;
  return next === '/' || next.startsWith('/signin')
    ? '/signin'
    : `/signin?next=${encodeURIComponent(next)}`;
}

/** The gate of every signed-in page: sign-in when there is no session, unlock when there are no keys. */
export function RequireSession() {
  const state = useAuth();
  const unlocked = useUnlocked();
  const location = useLocation();
  if (state.status === 'loading') {
    return (
      <div className="center-page" aria-busy="true">
        <p className="muted">Loading…</p>
      </div>
    );
  }
  if (state.status === 'unreachable') {
    return (
      <div className="center-page">
        <h1>Coffer is not answering</h1>
        <ErrorNote error={state.error} />
        <button type="button" className="primary" onClick={() => void auth.load()}>
          Try again
        </button>
      </div>
    );
  }
  if (state.status === 'signed-out') return <Navigate to={signInPath(location)} replace />;
  if (!unlocked) return <Unlock user={state.user} />;
  return <Outlet />;
}

/** The unlock screen, titled (only the screen shown sets the title: a parent's effect would run last). */
export function Unlock({ user }: { user: User }) {
  useTitle('Unlock');
  return <UnlockScreen user={user} />;
}

export function AppShell() {
  return (
    <div className="shell">
      <TopBar />
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
      <UnsavedChangesGuard />
    </div>
  );
}

/** The app's header: the main navigation, the theme, the user, Lock and Sign out. */
export function TopBar() {
  const state = useAuth();
  const user = state.status === 'signed-in' ? state.user : null;
  const invitations = useQuery({
    queryKey: invitationsKey(),
    queryFn: () => listInvitations(client, { per_page: 100 }),
  });
  const pending = invitations.data?.pagination.total ?? 0;
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/projects" className="brand">
          Coffer
        </Link>
        <nav aria-label="Main">
          <NavLink to="/projects">Projects</NavLink>
          <NavLink to="/invitations">
            Invitations
            {pending > 0 ? (
              <span className="badge">
                {pending}
                <span className="visually-hidden"> pending</span>
              </span>
            ) : null}
          </NavLink>
          <NavLink to="/account">Account</NavLink>
        </nav>
        <div className="topbar-user">
          <span className="muted small topbar-name" title={user?.email}>
            {user?.name}
          </span>
          <ThemePicker />
          <button type="button" onClick={() => auth.lock()}>
            Lock
          </button>
          <button type="button" onClick={requestSignOut}>
            Sign out
          </button>
        </div>
      </header>
    </>
  );
}
