import type { Environment } from '@coffer/sdk';
import { ENV_NAME } from '@coffer/sdk/dotenv';
import { useId, useState, type FormEvent } from 'react';
import { Dialog } from '../ui/Dialog';
import { Field } from '../ui/Field';
import { stageValue } from './Cell';
import type { SecretMeta } from './data';
import './dialogs.css';

/**
 * Adds a name with a value per environment (staged, like every edit). Each
 * field is optional: an empty one leaves that environment without the name,
 * so a development value never reaches production unless typed or chosen
 * there. "Same value in all" is an explicit choice that shows one field.
 */
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
  const [same, setSame] = useState(false);
  // Which fields hold something (the values themselves stay in the form, never in React state).
  const [filled, setFilled] = useState<Set<string>>(new Set());
  const [error, setError] = useState<string | null>(null);
  const sameId = useId();
  const nameError =
    name && !ENV_NAME.test(name)
      ? 'Letters, digits and underscores, not starting with a digit (an environment variable name)'
      : undefined;
  const chosen = environments.filter((e) => filled.has(same ? SAME : e.id));
  const existing = chosen.filter((e) => secrets.get(e.id)?.has(name));

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const valueFor = (environment: Environment) =>
      String(form.get(`value:${same ? SAME : environment.id}`) ?? '');
    if (nameError) return;
    if (chosen.length === 0) {
      setError(
        same
          ? 'Type the value'
          : 'Type a value for at least one environment (empty ones are left without the name)',
      );
      return;
    }
    for (const environment of chosen)
      stageValue(
        environment.id,
        name,
        secrets.get(environment.id)?.get(name),
        valueFor(environment),
      );
    onClose();
  }

  const set = (key: string, value: string) => {
    setFilled((current) => {
      if (current.has(key) === (value !== '')) return current;
      const next = new Set(current);
      if (value) next.add(key);
      else next.delete(key);
      return next;
    });
    setError(null);
  };

  return (
    <Dialog title="Add a secret" onClose={onClose}>
      <form className="stack add-secret" onSubmit={submit}>
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
        <label className="check" htmlFor={sameId}>
          <input
            id={sameId}
            type="checkbox"
            checked={same}
            onChange={(e) => {
              setSame(e.target.checked);
              setError(null);
            }}
          />
          Same value in all environments
        </label>
        {same ? (
          <ValueField
            label="Value"
            hint={`For ${environments.map((e) => e.name).join(', ')}`}
            name={SAME}
            onChange={(value) => set(SAME, value)}
          />
        ) : (
          <fieldset className="stack">
            <legend>Value per environment</legend>
            <p className="muted small">
              Leave a field empty to keep the name out of that environment.
            </p>
            {environments.map((environment) => (
              <ValueField
                key={environment.id}
                label={environment.name}
                hint={
                  secrets.get(environment.id)?.has(name)
                    ? 'exists: a new version replaces it'
                    : undefined
                }
                name={environment.id}
                onChange={(value) => set(environment.id, value)}
              />
            ))}
          </fieldset>
        )}
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
        <p className="muted small">
          {chosen.length === 0
            ? 'No environment gets a value yet.'
            : `Goes to ${chosen.map((e) => e.name).join(', ')}.`}{' '}
          Nothing is sent until you review and save.
        </p>
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary">
            Add to changes
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** The field of the single value when "same value in all" is chosen (never an environment id). */
const SAME = 'same';

function ValueField({
  label,
  hint,
  name,
  onChange,
}: {
  label: string;
  hint?: string | undefined;
  name: string;
  onChange: (value: string) => void;
}) {
  const id = useId();
  const hintId = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {hint ? (
        <span id={hintId} className="muted small">
          {hint}
        </span>
      ) : null}
      <textarea
        id={id}
        className="mono"
        rows={2}
        spellCheck={false}
        autoComplete="off"
        name={`value:${name}`}
        aria-describedby={hint ? hintId : undefined}
        onChange={(e) => onChange(e.target.value)}
      />
    </div>
  );
}
