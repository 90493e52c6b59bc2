import {
  allPages,
  changePassword,
  fingerprint,
  revokeSession,
  sessions,
  type Session,
} from '@coffer/sdk';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { auth, useAuth } from '../lib/auth';
import { AUTOLOCK_CHOICES, setAutolockMinutes, useAutolockMinutes } from '../lib/autolock';
import { client } from '../lib/client';
import { toProblem } from '../lib/errors';
import { ago, formatDate } from '../lib/format';
import { keyring } from '../lib/keyring';
import { ErrorNote } from '../ui/ErrorNote';
import { Field } from '../ui/Field';
import { NewPasswordFields, passwordStrength } from '../ui/NewPassword';
import { useTitle } from '../lib/title';
import { sessionsKey } from '../lib/queries';

const allSessions = (): Promise<Session[]> =>
  allPages((page) =>
    sessions(client, { page, per_page: 100, sort: 'last_used_at', order: 'desc' }),
  );

/** My account: who I am, my key fingerprint, sessions, password, auto-lock. */
export function AccountPage() {
  useTitle('Account');
  const state = useAuth();
  const user = state.status === 'signed-in' ? state.user : null;
  const keys = keyring.publicKeys();
  return (
    <section className="page stack narrow">
      <h1>Account</h1>
      <div className="card stack">
        <h2>{user?.name}</h2>
        <p>{user?.email}</p>
        {keys ? (
          <div className="stack">
            <p>Your key fingerprint:</p>
            <output className="mono fingerprint-big" aria-label="Your key fingerprint">
              {fingerprint(keys.encryption, keys.signing)}
            </output>
            <p className="muted small">
              Before granting you a project key, an admin compares this with what their screen shows
              for you. Read it to them yourself (in person, a call, your team chat); never trust a
              fingerprint someone sends you to approve.
            </p>
          </div>
        ) : null}
      </div>
      <SessionsCard />
      <PasswordCard />
      <AutolockCard />
    </section>
  );
}

function SessionsCard() {
  const queryClient = useQueryClient();
  const list = useQuery({ queryKey: sessionsKey(), queryFn: allSessions });
  const revoke = useMutation({
    mutationFn: async (targets: Session[]) => {
      for (const session of targets) await revokeSession(client, session.id);
    },
    onSuccess: () => queryClient.invalidateQueries({ queryKey: sessionsKey() }),
  });
  const others = list.data?.filter((s) => !s.current) ?? [];
  return (
    <div className="card stack">
      <div className="page-header">
        <h2>Sessions</h2>
        {others.length > 0 ? (
          <button
            type="button"
            className="danger"
            disabled={revoke.isPending}
            onClick={() => revoke.mutate(others)}
          >
            Sign out everywhere else
          </button>
        ) : null}
      </div>
      <ErrorNote error={list.error ?? revoke.error} onRetry={() => void list.refetch()} />
      {list.data ? (
        <ul className="session-list">
          {list.data.map((session) => (
            <li key={session.id}>
              <div>
                <strong>
                  {session.user_agent ? describeAgent(session.user_agent) : 'Unknown client'}
                </strong>
                {session.current ? <span className="badge">this session</span> : null}
              </div>
              <div className="muted small">
                {session.ip ?? 'unknown address'} · signed in {ago(session.created_at)} · last used{' '}
                <span title={formatDate(session.last_used_at)}>{ago(session.last_used_at)}</span>
              </div>
              {!session.current ? (
                <button
                  type="button"
                  disabled={revoke.isPending}
                  onClick={() => revoke.mutate([session])}
                  aria-label={`Sign out the session from ${session.ip ?? 'an unknown address'} signed in ${ago(session.created_at)}`}
                >
                  Sign out
                </button>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** "Chrome on Linux", "coffer CLI", or the raw agent. */
function describeAgent(agent: string): string {
  if (/^coffer/i.test(agent)) return agent.split(' ')[0] ?? agent;
  const browser = /Edg\//.test(agent)
    ? 'Edge'
    : /Firefox\//.test(agent)
      ? 'Firefox'
      : /Chrom/.test(agent)
        ? 'Chrome'
        : /Safari\//.test(agent)
          ? 'Safari'
          : null;
  const os = /Windows/.test(agent)
    ? 'Windows'
    : /Mac OS/.test(agent)
      ? 'macOS'
      : /Android/.test(agent)
        ? 'Android'
        : /iPhone|iPad/.test(agent)
          ? 'iOS'
          : /Linux/.test(agent)
            ? 'Linux'
            : null;
  return browser ? `${browser}${os ? ` on ${os}` : ''}` : agent.slice(0, 60);
}

function PasswordCard() {
  const queryClient = useQueryClient();
  const state = useAuth();
  const user = state.status === 'signed-in' ? state.user : null;
  const [password, setPassword] = useState('');
  const change = useMutation({
    mutationFn: (input: { currentPassword: string; newPassword: string }) =>
      changePassword(client, input),
    onSuccess: async (keys) => {
      if (user) keyring.unlock(keys, user.id);
      setPassword('');
      await queryClient.invalidateQueries({ queryKey: sessionsKey() });
    },
  });
  const [mismatch, setMismatch] = useState(false);
  const problem = change.error ? toProblem(change.error) : null;
  const strength = passwordStrength(password);

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    if (form.get('new') !== form.get('repeat')) {
      setMismatch(true);
      return;
    }
    setMismatch(false);
    const target = event.currentTarget;
    change.mutate(
      { currentPassword: String(form.get('current')), newPassword: String(form.get('new')) },
      { onSuccess: () => target.reset() },
    );
  }

  return (
    <form className="card stack" onSubmit={submit} aria-labelledby="password-title">
      <h2 id="password-title">Change password</h2>
      <p className="muted small">
        Your keys are re-wrapped under the new password here, in the browser. Every other session
        ends; this one stays.
      </p>
      <Field
        label="Current password"
        name="current"
        type="password"
        autoComplete="current-password"
        required
      />
      <NewPasswordFields
        label="New password"
        repeatLabel="Repeat the new password"
        name="new"
        repeatName="repeat"
        value={password}
        onChange={setPassword}
        mismatch={mismatch}
      />
      {problem ? (
        <div className="error-note" role="alert">
          {problem.message}
        </div>
      ) : null}
      {change.isSuccess ? (
        <p role="status">Password changed. Other sessions were signed out.</p>
      ) : null}
      <div>
        <button type="submit" className="primary" disabled={change.isPending || !strength.ok}>
          {change.isPending ? 'Deriving keys…' : 'Change password'}
        </button>
      </div>
    </form>
  );
}

function AutolockCard() {
  const minutes = useAutolockMinutes();
  return (
    <div className="card stack">
      <h2>Auto-lock</h2>
      <label htmlFor="autolock">Lock the dashboard after this long without activity</label>
      <select
        id="autolock"
        value={minutes}
        onChange={(event) => setAutolockMinutes(Number(event.target.value))}
      >
        {AUTOLOCK_CHOICES.map((choice) => (
          <option key={choice} value={choice}>
            {choice < 60 ? `${choice} minutes` : `${choice / 60} hours`}
          </option>
        ))}
      </select>
      <p className="muted small">
        Locking drops your keys and every decrypted value from memory; unsaved edits are kept sealed
        with your key until you unlock again with your password (no new sign-in).
      </p>
      <div>
        <button type="button" onClick={() => auth.lock()}>
          Lock now
        </button>
      </div>
    </div>
  );
}
