import { useSyncExternalStore } from 'react';
import { keyring } from '../lib/keyring';

/**
 * Staged changes of the secrets grid: edits are local (answered within a frame)
 * until Review sends one atomic batch per environment. Each entry remembers the
 * version it was based on, sent as `expected_version` (0: must not exist yet).
 * A module store read through per-cell selectors, so staging one cell re-renders
 * that cell, not the grid. Plaintext lives here only until saved or discarded,
 * and is dropped on lock.
 */
export type StagedChange =
  { kind: 'set'; value: string; baseVersion: number } | { kind: 'delete'; baseVersion: number };

type Listener = () => void;

const cellKey = (environmentId: string, name: string) => `${environmentId}\u0000${name}`;

class Store<T> {
  private readonly entries = new Map<string, T>();
  private readonly listeners = new Set<Listener>();
  private revision = 0;

  subscribe = (listener: Listener) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };
  get = (environmentId: string, name: string): T | undefined =>
    this.entries.get(cellKey(environmentId, name));
  getRevision = () => this.revision;

  set(environmentId: string, name: string, value: T | undefined): void {
    const k = cellKey(environmentId, name);
    if (value === undefined) this.entries.delete(k);
    else this.entries.set(k, value);
    this.changed();
  }
  clear(environmentId?: string): void {
    if (environmentId === undefined) this.entries.clear();
    else
      for (const k of [...this.entries.keys()])
        if (k.startsWith(`${environmentId}\u0000`)) this.entries.delete(k);
    this.changed();
  }
  /** Every entry as [environmentId, name, value]. */
  all(): [string, string, T][] {
    return [...this.entries].map(([k, v]) => {
      const [environmentId = '', name = ''] = k.split('\u0000');
      return [environmentId, name, v];
    });
  }
  private changed(): void {
    this.revision++;
    this.listeners.forEach((listener) => listener());
  }
}

export const staged = new Store<StagedChange>();
/** Cells whose value is shown; everything else is masked. */
export const revealed = new Store<true>();

keyring.onLock(() => {
  staged.clear();
  revealed.clear();
});

export function useStaged(environmentId: string, name: string): StagedChange | undefined {
  return useSyncExternalStore(staged.subscribe, () => staged.get(environmentId, name));
}

export function useRevealed(environmentId: string, name: string): boolean {
  return useSyncExternalStore(revealed.subscribe, () => revealed.get(environmentId, name) === true);
}

/** "3 changes in 2 environments" for the pending-changes bar. */
export function useStagedSummary(): { changes: number; environments: number } {
  const revision = useSyncExternalStore(staged.subscribe, staged.getRevision);
  void revision;
  const all = staged.all();
  return { changes: all.length, environments: new Set(all.map(([e]) => e)).size };
}

/**
 * Names staged for a set that `known` does not have yet (new rows), joined by
 * newlines: the grid re-renders when a new name is staged, not on every edit.
 */
export function useNewStagedNames(known: (name: string) => boolean): string {
  return useSyncExternalStore(staged.subscribe, () =>
    [
      ...new Set(
        staged
          .all()
          .filter(([, name, change]) => change.kind === 'set' && !known(name))
          .map(([, name]) => name),
      ),
    ]
      .sort()
      .join('\n'),
  );
}
