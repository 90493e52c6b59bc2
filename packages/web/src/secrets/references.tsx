import { useEffect, useState, useSyncExternalStore, type ReactNode } from 'react';
import type { ReferenceCatalog } from '@coffer/sdk/references';
import { keyring } from '../lib/keyring';
import type { SecretMeta } from './data';
import { plaintext } from './plaintext';
import { staged } from './store';
import './references.css';

// References and personal overrides in the grid. Values are resolved here, in
// the browser, from what the grid already decrypted (with staged edits, so a
// reference typed in a cell previews at once); overrides are opened with the
// user's own key and kept in this module's memory only, like `plaintext`.
// The resolver itself loads on first use (reference-engine.ts).

const engine = () => import('./reference-engine');

/** The environments on screen and their secrets, as the grid last loaded them. */
export interface GridEnvironment {
  id: string;
  slug: string;
  secrets: Map<string, SecretMeta> | undefined;
}
let grid: GridEnvironment[] = [];
let revision = 0;
const listeners = new Set<() => void>();
const notify = () => {
  revision++;
  resolutions.clear();
  listeners.forEach((listener) => listener());
};
const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};
staged.subscribe(() => resolutions.clear());

/** The grid tells this module what it shows (after each load). */
export function registerGrid(environments: GridEnvironment[]): void {
  const same =
    environments.length === grid.length &&
    environments.every((e, i) => e.id === grid[i]!.id && e.secrets === grid[i]!.secrets);
  if (same) return;
  grid = environments;
  notify();
}

/** An environment's values as the team will see them: stored, with staged edits applied. */
function teamValues(environment: GridEnvironment) {
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
  return { id: environment.id, slug: environment.slug, values };
}

export interface Preview {
  /** The resolved value, or null when it does not resolve. */
  value: string | null;
  /** Why it does not resolve (names secrets and references, never values). */
  reason: string | null;
  /** Where the references are in the raw value. */
  ranges: Array<[number, number]>;
}

/** One resolution per environment until the grid or a staged edit changes. */
const resolutions = new Map<string, Promise<Map<string, Preview>>>();

function resolutionOf(environmentId: string): Promise<Map<string, Preview>> {
  let pending = resolutions.get(environmentId);
  if (!pending) {
    pending = (async () => {
      const { resolveEnvironment, referenceRanges } = await engine();
      const home = grid.find((e) => e.id === environmentId);
      const homeValues = home && teamValues(home);
      const out = new Map<string, Preview>();
      if (!homeValues) return out;
      const others = grid
        .filter((e) => e.id !== environmentId)
        .map(teamValues)
        .filter((e): e is NonNullable<typeof e> => e !== null);
      const { values, errors } = await resolveEnvironment(homeValues, others);
      for (const [name, raw] of Object.entries(homeValues.values)) {
        if (!raw.includes('${')) continue;
        const error = errors[name];
        // Another project's keys are not opened here: say so rather than "cannot be read".
        const elsewhere = error?.code === 'reference_unreadable' && error.reference.includes('/');
        out.set(name, {
          value: error ? null : values[name]!,
          reason: !error
            ? null
            : elsewhere
              ? `${error.reference} is in another project: resolved when read (coffer run, the SDK), not previewed here`
              : error.message,
          ranges: referenceRanges(raw),
        });
      }
      return out;
    })();
    resolutions.set(environmentId, pending);
  }
  return pending;
}

/** How a cell's value resolves; null while it has no reference (or before the engine loaded). */
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
    void resolutionOf(environmentId).then((r) => current && setPreview(r.get(name) ?? null));
    return () => {
      current = false;
    };
  }, [environmentId, name, enabled, stagedRevision, gridRevision]);
  return preview;
}

/** Raw text with each `${…}` marked. */
export function ReferenceText({
  value,
  ranges,
}: {
  value: string;
  ranges: Array<[number, number]> | undefined;
}) {
  if (!ranges?.length) return <>{value}</>;
  const out: ReactNode[] = [];
  let at = 0;
  for (const [start, end] of ranges) {
    if (start > at) out.push(value.slice(at, start));
    out.push(
      <mark key={start} className="reference">
        {value.slice(start, end)}
      </mark>,
    );
    at = end;
  }
  if (at < value.length) out.push(value.slice(at));
  return <>{out}</>;
}

/** Names the user can refer to from `environmentId`: its own and every other readable environment's. */
export function catalogFor(environmentId: string): ReferenceCatalog {
  const names = (e: GridEnvironment) => [...(e.secrets?.keys() ?? [])];
  const readable = (e: GridEnvironment) =>
    [...(e.secrets?.values() ?? [])].every((m) => m.readable);
  const home = grid.find((e) => e.id === environmentId);
  return {
    names: home ? names(home) : [],
    environments: Object.fromEntries(
      grid.filter((e) => e.id !== environmentId && readable(e)).map((e) => [e.slug, names(e)]),
    ),
  };
}

/** Completions for the reference being typed (see the SDK's completeReference). */
export async function completionsFor(environmentId: string, beforeCursor: string) {
  if (!beforeCursor.includes('${')) return null;
  const { completions } = await engine();
  return completions(beforeCursor, catalogFor(environmentId));
}

// ---- Personal overrides ----------------------------------------------------------

/** environment id → name → the user's own value; in memory only, dropped on lock. */
let overrides = new Map<string, Record<string, string>>();
let overridesProject: string | null = null;
keyring.onLock(() => {
  overrides = new Map();
  overridesProject = null;
  notify();
});

/** Opens the user's overrides of a project with their own key (once per project until a lock). */
export async function loadOverrides(projectId: string): Promise<void> {
  if (overridesProject === projectId) return;
  overridesProject = projectId;
  const { openOverrides } = await engine();
  try {
    overrides = await openOverrides(projectId);
  } catch {
    overridesProject = null; // shown without overrides; tried again on the next visit
    return;
  }
  notify();
}

/** The user's own value for a cell, if they set one. */
export function useOverride(environmentId: string, name: string): string | undefined {
  useSyncExternalStore(subscribe, () => revision);
  return overrides.get(environmentId)?.[name];
}

/** After the user set (or, with undefined, removed) their override: the grid shows it at once. */
export function applyOwnOverride(
  environmentId: string,
  name: string,
  value: string | undefined,
): void {
  const next = new Map(overrides);
  const values = { ...next.get(environmentId) };
  if (value === undefined) delete values[name];
  else values[name] = value;
  next.set(environmentId, values);
  overrides = next;
  notify();
}
