// Comparing two environments ("compare and promote"): the CLI's `secrets diff`
// and the dashboard share this, so both call the same names missing or differing.
import { listSecrets, type SecretScope } from './client/secrets.js';

/** How two sets of decrypted secrets differ; every list sorted by name. */
export interface SecretComparison {
  /** Names only the first set holds. */
  onlyInA: string[];
  /** Names only the second set holds. */
  onlyInB: string[];
  /** Names in both whose values are not identical. */
  differing: string[];
  /** Names in both with identical values. */
  same: string[];
}

/** A comparison of two environments with the decrypted values it was made from. */
export interface EnvironmentComparison extends SecretComparison {
  a: Record<string, string>;
  b: Record<string, string>;
}

// Code-unit order, not localeCompare: the same order in Node and every browser,
// whatever the user's locale.
const byName = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);

/**
 * Compares two `{ NAME: value }` maps. Values are compared exactly as stored:
 * a trailing space or another Unicode normalisation of the same text differs,
 * because the application reading the secret sees different bytes.
 */
export function compareSecrets(
  a: Record<string, string>,
  b: Record<string, string>,
): SecretComparison {
  const result: SecretComparison = { onlyInA: [], onlyInB: [], differing: [], same: [] };
  // Own keys only: a secret may be named `constructor` or `toString`.
  for (const name of Object.keys(a)) {
    if (!Object.hasOwn(b, name)) result.onlyInA.push(name);
    else if (a[name] === b[name]) result.same.push(name);
    else result.differing.push(name);
  }
  for (const name of Object.keys(b)) if (!Object.hasOwn(a, name)) result.onlyInB.push(name);
  result.onlyInA.sort(byName);
  result.onlyInB.sort(byName);
  result.differing.sort(byName);
  result.same.sort(byName);
  return result;
}

/**
 * Lists and decrypts both environments (ids or slugs) of `scope`'s project
 * and compares them. Needs read access to the values of both. Values are the
 * stored text (references unresolved, no personal overrides): what a promotion
 * would copy.
 */
const STORED = { raw: true, overrides: false } as const;

export async function compareEnvironments(
  scope: SecretScope,
  envA: string,
  envB: string,
): Promise<EnvironmentComparison> {
  const [a, b] = await Promise.all([
    listSecrets(scope, envA, STORED),
    listSecrets(scope, envB, STORED),
  ]);
  return { ...compareSecrets(a, b), a, b };
}
