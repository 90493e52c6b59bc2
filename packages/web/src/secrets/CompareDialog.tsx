import type { Environment } from '@coffer/sdk';
import { compareSecrets } from '@coffer/sdk/compare';
import { useId, useMemo, useState } from 'react';
import { Dialog } from '../ui/Dialog';
import { RevealButton } from '../ui/RevealButton';
import { SwapIcon } from '../ui/icons';
import { stageValue } from './Cell';
import type { SecretMeta } from './data';
import { plaintext } from './plaintext';
import { staged } from './store';
import './dialogs.css';

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
 * Copied values are staged for the target and encrypted for it when saved;
 * names only in the target can be staged for deletion there.
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
  const onlyTo = new Set(comparison.onlyInB);
  const selectable = [...comparison.onlyInA, ...comparison.differing, ...comparison.onlyInB];
  const copies = [...selected].filter((name) => !onlyTo.has(name));
  const deletions = [...selected].filter((name) => onlyTo.has(name));
  const stage = () => {
    if (!to) return;
    for (const name of copies) {
      const value = a[name];
      if (value !== undefined) stageValue(to.id, name, secrets.get(to.id)?.get(name), value);
    }
    for (const name of deletions) {
      const meta = secrets.get(to.id)?.get(name);
      if (meta) staged.set(to.id, name, { kind: 'delete', baseVersion: meta.version });
    }
    onClose();
  };
  const label =
    selected.size === 0
      ? 'Select secrets to copy'
      : deletions.length === 0
        ? `Copy ${copies.length} to ${to?.name ?? '…'}`
        : copies.length === 0
          ? `Delete ${deletions.length} from ${to?.name ?? '…'}`
          : `Copy ${copies.length} and delete ${deletions.length} in ${to?.name ?? '…'}`;

  const item = (name: string, kind: 'only-from' | 'only-to' | 'differs') => (
    <li key={`${kind}/${name}`} className="compare-item" data-kind={kind}>
      <label className="check compare-name">
        <input
          type="checkbox"
          aria-label={
            kind === 'only-to' ? `Delete ${name} from ${to?.name}` : `Copy ${name} to ${to?.name}`
          }
          checked={selected.has(name)}
          onChange={() => toggle(selected, setSelected, name)}
        />
        <span className="mono review-name">{name}</span>
      </label>
      <span className="compare-kind">
        {kind === 'only-from'
          ? `only in ${from?.name}`
          : kind === 'only-to'
            ? `only in ${to?.name}`
            : 'differs'}
      </span>
      {(
        [
          [from, a],
          [to, b],
        ] as const
      ).map(([environment, values], i) => (
        <span key={i} className={i === 0 ? 'compare-from' : 'compare-to'}>
          <span className="compare-env small muted">{environment?.name} </span>
          <code className="mono">
            {name in values ? (
              shown.has(name) ? (
                values[name]
              ) : (
                '••••••••'
              )
            ) : (
              <span className="muted">not there</span>
            )}
          </code>
        </span>
      ))}
      <span className="compare-reveal">
        <RevealButton
          shown={shown.has(name)}
          what={name}
          onToggle={() => toggle(shown, setShown, name)}
        />
      </span>
    </li>
  );

  const differences =
    comparison.onlyInA.length + comparison.onlyInB.length + comparison.differing.length;
  const allSelected = selectable.length > 0 && selected.size === selectable.length;
  return (
    <Dialog title="Compare environments" onClose={onClose} wide>
      <div className="stack compare">
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
            <div className="review-toolbar">
              <label className="check">
                <input
                  type="checkbox"
                  checked={allSelected}
                  ref={(box) => {
                    if (box) box.indeterminate = selected.size > 0 && !allSelected;
                  }}
                  onChange={() => setSelected(allSelected ? new Set() : new Set(selectable))}
                />
                Select all
              </label>
              {selected.size > 0 ? (
                <button type="button" className="link" onClick={() => setSelected(new Set())}>
                  Select none
                </button>
              ) : null}
            </div>
            <div className="compare-head" aria-hidden="true">
              <span>Name</span>
              <span>Difference</span>
              <span>{from?.name}</span>
              <span>{to?.name}</span>
            </div>
            <ul className="review-list compare-list">
              {comparison.onlyInA.map((n) => item(n, 'only-from'))}
              {comparison.differing.map((n) => item(n, 'differs'))}
              {comparison.onlyInB.map((n) => item(n, 'only-to'))}
            </ul>
          </>
        )}
        <div className="dialog-footer">
          <p className="muted small">
            Copies and deletions are staged in {to?.name ?? 'the target'}: nothing is saved until
            you review and save.
          </p>
          <div className="actions">
            <button type="button" onClick={onClose}>
              Close
            </button>
            <button
              type="button"
              className="primary"
              disabled={selected.size === 0}
              onClick={stage}
            >
              {label}
            </button>
          </div>
        </div>
      </div>
    </Dialog>
  );
}
