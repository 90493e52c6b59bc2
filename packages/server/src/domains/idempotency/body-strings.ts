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
 * `requestStrings` instead of held: a string of a mark and the index, the mark
 * NUL (or, in the shaped format, `SHAPED_MARK`). A string of the result that
 * starts with the mark gets another in front. Shorter strings stay in place:
 * their mark would be as long.
 */
const NUL_MARK = '\u0000';
/**
 * The mark of the shaped format (`toShaped`): DEL, which JSON text holds as
 * one byte where NUL takes six (`\u0000`).
 */
export const SHAPED_MARK = '\u007f';
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
  const strings = bodyStrings(body);
  const query = url.indexOf('?');
  const path = query < 0 ? url : url.slice(0, query);
  // The segments `path.split('/')` gives, each decoded where it can be.
  for (let start = 0; ;) {
    const slash = path.indexOf('/', start);
    const segment = path.slice(start, slash < 0 ? path.length : slash);
    strings.push(segment.includes('%') ? decodedSegment(segment) : segment);
    if (slash < 0) break;
    start = slash + 1;
  }
  strings.push(at);
  return strings;
}

function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
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
export function toClearJson(
  value: unknown,
  strings: readonly string[],
  mark: string = NUL_MARK,
): string | null {
  // A few strings (a secret write's: about ten): looked through in place of a map.
  const index = strings.length > 16 ? firstIndex(strings) : null;
  const indexOf = (node: string) => {
    const i = index ? index.get(node) : strings.indexOf(node);
    return i === undefined || i < 0 ? null : i;
  };
  const marked = (node: unknown): unknown => {
    switch (typeof node) {
      case 'string': {
        const i = node.length >= MIN_MARKED ? indexOf(node) : null;
        if (i !== null) return mark + i;
        return node.startsWith(mark) ? mark + node : node;
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
          for (let i = 0; i < node.length; i++) items.push(marked(node[i]));
          return items;
        }
        // No prototype: a key named `__proto__` stays a key.
        const copy = Object.create(null) as Record<string, unknown>;
        for (const key of Object.keys(node)) copy[key] = marked(node[key]);
        return copy;
      }
      default:
        throw NOT_JSON;
    }
  };
  try {
    return JSON.stringify(marked(value));
  } catch {
    return null; // NOT_JSON, or a cycle (too deep): stored another way
  }
}

/** The value `toClearJson` stored, its marked strings put back from the repeat's `strings`. */
export function fromClearJson(
  text: string,
  strings: readonly string[],
  mark: string = NUL_MARK,
): unknown {
  return JSON.parse(text, (_key, node: unknown) => {
    if (typeof node !== 'string' || !node.startsWith(mark)) return node;
    if (node.startsWith(mark, 1)) return node.slice(1);
    const found = strings[Number(node.slice(1))];
    if (found === undefined) throw new Error('the stored result names a string the request lacks');
    return found;
  });
}

/**
 * How a route's write result is laid out, so that it can be stored by
 * position: the values of its leaves (`paths`, dotted, in the order the
 * result holds them) without its property names, which are most of a small
 * result's JSON. Leaves in `notStored` are not kept at all and come back as
 * the value given there (a PostgreSQL write's audit-chain statement, needed
 * only at its commit). A result that is laid out any other way is stored as
 * JSON instead, so a shape that no longer matches costs bytes, never a
 * wrong answer. `name` is stored with the values: change it whenever the
 * paths change, and keep the old shape for the rows still live (24 h).
 */
export interface ResultShape {
  readonly name: string;
  readonly paths: readonly string[];
  readonly notStored: Readonly<Record<string, unknown>>;
  /** `paths` joined: what a result's leaves are compared with. */
  readonly signature: string;
  /** `paths` and `notStored` as a tree, which `toShaped` checks a result against. */
  readonly layout: Level;
}

/**
 * One level of a shape's layout: the properties a branch holds, in order,
 * each a leaf (null) or a branch, and those of its properties that are
 * `notStored` leaves (anywhere in the order).
 */
interface Level {
  readonly keys: readonly string[];
  readonly branches: readonly (Level | null)[];
  readonly skipped: ReadonlySet<string>;
}

/**
 * `paths` and `notStored` as a tree of levels. A walk of a result meets its
 * leaves depth first, so the paths of one branch must follow each other:
 * a shape whose paths do not could never match, and is refused.
 */
function layoutOf(paths: readonly string[], notStored: readonly string[]): Level {
  interface Building {
    keys: string[];
    branches: (Building | null)[];
    skipped: Set<string>;
  }
  const root: Building = { keys: [], branches: [], skipped: new Set() };
  /** The level at `segments`; made when `make` (a path), else it must be there (a `notStored` leaf's). */
  const branchAt = (segments: readonly string[], make: boolean): Building => {
    let level = root;
    for (const segment of segments) {
      const i = level.keys.indexOf(segment);
      if (i < 0) {
        if (!make)
          throw new Error(`a shape's unstored leaf is under ${segment}, which holds no path`);
        const made: Building = { keys: [], branches: [], skipped: new Set() };
        level.keys.push(segment);
        level.branches.push(made);
        level = made;
        continue;
      }
      const branch = level.branches[i]!;
      if (branch === null) throw new Error(`a shape's path runs through its leaf ${segment}`);
      if (make && i !== level.keys.length - 1)
        throw new Error(`a shape's paths under ${segment} do not follow each other`);
      level = branch;
    }
    return level;
  };
  for (const path of paths) {
    const segments = path.split('.');
    const level = branchAt(segments.slice(0, -1), true);
    const leaf = segments[segments.length - 1]!;
    if (level.keys.includes(leaf)) throw new Error(`a shape's path ${path} is there twice`);
    level.keys.push(leaf);
    level.branches.push(null);
  }
  for (const path of notStored) {
    const segments = path.split('.');
    branchAt(segments.slice(0, -1), false).skipped.add(segments[segments.length - 1]!);
  }
  return root;
}

const shapes = new Map<string, ResultShape>();

/** Declares (once, at load) the shape `name`, for the routes that store results so. */
export function resultShape(
  name: string,
  paths: readonly string[],
  notStored: Record<string, unknown> = {},
): ResultShape {
  if (!/^[a-z0-9.-]+$/.test(name)) throw new Error(`not a shape name: ${name}`);
  const signature = paths.join('\u0000');
  const declared = shapes.get(name);
  if (declared && declared.signature !== signature)
    throw new Error(`shape ${name} declared twice, differently`);
  const shape = {
    name,
    paths,
    notStored,
    signature,
    layout: layoutOf(paths, Object.keys(notStored)),
  };
  shapes.set(name, shape);
  return shape;
}

/** The shape declared as `name`, if any. */
export const shapeNamed = (name: string): ResultShape | undefined => shapes.get(name);

/** Plain objects with at least one property: what a shape looks into (anything else is a leaf). */
const isBranch = (value: unknown): value is Record<string, unknown> =>
  isContainer(value) && !Array.isArray(value) && Object.keys(value).length > 0;

/**
 * Adds the leaves of `node` to `values` in `level`'s order; false when `node`
 * holds other properties, in another order, a branch where a leaf is or the
 * other way round, or lacks a `notStored` leaf. Compares property names one
 * by one: no path is built.
 */
function collectLeaves(node: Record<string, unknown>, level: Level, values: unknown[]): boolean {
  let next = 0;
  let skipped = 0;
  for (const key of Object.keys(node)) {
    const item = node[key];
    if (level.skipped.has(key)) {
      if (isBranch(item)) return false;
      skipped++;
      continue;
    }
    if (key !== level.keys[next]) return false;
    const branch = level.branches[next++]!;
    if (branch === null) {
      if (isBranch(item)) return false;
      values.push(item);
    } else if (!isBranch(item) || !collectLeaves(item, branch, values)) return false;
  }
  return next === level.keys.length && skipped === level.skipped.size;
}

/**
 * The values of `value`'s leaves in `shape`'s order, or null when `value` is
 * not laid out as `shape` says (other properties, in another order, or a
 * `notStored` leaf missing).
 */
export function toShaped(value: unknown, shape: ResultShape): unknown[] | null {
  const values: unknown[] = [];
  return isBranch(value) && collectLeaves(value, shape.layout, values) ? values : null;
}

/** The result `toShaped` laid out, rebuilt from its values. */
export function fromShaped(values: unknown, shape: ResultShape): Record<string, unknown> {
  if (!Array.isArray(values) || values.length !== shape.paths.length)
    throw new Error(`the stored result is not laid out as ${shape.name}`);
  const root: Record<string, unknown> = {};
  const place = (path: string, value: unknown) => {
    const keys = path.split('.');
    let holder = root;
    for (const key of keys.slice(0, -1)) holder = (holder[key] ??= {}) as Record<string, unknown>;
    holder[keys[keys.length - 1]!] = value;
  };
  shape.paths.forEach((path, i) => place(path, values[i]));
  for (const [path, value] of Object.entries(shape.notStored)) place(path, value);
  return root;
}
