import { ENV_NAME, type Environment } from '@coffer/sdk';
import { useState, type FormEvent } from 'react';
import { Dialog } from '../ui/Dialog';
import { Field } from '../ui/Field';
import { stageValue } from './Cell';
import type { SecretMeta } from './data';

/** Adds a name to one or several environments (staged, like every edit). */
export function AddSecretDialog({
  environments,
  secrets,
  onClose,
}: {
  environments: Environment[];
  secrets: Map<string, Map<string, SecretMeta>>;
  onClose: () => void;
}) {
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<Set<string>>(new Set(environments.map((e) => e.id)));
  const [error, setError] = useState<string | null>(null);
  const nameError =
    name && !ENV_NAME.test(name)
      ? 'Letters, digits and underscores, not starting with a digit (an environment variable name)'
      : undefined;
  const existing = environments.filter((e) => chosen.has(e.id) && secrets.get(e.id)?.has(name));

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const value = String(new FormData(event.currentTarget).get('value') ?? '');
    if (nameError) return;
    if (chosen.size === 0) {
      setError('Choose at least one environment');
      return;
    }
    for (const environment of environments) {
      if (chosen.has(environment.id))
        stageValue(environment.id, name, secrets.get(environment.id)?.get(name), value);
    }
    onClose();
  }

  return (
    <Dialog title="Add a secret" onClose={onClose}>
      <form className="stack" onSubmit={submit}>
        <Field
          label="Name"
          name="name"
          required
          autoFocus
          className="mono"
          spellCheck={false}
          autoComplete="off"
          value={name}
          onChange={(e) => setName(e.target.value)}
          error={nameError}
        />
        <div className="field">
          <label htmlFor="add-secret-value">Value</label>
          <textarea
            id="add-secret-value"
            name="value"
            className="mono"
            rows={3}
            spellCheck={false}
            autoComplete="off"
          />
        </div>
        <fieldset className="stack">
          <legend>Environments</legend>
          {environments.map((environment) => (
            <label key={environment.id} className="check">
              <input
                type="checkbox"
                checked={chosen.has(environment.id)}
                onChange={(e) => {
                  const next = new Set(chosen);
                  if (e.target.checked) next.add(environment.id);
                  else next.delete(environment.id);
                  setChosen(next);
                }}
              />
              {environment.name}
              {secrets.get(environment.id)?.has(name) ? (
                <span className="muted small"> (exists: a new version)</span>
              ) : null}
            </label>
          ))}
        </fieldset>
        {existing.length > 0 ? (
          <p className="notice small">
            {name} already exists in {existing.map((e) => e.name).join(', ')}; its value there is
            replaced when you save.
          </p>
        ) : null}
        {error ? (
          <div className="error-note" role="alert">
            {error}
          </div>
        ) : null}
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary">
            Stage
          </button>
        </div>
        <p className="muted small">Nothing is sent until you review and save.</p>
      </form>
    </Dialog>
  );
}
