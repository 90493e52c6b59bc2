import { type User } from '@coffer/sdk';
import { useState, type FormEvent } from 'react';
import { auth } from '../lib/auth';
import { copyText, downloadText } from '../lib/clipboard';
import { toProblem } from '../lib/errors';
import { Field } from '../ui/Field';
import { NewPasswordFields, passwordStrength } from '../ui/NewPassword';

/**
 * Sign-up, optionally with an invitation token (it proves the address). The
 * recovery key is shown once; the user must confirm it is stored before going on.
 */
export function SignUpForm({
  invitationToken,
  onDone,
}: {
  invitationToken?: string;
  onDone: (user: User) => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [password, setPassword] = useState('');
  const [created, setCreated] = useState<{ user: User; recoveryKey: string } | null>(null);
  const [stored, setStored] = useState(false);
  const [copied, setCopied] = useState(false);

  if (created) {
    return (
      <div className="card auth-card stack">
        <h1>Save your recovery key</h1>
        <p>
          This key restores your account if you forget your password. Coffer cannot recover it for
          you: without the password or this key your secrets cannot be decrypted. It is shown only
          now.
        </p>
        <output className="recovery-key mono" aria-label="Recovery key">
          {created.recoveryKey}
        </output>
        <div className="actions start">
          <button
            type="button"
            onClick={() => void copyText(created.recoveryKey).then(() => setCopied(true))}
          >
            {copied ? 'Copied' : 'Copy'}
          </button>
          <button
            type="button"
            onClick={() =>
              downloadText(
                'coffer-recovery-key.txt',
                `Coffer recovery key for ${created.user.email}\n${created.recoveryKey}\n`,
              )
            }
          >
            Download
          </button>
        </div>
        <label className="check">
          <input type="checkbox" checked={stored} onChange={(e) => setStored(e.target.checked)} />I
          have stored my recovery key somewhere safe
        </label>
        <button
          type="button"
          className="primary"
          disabled={!stored}
          onClick={() => onDone(created.user)}
        >
          Continue
        </button>
      </div>
    );
  }

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    if (form.get('password') !== form.get('confirm')) {
      setError(new Error('The two passwords differ'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      setCreated(
        await auth.signUp({
          email: String(form.get('email')),
          name: String(form.get('name')),
          password: String(form.get('password')),
          ...(invitationToken ? { invitationToken } : {}),
        }),
      );
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  const problem = error ? toProblem(error) : null;
  const strength = passwordStrength(password);
  return (
    <form className="card auth-card stack" onSubmit={(e) => void submit(e)} aria-busy={busy}>
      <h1>Create your Coffer account</h1>
      <Field
        label="Name"
        name="name"
        autoComplete="name"
        required
        autoFocus
        error={problem?.fields.name}
      />
      <Field
        label="E-mail"
        name="email"
        type="email"
        autoComplete="email"
        required
        error={problem?.fields.email}
      />
      <NewPasswordFields
        label="Password"
        repeatLabel="Repeat password"
        name="password"
        repeatName="confirm"
        value={password}
        onChange={setPassword}
      />
      {problem ? (
        <div className="error-note" role="alert">
          {problem.message}
        </div>
      ) : null}
      <button type="submit" className="primary" disabled={busy || !strength.ok}>
        {busy ? 'Deriving keys…' : 'Create account'}
      </button>
      <p className="small muted">
        Your password never leaves this browser. Keys are derived from it here (Argon2id), which
        takes a moment.
      </p>
    </form>
  );
}
