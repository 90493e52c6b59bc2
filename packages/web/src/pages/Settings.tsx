import { fingerprint } from '@coffer/sdk';
import { useAuth } from '../lib/auth';
import { AUTOLOCK_CHOICES, setAutolockMinutes, useAutolockMinutes } from '../lib/autolock';
import { keyring } from '../lib/keyring';

export function SettingsPage() {
  const state = useAuth();
  const minutes = useAutolockMinutes();
  const keys = keyring.publicKeys();
  const user = state.status === 'signed-in' ? state.user : null;
  return (
    <section className="page stack narrow">
      <h1>Settings</h1>
      <div className="card stack">
        <h2>Account</h2>
        <p>
          {user?.name} · {user?.email}
        </p>
        {keys ? (
          <p>
            Key fingerprint:{' '}
            <code className="mono" aria-label="Your key fingerprint">
              {fingerprint(keys.encryption, keys.signing)}
            </code>
          </p>
        ) : null}
        <p className="muted small">
          An admin compares this fingerprint with you before granting you a project key.
        </p>
      </div>
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
          Locking drops your keys and every decrypted value from memory; your password unlocks again
          without signing in.
        </p>
      </div>
    </section>
  );
}
