import { type User } from '@coffer/sdk';
import { useState, type FormEvent } from 'react';
import { auth } from '../lib/auth';
import { toProblem } from '../lib/errors';
import { Field } from '../ui/Field';
import { dropSealed, useSealedCount } from '../secrets/store';
import { unsavedChanges } from '../secrets/unsaved';

/** A live session without keys (a reload, the auto-lock): the password unlocks them again. */
export function UnlockScreen({ user }: { user: User }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const sealed = useSealedCount();

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const password = String(new FormData(event.currentTarget).get('password') ?? '');
    setBusy(true);
    setError(null);
    try {
      await auth.unlock(password);
    } catch (err) {
      const problem = toProblem(err);
      if (problem.signedOut) auth.expired();
      else setError(problem.message);
      setBusy(false);
    }
  }

  return (
    <div className="center-page">
      <form className="card auth-card stack" onSubmit={(e) => void submit(e)} aria-busy={busy}>
        <h1>Unlock Coffer</h1>
        <p className="muted">
          Signed in as <strong>{user.email}</strong>. Your keys are not kept after a reload or after
          a period without activity; enter your password to decrypt again.
        </p>
        {sealed > 0 ? (
          <p className="notice" role="status">
            Your {unsavedChanges(sealed)} {sealed === 1 ? 'is' : 'are'} kept sealed with your key
            and restored when you unlock. Signing out discards {sealed === 1 ? 'it' : 'them'}.
          </p>
        ) : null}
        {/* For password managers: which account this password belongs to. */}
        <input
          type="text"
          name="username"
          autoComplete="username"
          value={user.email}
          readOnly
          tabIndex={-1}
          aria-hidden="true"
          className="visually-hidden"
        />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          autoFocus
          error={error ?? undefined}
        />
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Deriving keys…' : 'Unlock'}
        </button>
        <p className="small">
          Not you?{' '}
          <button
            type="button"
            className="link"
            onClick={() => {
              dropSealed();
              void auth.signOut();
            }}
          >
            Sign out
          </button>
        </p>
      </form>
    </div>
  );
}
