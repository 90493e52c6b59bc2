import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { auth } from '../lib/auth';
import { toProblem } from '../lib/errors';
import { Field } from '../ui/Field';
import { NewPasswordFields, passwordStrength } from '../ui/NewPassword';
import { useTitle } from '../lib/title';

/** A forgotten password: the recovery key unwraps the keys here and a new password wraps them again. */
export function RecoverPage() {
  useTitle('Recover account');
  const navigate = useNavigate();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [password, setPassword] = useState('');
  const strength = passwordStrength(password);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    if (form.get('password') !== form.get('repeat')) {
      setError(new Error('The two passwords differ'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await auth.recover({
        email: String(form.get('email')),
        recoveryKey: String(form.get('recovery')),
        newPassword: String(form.get('password')),
      });
      navigate('/projects', { replace: true });
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }

  const problem = error ? toProblem(error) : null;
  return (
    <div className="center-page">
      <form className="card auth-card stack" onSubmit={(e) => void submit(e)} aria-busy={busy}>
        <h1>Recover your account</h1>
        <p className="muted small">
          With the recovery key you saved at sign-up you set a new password; your keys and every
          secret stay readable. Every session of the account ends.
        </p>
        <Field
          label="E-mail"
          name="email"
          type="email"
          autoComplete="username"
          required
          autoFocus
        />
        <Field
          label="Recovery key"
          name="recovery"
          className="mono"
          autoComplete="off"
          spellCheck={false}
          required
        />
        <NewPasswordFields
          label="New password"
          repeatLabel="Repeat the new password"
          name="password"
          repeatName="repeat"
          value={password}
          onChange={setPassword}
        />
        {problem ? (
          <div className="error-note" role="alert">
            {problem.message}
          </div>
        ) : null}
        <button type="submit" className="primary" disabled={busy || !strength.ok}>
          {busy ? 'Deriving keys…' : 'Set the new password'}
        </button>
        <p className="small">
          <Link to="/signin">Back to sign-in</Link>
        </p>
      </form>
    </div>
  );
}
