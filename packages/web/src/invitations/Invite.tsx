import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { auth, useAuth, useUnlocked } from '../lib/auth';
import { openedIntroduction } from './introduction-link';
import { SignUpForm } from '../app/SignUpForm';
import { useTitle } from '../lib/title';
import { InvitationList } from './Invitations';
import { signInPath, TopBar, Unlock } from '../app/Shell';

/**
 * The invitation e-mail's link, `/invite?token=…`. Without an account the
 * invitee signs up with the token (it proves the address); with one, they sign
 * in and accept or decline.
 */
export function InvitePage() {
  const [params] = useSearchParams();
  const token = params.get('token') ?? undefined;
  const state = useAuth();
  const unlocked = useUnlocked();
  const [mode, setMode] = useState<'choose' | 'signup'>('choose');
  // The page sets the title for what it shows (the unlock screen within it too: a
  // parent's effect runs after its child's).
  useTitle(state.status !== 'signed-in' ? 'Invitation' : unlocked ? 'Your invitation' : 'Unlock');

  if (state.status === 'loading') return <div className="center-page muted">Loading…</div>;
  if (state.status === 'signed-in' && !unlocked) return <Unlock user={state.user} />;
  if (state.status === 'signed-in') {
    // Signed in, the invitation is a page of the app: its header leads on once accepted.
    return (
      <div className="shell">
        <TopBar />
        <main id="main" tabIndex={-1}>
          <section className="page narrow stack">
            <h1>Your invitation</h1>
            <InvitationList {...(token ? { token } : {})} />
          </section>
        </main>
      </div>
    );
  }
  if (mode === 'signup') {
    return (
      <div className="center-page">
        <SignUpForm
          {...(token ? { invitationToken: token } : {})}
          onDone={(user) => auth.enter(user)}
        />
      </div>
    );
  }
  return (
    <div className="center-page">
      <div className="card auth-card stack">
        <h1>You are invited to a Coffer project</h1>
        <p>Create an account with this invitation, or sign in if you already have one.</p>
        {openedIntroduction() && !token ? (
          <p className="notice small">
            This is the introduction link your inviter sent you. If you have no account yet, create
            it from the link in the invitation e-mail (it confirms your address), then open this
            link again to accept.
          </p>
        ) : null}
        <button type="button" className="primary" onClick={() => setMode('signup')}>
          Create an account
        </button>
        <Link className="button" to={signInPath({ pathname: '/invite', search: `?${params}` })}>
          Sign in
        </Link>
      </div>
    </div>
  );
}
