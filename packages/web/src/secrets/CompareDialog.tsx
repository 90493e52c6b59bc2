import { compareSecrets, type Environment } from '@coffer/sdk';
import { useId, useMemo, useState } from 'react';
import { Dialog } from '../ui/Dialog';
import { RevealButton } from '../ui/RevealButton';
import { SwapIcon } from '../ui/icons';
import { stageValue } from './Cell';
import type { SecretMeta } from './data';
import { plaintext } from './plaintext';

/** The decrypted current values of an environment (what the server holds, not what is staged). */
function valuesOf(
  environment: Environment | undefined,
  secrets: Map<string, Map<string, SecretMeta>>,
) {
  const out: Record<string, string> = {};
  if (!environment) return out;
  for (const [name, meta] of secrets.get(environment.id) ?? []) {
    const value = plaintext.get(environment.id, name, meta.version);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * Compare two environments and promote values from one to the other: names
 * missing on either side and values that differ (masked until revealed).
 * Copied values are staged for the target and encrypted for it when saved.
 */
export function CompareDialog({
  environments,
  secrets,
  onClose,
}: {
  environments: Environment[];
  secrets: Map<string, Map<string, SecretMeta>>;
  onClose: () => void;
}) {
  const [fromId, setFromId] = useState(environments[environments.length > 2 ? 1 : 0]?.id ?? '');
  const [toId, setToId] = useState(environments[environments.length > 2 ? 2 : 1]?.id ?? '');
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [shown, setShown] = useState<Set<string>>(new Set());
  const from = environments.find((e) => e.id === fromId);
  const to = environments.find((e) => e.id === toId);
  const a = useMemo(() => valuesOf(from, secrets), [from, secrets]);
  const b = useMemo(() => valuesOf(to, secrets), [to, secrets]);
  const comparison = useMemo(() => compareSecrets(a, b), [a, b]);
  const fromLabel = useId();
  const toLabel = useId();

  const toggle = (set: Set<string>, update: (s: Set<string>) => void, name: string) => {
    const next = new Set(set);
    if (!next.delete(name)) next.add(name);
    update(next);
  };
  const copy = () => {
    if (!to) return;
    for (const name of selected) {
      const value = a[name];
      if (value !== undefined) stageValue(to.id, name, secrets.get(to.id)?.get(name), value);
    }
    onClose();
  };

  const row = (name: string, kind: 'only-from' | 'only-to' | 'differs') => (
    <tr key={`${kind}/${name}`}>
      <td>
        {kind !== 'only-to' ? (
          <input
            type="checkbox"
            aria-label={`Copy ${name} to ${to?.name}`}
            checked={selected.has(name)}
            onChange={() => toggle(selected, setSelected, name)}
          />
        ) : null}
      </td>
      <td className="mono">{name}</td>
      <td>
        {kind === 'only-from'
          ? `only in ${from?.name}`
          : kind === 'only-to'
            ? `only in ${to?.name}`
            : 'differs'}
      </td>
      <td className="mono">{name in a ? (shown.has(name) ? a[name] : '••••••••') : '—'}</td>
      <td className="mono">{name in b ? (shown.has(name) ? b[name] : '••••••••') : '—'}</td>
      <td>
        <RevealButton
          shown={shown.has(name)}
          what={name}
          onToggle={() => toggle(shown, setShown, name)}
        />
      </td>
    </tr>
  );

  const differences =
    comparison.onlyInA.length + comparison.onlyInB.length + comparison.differing.length;
  return (
    <Dialog title="Compare environments" onClose={onClose} wide>
      <div className="stack">
        <div className="compare-pick">
          <label htmlFor={fromLabel}>From</label>
          <select
            id={fromLabel}
            value={fromId}
            onChange={(e) => {
              setFromId(e.target.value);
              setSelected(new Set());
            }}
          >
            {environments.map((e) => (
              <option key={e.id} value={e.id}>
                {e.name}
              </option>
            ))}
          </select>
          <button
            type="button"
            onClick={() => {
              setFromId(toId);
              setToId(fromId);
              setSelected(new Set());
            }}
            aria-label="Swap the environments"
          >
            <SwapIcon />
          </button>
          <label htmlFor={toLabel}>To</label>
          <select
            id={toLabel}
            value={toId}
            onChange={(e) => {
              setToId(e.target.value);
              setSelected(new Set());
            }}
          >
            {environments.map((e) => (
              <option key={e.id} value={e.id}>
                {e.name}
              </option>
            ))}
          </select>
        </div>
        {fromId === toId ? (
          <p className="notice">Pick two different environments.</p>
        ) : differences === 0 ? (
          <p>
            {from?.name} and {to?.name} hold the same {comparison.same.length} secrets with the same
            values.
          </p>
        ) : (
          <>
            <p>
              {comparison.onlyInA.length} only in {from?.name}, {comparison.onlyInB.length} only in{' '}
              {to?.name}, {comparison.differing.length} with different values,{' '}
              {comparison.same.length} the same.
            </p>
            <div className="table-scroll">
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">
                      <span className="visually-hidden">Select</span>
                    </th>
                    <th scope="col">Name</th>
                    <th scope="col">Difference</th>
                    <th scope="col">{from?.name}</th>
                    <th scope="col">{to?.name}</th>
                    <th scope="col">
                      <span className="visually-hidden">Reveal</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {comparison.onlyInA.map((n) => row(n, 'only-from'))}
                  {comparison.differing.map((n) => row(n, 'differs'))}
                  {comparison.onlyInB.map((n) => row(n, 'only-to'))}
                </tbody>
              </table>
            </div>
          </>
        )}
        <div className="actions">
          <button type="button" onClick={onClose}>
            Close
          </button>
          <button type="button" className="primary" disabled={selected.size === 0} onClick={copy}>
            Copy {selected.size} to {to?.name ?? '…'}
          </button>
        </div>
        <p className="muted small">Copied values are staged; review and save to write them.</p>
      </div>
    </Dialog>
  );
}
