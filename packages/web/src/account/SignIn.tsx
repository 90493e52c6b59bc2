import { useState, type FormEvent } from 'react';
import { Link, Navigate, useNavigate, useSearchParams } from 'react-router';
import { auth, useAuth } from '../lib/auth';
import { toProblem } from '../lib/errors';
import { Field } from '../ui/Field';
import { useTitle } from '../lib/title';

/** Only same-site paths are followed after sign-in (no open redirect). */
export function safeNext(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/projects';
}

export function SignInPage() {
  useTitle('Sign in');
  const [params] = useSearchParams();
  const next = safeNext(params.get('next'));
  const state = useAuth();
  const navigate = useNavigate();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  if (state.status === 'signed-in') return <Navigate to={next} replace />;

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setBusy(true);
    setError(null);
    try {
      await auth.signIn(String(form.get('email')), String(form.get('password')));
      navigate(next, { replace: true });
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }

  const problem = error ? toProblem(error) : null;
  return (
    <div className="center-page">
      <form className="card auth-card stack" onSubmit={(e) => void submit(e)} aria-busy={busy}>
        <h1>Sign in to Coffer</h1>
        {state.status === 'signed-out' && state.reason === 'expired' ? (
          <p className="notice" role="status">
            Your session ended. Sign in again to continue where you were.
          </p>
        ) : null}
        <Field
          label="E-mail"
          name="email"
          type="email"
          autoComplete="username"
          required
          autoFocus
        />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
        />
        {problem ? (
          <div className="error-note" role="alert">
            {problem.message}
          </div>
        ) : null}
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Deriving keys…' : 'Sign in'}
        </button>
        <p className="small muted">
          Your password never leaves this browser: it derives the keys that sign you in and decrypt
          your secrets.
        </p>
        <p className="small">
          New to Coffer? <Link to="/signup">Create an account</Link> ·{' '}
          <Link to="/recover">Forgot your password?</Link>
        </p>
      </form>
    </div>
  );
}
