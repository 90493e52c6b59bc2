import { useSyncExternalStore } from 'react';
import { openFromSelf, sealToSelf, type SelfSealed } from '@coffer/sdk';
import { keyring } from '../lib/keyring';

/**
 * Staged changes of the secrets grid: edits are local (answered within a frame)
 * until Review sends one atomic batch per environment. Each entry remembers the
 * version it was based on, sent as `expected_version` (0: must not exist yet).
 * A module store read through per-cell selectors, so staging one cell re-renders
 * that cell, not the grid. Plaintext lives here only until saved or discarded;
 * a lock seals it (below).
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
  size = () => this.entries.size;

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

/** The project the staged changes belong to, and its environments' names (for messages). */
let stagedProject: string | null = null;
const environmentNames = new Map<string, string>();

/**
 * The grid of `projectId` is open: staged changes of another project (none,
 * unless the leave guard was bypassed) are dropped, the names are remembered.
 */
export function bindProject(projectId: string, environments: { id: string; name: string }[]): void {
  if (stagedProject !== projectId && staged.all().length > 0) staged.clear();
  stagedProject = projectId;
  for (const environment of environments) environmentNames.set(environment.id, environment.name);
}

export const stagedProjectId = () => stagedProject;
export const environmentName = (environmentId: string) =>
  environmentNames.get(environmentId) ?? 'an environment';

/** "staging and production": the environments holding staged changes, in column order. */
export function stagedEnvironmentNames(): string[] {
  const ids = new Set(staged.all().map(([e]) => e));
  // In the grid's column order (known environments), then any other.
  const known = [...environmentNames.keys()].filter((id) => ids.has(id));
  return [...known, ...[...ids].filter((id) => !environmentNames.has(id))].map(environmentName);
}

/** Drops every staged change and returns them, for Undo. */
export function discardAll(): [string, string, StagedChange][] {
  const dropped = staged.all();
  staged.clear();
  return dropped;
}

/** Puts changes back (Undo after "Discard all"); a cell staged again meanwhile keeps its newer change. */
export function restoreChanges(changes: [string, string, StagedChange][]): void {
  for (const [environmentId, name, change] of changes)
    if (!staged.get(environmentId, name)) staged.set(environmentId, name, change);
}

/*
 * Staged changes survive a lock sealed: just before the keys go, they are
 * serialised and sealed to the user's own X25519 public key (a fresh
 * XChaCha20-Poly1305 key, sealed with crypto_box_seal; see the SDK's
 * sealToSelf), the plaintext store is cleared, and only these bytes stay, in
 * this module variable (never React state, never a storage API). The unlock
 * opens them with the private key and puts the changes back; signing out, or
 * another user unlocking, drops them unopened.
 */
const SEAL_PURPOSE = 'dashboard staged changes v1';
interface SealedChanges {
  owner: string;
  count: number;
  box: SelfSealed;
}
interface SealedPayload {
  projectId: string;
  changes: { environmentId: string; environment: string; name: string; change: StagedChange }[];
}
let sealed: SealedChanges | null = null;
const sealedListeners = new Set<() => void>();
const sealedChanged = () => sealedListeners.forEach((listener) => listener());

/** How many staged changes are sealed while locked (0: none). */
export function useSealedCount(): number {
  return useSyncExternalStore(
    (listener) => {
      sealedListeners.add(listener);
      return () => sealedListeners.delete(listener);
    },
    () => sealed?.count ?? 0,
  );
}

/** Signing out: the sealed changes go unopened. */
export function dropSealed(): void {
  sealed = null;
  sealedChanged();
}

keyring.beforeLock((keys, owner) => {
  const all = staged.all();
  if (all.length === 0 || !stagedProject) return;
  const payload: SealedPayload = {
    projectId: stagedProject,
    changes: all.map(([environmentId, name, change]) => ({
      environmentId,
      environment: environmentName(environmentId),
      name,
      change,
    })),
  };
  sealed = {
    owner,
    count: all.length,
    box: sealToSelf(keys.encryption.publicKey, SEAL_PURPOSE, owner, JSON.stringify(payload)),
  };
  sealedChanged();
});

keyring.onLock(() => {
  staged.clear();
  revealed.clear();
});

/** What an unlock brought back, for the note on the grid (names and environments, never values). */
export interface Restored {
  projectId: string;
  restored: number;
  /** Changes that no longer apply: "API_KEY in qa" and why. */
  dropped: { name: string; environment: string; reason: string }[];
}
let restoredNote: Restored | null = null;
const noteListeners = new Set<() => void>();
const noteChanged = () => noteListeners.forEach((listener) => listener());

export function useRestoredNote(): Restored | null {
  return useSyncExternalStore(
    (listener) => {
      noteListeners.add(listener);
      return () => noteListeners.delete(listener);
    },
    () => restoredNote,
  );
}
export function dismissRestoredNote(): void {
  restoredNote = null;
  noteChanged();
}

keyring.onUnlock((keys, owner) => {
  const held = sealed;
  sealed = null;
  if (!held) return;
  sealedChanged();
  if (held.owner !== owner) return;
  try {
    restore(openFromSelf(keys.encryption, SEAL_PURPOSE, owner, held.box));
  } catch {
    // Altered, or not sealed for these keys: dropped unopened.
  }
});

function restore(text: string): void {
  const payload = JSON.parse(text) as SealedPayload;
  stagedProject = payload.projectId;
  for (const { environmentId, environment, name, change } of payload.changes) {
    environmentNames.set(environmentId, environment);
    staged.set(environmentId, name, change);
  }
  restoredNote = { projectId: payload.projectId, restored: payload.changes.length, dropped: [] };
  noteChanged();
}

/**
 * Once the grid knows the project as it is now: staged changes for an
 * environment that is gone, or in a project the user may no longer write to,
 * are dropped and named in the note.
 */
export function settleRestored(
  projectId: string,
  environmentIds: Set<string>,
  canWrite: boolean,
): void {
  if (!restoredNote || restoredNote.projectId !== projectId) return;
  const dropped: Restored['dropped'] = [];
  for (const [environmentId, name] of staged.all()) {
    const reason = !canWrite
      ? 'you can no longer change values in this project'
      : !environmentIds.has(environmentId)
        ? 'the environment no longer exists'
        : null;
    if (reason) {
      dropped.push({ name, environment: environmentName(environmentId), reason });
      staged.set(environmentId, name, undefined);
    }
  }
  if (dropped.length === 0) return;
  restoredNote = {
    projectId,
    restored: restoredNote.restored - dropped.length,
    dropped: [...restoredNote.dropped, ...dropped],
  };
  noteChanged();
}

/** "Review now" from outside the grid (the lock countdown): the grid opens Review when it mounts. */
let reviewRequested = false;
const reviewListeners = new Set<() => void>();
export function requestReview(): void {
  reviewRequested = true;
  reviewListeners.forEach((listener) => listener());
}
/** Calls `open` now if Review was requested before the grid mounted, and on every later request. */
export function onReviewRequest(open: () => void): () => void {
  const take = () => {
    if (!reviewRequested) return;
    reviewRequested = false;
    open();
  };
  take();
  reviewListeners.add(take);
  return () => reviewListeners.delete(take);
}

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

/** The names with a staged change, joined by newlines ("" while `enabled` is false). */
export function useStagedNames(enabled: boolean): string {
  return useSyncExternalStore(staged.subscribe, () =>
    enabled ? [...new Set(staged.all().map(([, name]) => name))].sort().join('\n') : '',
  );
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
