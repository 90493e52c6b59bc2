import { readOverrides } from '@coffer/sdk';
import {
  completeReference,
  parseValue,
  resolveReferences,
  type ReferenceCatalog,
  type Resolution,
} from '@coffer/sdk/references';
import { client } from '../lib/client';
import { keyring } from '../lib/keyring';

// The SDK's resolver, override reading and completion, loaded when the grid
// first meets a `${` or opens overrides (not with the first visit).

export interface EnvironmentValues {
  id: string;
  slug: string;
  values: Record<string, string>;
}

/** Every value of `home` resolved with the other environments on screen (same project only). */
export function resolveEnvironment(
  home: EnvironmentValues,
  others: EnvironmentValues[],
): Promise<Resolution> {
  return resolveReferences(home.values, {
    key: home.id,
    environment: [home.slug, home.id],
    load: async ({ project, environment }) => {
      if (project !== null) return null;
      const other = others.find((e) => e.slug === environment || e.id === environment);
      return other ? { key: other.id, values: other.values } : null;
    },
  });
}

/** Where the `${…}` of a raw value are, as [start, end) offsets; none for an invalid value. */
export function referenceRanges(value: string): Array<[number, number]> {
  try {
    return parseValue(value).flatMap((p) => (typeof p === 'string' ? [] : [[p.start, p.end]]));
  } catch {
    return [];
  }
}

export const completions = (beforeCursor: string, catalog: ReferenceCatalog) =>
  completeReference(beforeCursor, catalog);

/** The user's overrides of a project, opened with their own key. */
export async function openOverrides(
  projectId: string,
): Promise<Map<string, Record<string, string>>> {
  const vault = await keyring.vault(projectId);
  return readOverrides(client, projectId, await vault.overrideKey());
}
