/**
 * A write's result often repeats long strings of its request's body: a
 * secret write answers with the secret, whose value is the ciphertext the
 * client sent. A repeat of the request sends the same body again (its
 * fingerprint says so), so the stored result need not hold them: they are
 * lifted out before it is sealed and put back from the repeat's body.
 * About 1 KB less per key row of a secret write, and the ciphertext is not
 * stored a second time.
 */

/** Shorter strings are left in place: taking them out would save little. */
const MIN_LENGTH = 32;

/** Each string's index in `strings`, its first where it is there twice. */
function firstIndex(strings: readonly string[]): Map<string, number> {
  const index = new Map<string, number>();
  strings.forEach((s, i) => index.has(s) || index.set(s, i));
  return index;
}

/** Where in the result a body string was: property names and array indices. */
type Path = Array<string | number>;
/** A lifted string: where it was, and its index among the body's strings (`bodyStrings`). */
export type BodyRef = [Path, number];

type Container = Record<string, unknown> | unknown[];

/** Arrays and plain objects: what JSON and the services' results are made of. */
function isContainer(value: unknown): value is Container {
  if (Array.isArray(value)) return true;
  if (value === null || typeof value !== 'object') return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * The long strings of a parsed JSON body, in the order a walk of it meets them:
 * the same list for every body that serializes to the same JSON.
 */
export function bodyStrings(body: unknown, found: string[] = []): string[] {
  if (typeof body === 'string') {
    if (body.length >= MIN_LENGTH) found.push(body);
  } else if (isContainer(body)) {
    for (const item of Object.values(body)) bodyStrings(item, found);
  }
  return found;
}

/**
 * `value` with every string that is one of `strings` replaced by null, and
 * where each was. Containers on the way to a replaced string are copied;
 * `value` itself is not changed (it is also the answer to this request).
 */
export function liftBodyStrings(
  value: unknown,
  strings: readonly string[],
): { value: unknown; refs: BodyRef[] } {
  const refs: BodyRef[] = [];
  if (strings.length === 0) return { value, refs };
  const index = firstIndex(strings);
  const path: Path = [];
  const lift = (node: unknown): unknown => {
    if (typeof node === 'string') {
      const i = index.get(node);
      if (i === undefined) return node;
      refs.push([[...path], i]);
      return null;
    }
    if (!isContainer(node)) return node;
    let copy: Container | null = null;
    for (const key of Object.keys(node)) {
      const slot = Array.isArray(node) ? Number(key) : key;
      const item = (node as Record<string, unknown>)[key];
      path.push(slot);
      const lifted = lift(item);
      path.pop();
      if (lifted === item) continue;
      copy ??= Array.isArray(node) ? [...node] : { ...node };
      (copy as Record<string, unknown>)[key] = lifted;
    }
    return copy ?? node;
  };
  return { value: lift(value), refs };
}

/** Puts the lifted strings back into `value` (a freshly deserialized copy), from the repeat's body. */
export function restoreBodyStrings(value: unknown, refs: BodyRef[], strings: readonly string[]) {
  let root = value;
  for (const [path, i] of refs) {
    const text = strings[i];
    if (text === undefined) throw new Error('the stored result names a string the body lacks');
    if (path.length === 0) {
      root = text;
      continue;
    }
    let holder = root as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) holder = holder[key] as Record<string | number, unknown>;
    holder[path[path.length - 1]!] = text;
  }
  return root;
}

/**
 * A result stored in clear is JSON in which each string a repeat of the
 * request knows as well as its first attempt is named by its index among
 * `requestStrings` instead of held: a string of NUL and the index. (A string
 * of the result that starts with NUL gets another in front.) Shorter strings
 * stay in place: their mark would be as long.
 */
const MARK = '\u0000';
const MIN_MARKED = 8;

/**
 * What a repeat of a request knows as well as its first attempt, in an order
 * both compute alike: the long strings of its body (the same body, by the
 * fingerprint), the segments of its URL's path (the same URL) and the instant
 * it was handled at (the first attempt's, kept in the key's row as
 * `created_at`). A secret write's answer is mostly these: its value, its name,
 * its environment and its times.
 */
export function requestStrings(body: unknown, url: string, at: string): string[] {
  const path = url
    .split('?', 1)[0]!
    .split('/')
    .map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        return segment;
      }
    });
  return [...bodyStrings(body), ...path, at];
}

/** Thrown inside `toClearJson` at the first value JSON cannot hold exactly. */
const NOT_JSON = Symbol('not JSON');

/**
 * `value` as JSON with the strings of `strings` marked (above), or null when
 * `value` holds anything JSON would not give back as it was (undefined, a
 * Date, a Buffer, a class instance, NaN, a cycle): the caller then stores it
 * another way.
 * `value` itself is not changed (it is also the answer to this request).
 */
export function toClearJson(value: unknown, strings: readonly string[]): string | null {
  const index = firstIndex(strings);
  const mark = (node: unknown): unknown => {
    switch (typeof node) {
      case 'string': {
        const i = node.length >= MIN_MARKED ? index.get(node) : undefined;
        if (i !== undefined) return MARK + i;
        return node.startsWith(MARK) ? MARK + node : node;
      }
      case 'number':
        if (!Number.isFinite(node)) throw NOT_JSON;
        return node;
      case 'boolean':
        return node;
      case 'object': {
        if (node === null) return null;
        if (!isContainer(node)) throw NOT_JSON;
        if (Array.isArray(node)) {
          const items: unknown[] = [];
          for (let i = 0; i < node.length; i++) items.push(mark(node[i]));
          return items;
        }
        // No prototype: a key named `__proto__` stays a key.
        const copy = Object.create(null) as Record<string, unknown>;
        for (const key of Object.keys(node)) copy[key] = mark(node[key]);
        return copy;
      }
      default:
        throw NOT_JSON;
    }
  };
  try {
    return JSON.stringify(mark(value));
  } catch {
    return null; // NOT_JSON, or a cycle (too deep): stored another way
  }
}

/** The value `toClearJson` stored, its marked strings put back from the repeat's `strings`. */
export function fromClearJson(text: string, strings: readonly string[]): unknown {
  return JSON.parse(text, (_key, node: unknown) => {
    if (typeof node !== 'string' || !node.startsWith(MARK)) return node;
    if (node.startsWith(MARK, 1)) return node.slice(1);
    const found = strings[Number(node.slice(1))];
    if (found === undefined) throw new Error('the stored result names a string the request lacks');
    return found;
  });
}
