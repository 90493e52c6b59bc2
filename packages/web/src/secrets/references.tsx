import { useEffect, useState, useSyncExternalStore } from 'react';
import {
  parseValue,
  readOverrides,
  resolveReferences,
  type ReferenceCatalog,
  type SecretReferenceError,
} from '@coffer/sdk';
import { client } from '../lib/client';
import { keyring } from '../lib/keyring';
import type { SecretMeta } from './data';
import { plaintext } from './plaintext';
import { staged } from './store';

// References and personal overrides in the grid. Values are resolved here, in
// the browser, from what the grid already decrypted (with staged edits, so a
// reference typed in a cell previews at once); overrides are opened with the
// user's own key and kept in this module's memory only, like `plaintext`.

/** The environments on screen and their secrets, as the grid last loaded them. */
interface GridEnvironment {
  id: string;
  slug: string;
  secrets: Map<string, SecretMeta> | undefined;
}
let grid: GridEnvironment[] = [];
let revision = 0;
const listeners = new Set<() => void>();
const notify = () => {
  revision++;
  listeners.forEach((listener) => listener());
};

/** The grid tells this module what it shows (after each load). */
export function registerGrid(environments: GridEnvironment[]): void {
  const same =
    environments.length === grid.length &&
    environments.every((e, i) => e.id === grid[i]!.id && e.secrets === grid[i]!.secrets);
  if (same) return;
  grid = environments;
  notify();
}

/** The values of an environment as the team will see them: stored, with staged edits applied. */
function teamValues(environment: GridEnvironment): Record<string, string> | null {
  if (!environment.secrets) return null;
  const values: Record<string, string> = {};
  for (const [name, meta] of environment.secrets) {
    if (!meta.readable) return null;
    const value = plaintext.get(environment.id, name, meta.version);
    if (value !== undefined) values[name] = value;
  }
  for (const [environmentId, name, change] of staged.all()) {
    if (environmentId !== environment.id) continue;
    if (change.kind === 'set') values[name] = change.value;
    else delete values[name];
  }
  return values;
}

export interface Preview {
  /** The resolved value, or null when it does not resolve. */
  value: string | null;
  /** Why it does not resolve (names secrets and references, never values). */
  reason: string | null;
}

/**
 * How `name`'s value in `environmentId` resolves with the values on screen.
 * A reference into another project is not previewed (the browser holds that
 * project's keys only once it is opened): it says so instead.
 */
export async function previewOf(environmentId: string, name: string): Promise<Preview | null> {
  const home = grid.find((e) => e.id === environmentId);
  const values = home && teamValues(home);
  if (!home || !values || values[name] === undefined || !values[name].includes('${')) return null;
  const { values: resolved, errors } = await resolveReferences(values, {
    key: home.id,
    environment: [home.slug, home.id],
    load: async ({ project, environment }) => {
      if (project !== null) return null;
      const other = grid.find((e) => e.slug === environment || e.id === environment);
      const otherValues = other && teamValues(other);
      return other && otherValues ? { key: other.id, values: otherValues } : null;
    },
  });
  const error: SecretReferenceError | undefined = errors[name];
  if (!error) return { value: resolved[name]!, reason: null };
  const elsewhere = error.code === 'reference_unreadable' && error.reference.includes('/');
  return {
    value: null,
    reason: elsewhere
      ? `${error.reference} is in another project: resolved when read (coffer run, the SDK), not previewed here`
      : error.message,
  };
}

/** The preview of a cell, recomputed when the grid's data or staged edits change. */
export function usePreview(environmentId: string, name: string, enabled: boolean): Preview | null {
  const stagedRevision = useSyncExternalStore(staged.subscribe, staged.getRevision);
  const gridRevision = useSyncExternalStore(subscribe, () => revision);
  const [preview, setPreview] = useState<Preview | null>(null);
  useEffect(() => {
    if (!enabled) {
      setPreview(null);
      return;
    }
    let current = true;
    void previewOf(environmentId, name).then((p) => current && setPreview(p));
    return () => {
      current = false;
    };
  }, [environmentId, name, enabled, stagedRevision, gridRevision]);
  return preview;
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Raw text with each `${…}` marked (an invalid one too), for a revealed cell and the review. */
export function ReferenceText({ value }: { value: string }) {
  if (!value.includes('${')) return <>{value}</>;
  let parts;
  try {
    parts = parseValue(value);
  } catch {
    return <>{value}</>;
  }
  // parseValue turns $${ into ${ in literals: show the raw text between references instead.
  const out: React.ReactNode[] = [];
  let at = 0;
  for (const part of parts) {
    if (typeof part === 'string') continue;
    if (part.start > at) out.push(value.slice(at, part.start));
    out.push(
      <span key={part.start} className="reference">
        {part.text}
      </span>,
    );
    at = part.end;
  }
  if (at < value.length) out.push(value.slice(at));
  return <>{out}</>;
}

/** Names the user can refer to from `environmentId`: its own and every other readable environment's. */
export function catalogFor(environmentId: string): ReferenceCatalog {
  const names = (e: GridEnvironment) => [...(e.secrets?.keys() ?? [])];
  const home = grid.find((e) => e.id === environmentId);
  return {
    names: home ? names(home) : [],
    environments: Object.fromEntries(
      grid
        .filter(
          (e) =>
            e.id !== environmentId && [...(e.secrets?.values() ?? [])].every((m) => m.readable),
        )
        .map((e) => [e.slug, names(e)]),
    ),
  };
}

// ---- Personal overrides ----------------------------------------------------------

/** environment id → name → the user's own value; in memory only, dropped on lock. */
const overrides = new Map<string, Map<string, string>>();
let overridesProject: string | null = null;
keyring.onLock(() => {
  overrides.clear();
  overridesProject = null;
  notify();
});

/** Opens the user's overrides of a project with their own key (once per project until a lock). */
export async function loadOverrides(projectId: string): Promise<void> {
  if (overridesProject === projectId) return;
  const vault = await keyring.vault(projectId);
  const owner = await vault.overrideKey();
  if (!owner) return;
  const mine = await readOverrides(client, projectId, owner);
  overrides.clear();
  for (const [environmentId, values] of mine)
    overrides.set(environmentId, new Map(Object.entries(values)));
  overridesProject = projectId;
  notify();
}

/** The user's own value for a cell, if they set one. */
export function useOverride(environmentId: string, name: string): string | undefined {
  useSyncExternalStore(subscribe, () => revision);
  return overrides.get(environmentId)?.get(name);
}
