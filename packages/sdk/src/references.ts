/**
 * References between secrets, resolved by the client that decrypts them (the
 * server only ever holds ciphertext, so it cannot resolve anything).
 *
 * Inside a value:
 *
 * - `${KEY}`: the secret KEY of the same environment;
 * - `${ENV.KEY}`: KEY in the environment with slug ENV of the same project;
 * - `${PROJECT/ENV.KEY}`: KEY in environment ENV of another project, named by
 *   its name or id (everything before the last `/`);
 * - `$${` is a literal `${`. Any other `${…}` (an unclosed one, `${VAR:-x}`)
 *   is an error, so that a value never means something other than it says.
 *
 * The text as stored is the *raw* value; the *resolved* value replaces every
 * reference with its target's resolved value. Pure and synchronous but for
 * `load`, which is called only for environments a value actually refers to,
 * at most once per environment: a reader never fetches (and never could read)
 * anything it was not already allowed to read directly.
 */

/** How deep references may nest: `A → B → … ` at most this many links. */
export const MAX_REFERENCE_DEPTH = 16;

export type ReferenceErrorCode =
  | 'invalid_reference'
  | 'reference_cycle'
  | 'reference_too_deep'
  | 'reference_missing'
  | 'reference_unreadable';

/**
 * A value could not be resolved. `secret` is the secret being resolved,
 * `reference` the `${…}` text at fault (in the secret that holds it), `path`
 * the secrets followed from `secret` to it, `cycle` the cycle for
 * `reference_cycle`. Messages name secrets and references, never values.
 */
export class SecretReferenceError extends Error {
  constructor(
    readonly code: ReferenceErrorCode,
    readonly secret: string,
    readonly reference: string,
    message: string,
    readonly path: readonly string[] = [secret],
    readonly cycle: readonly string[] | null = null,
  ) {
    super(message);
    this.name = 'SecretReferenceError';
  }
}

/** Several secrets could not be resolved; `errors` has one per secret, in name order. */
export class SecretReferencesError extends Error {
  readonly code = 'unresolvable_references';
  constructor(readonly errors: readonly SecretReferenceError[]) {
    super(
      errors
        .slice(0, 5)
        .map((e) => e.message)
        .join('; ') + (errors.length > 5 ? ` (and ${errors.length - 5} more)` : ''),
    );
    this.name = 'SecretReferencesError';
  }
}

export const isSecretReferenceError = (err: unknown): err is SecretReferenceError =>
  err instanceof Error && err.name === 'SecretReferenceError';

/** One `${…}` as written: `project` and `environment` are null when left out. */
export interface SecretReference {
  /** The text as written, `${…}` included. */
  text: string;
  project: string | null;
  environment: string | null;
  name: string;
  /** Where it starts and ends in the raw value. */
  start: number;
  end: number;
}

/** A raw value cut into literal text and references. */
export type ValuePart = string | SecretReference;

const SLUG = '[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?';
const NAME = '[A-Za-z_][A-Za-z0-9_]*';
const SIMPLE = new RegExp(`^${NAME}$`);
const INNER = new RegExp(`^(?:(?:([^}]+)/)?(${SLUG})\\.)?(${NAME})$`);

/**
 * Cuts a raw value into literal text and references. Throws a
 * `SecretReferenceError('invalid_reference')` (naming `secret`) for a `${`
 * that does not form a reference.
 */
export function parseValue(value: string, secret = 'value'): ValuePart[] {
  if (!value.includes('$')) return [value];
  const parts: ValuePart[] = [];
  let literal = '';
  let i = 0;
  for (;;) {
    const dollar = value.indexOf('$', i);
    if (dollar === -1) break;
    literal += value.slice(i, dollar);
    if (value.startsWith('$${', dollar)) {
      literal += '${';
      i = dollar + 3;
      continue;
    }
    if (value[dollar + 1] !== '{') {
      literal += '$';
      i = dollar + 1;
      continue;
    }
    const close = value.indexOf('}', dollar + 2);
    const text = close === -1 ? value.slice(dollar) : value.slice(dollar, close + 1);
    const inner = close === -1 ? '' : value.slice(dollar + 2, close);
    const match =
      close === -1
        ? null
        : SIMPLE.test(inner)
          ? [inner, undefined, undefined, inner]
          : INNER.exec(inner);
    if (!match) {
      throw new SecretReferenceError(
        'invalid_reference',
        secret,
        text,
        `${secret}: ${JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)} is not a reference (\${KEY}, \${ENV.KEY} or \${PROJECT/ENV.KEY}); write $\${ for a literal \${`,
      );
    }
    if (literal) parts.push(literal);
    literal = '';
    parts.push({
      text,
      project: match[1] ?? null,
      environment: match[2] ?? null,
      name: match[3]!,
      start: dollar,
      end: close + 1,
    });
    i = close + 1;
  }
  literal += value.slice(i);
  if (literal) parts.push(literal);
  return parts;
}

/** The references a raw value makes (none for an invalid one). */
export function referencesIn(value: string): SecretReference[] {
  try {
    return parseValue(value).filter((p): p is SecretReference => typeof p !== 'string');
  } catch {
    return [];
  }
}

/**
 * The other environments raw values refer to directly (`project` null: the same
 * project), each once: what a watcher of these values should watch as well,
 * since a change there changes what they resolve to.
 */
export function referencedEnvironments(
  values: Readonly<Record<string, string>>,
): Array<{ project: string | null; environment: string }> {
  const seen = new Map<string, { project: string | null; environment: string }>();
  for (const value of Object.values(values)) {
    if (!value.includes('${')) continue;
    for (const ref of referencesIn(value)) {
      if (ref.environment === null) continue;
      seen.set(`${ref.project ?? ''}/${ref.environment}`, {
        project: ref.project,
        environment: ref.environment,
      });
    }
  }
  return [...seen.values()];
}

/** Whether a raw value holds anything the resolver would act on (`${` or `$${`). */
export const hasReferences = (value: string): boolean => value.includes('${');

/** `$${` for every `${`: the raw text that resolves to `value` itself. */
export const escapeReferences = (value: string): string => value.replaceAll('${', () => '$${');

/** Another environment's raw values as the reader may read them. */
export interface LoadedEnvironment {
  /**
   * Identifies the environment whatever it was called (e.g. `projectId/environmentId`),
   * so that `${staging.A}` and `${other/staging.A}` meet when they are the same.
   */
  key: string;
  values: Readonly<Record<string, string>>;
}

/**
 * Fetches the raw values of an environment a value refers to (`project` null:
 * the home project). Returns null when the reader cannot read it, whether it
 * does not exist or the reader holds no key for it: the error then says
 * exactly that, and nothing more.
 */
export type ReferenceLoader = (target: {
  project: string | null;
  environment: string;
}) => Promise<LoadedEnvironment | null>;

export interface ResolveOptions {
  /** Identifies the home environment like `LoadedEnvironment.key`. Default `''`. */
  key?: string;
  /** The home environment's slug (and id): `${slug.KEY}` then reads the home values without a fetch. */
  environment?: string | readonly string[];
  /** The home project's name and id, for `${PROJECT/ENV.KEY}` naming it. */
  project?: string | readonly string[];
  /** Where other environments come from; absent: any reference to one is unreadable. */
  load?: ReferenceLoader;
  /** At most this many links from a secret to the end of its references (default 16). */
  maxDepth?: number;
}

/** What resolving an environment gives: the values that resolved, and an error for each that did not. */
export interface Resolution {
  values: Record<string, string>;
  errors: Record<string, SecretReferenceError>;
}

interface Resolved {
  value: string;
  height: number;
}

/** A failure seen from one secret: `tail` runs from it to the secret whose reference failed. */
interface Failure {
  code: ReferenceErrorCode;
  reference: string;
  reason: string;
  tail: string[];
  cycle: string[] | null;
  /** Depends on where the walk started (the depth cut), so it is not remembered. */
  contextual: boolean;
}

class Failed {
  constructor(readonly failure: Failure) {}
}

/** Thrown inside the synchronous pass when an environment must first be fetched. */
class NeedEnvironment {
  constructor(
    readonly prefix: string,
    readonly target: { project: string | null; environment: string },
  ) {}
}

const asList = (x: string | readonly string[] | undefined): readonly string[] =>
  x === undefined ? [] : typeof x === 'string' ? [x] : x;

function toError(f: Failure): SecretReferenceError {
  const [first] = f.tail;
  let { cycle, reason } = f;
  if (cycle) {
    // Told from the secret asked about when it is part of the cycle: B → A → B, not A → B → A.
    const at = cycle.indexOf(first!);
    if (at > 0 && at < cycle.length - 1) {
      cycle = [...cycle.slice(at, -1), ...cycle.slice(0, at), first!];
      reason = `references form a cycle: ${cycle.join(' → ')}`;
    }
  }
  const via = f.tail.length > 1 && f.code !== 'reference_cycle' ? `${f.tail.join(' → ')}: ` : '';
  return new SecretReferenceError(
    f.code,
    first!,
    f.reference,
    `${first}: ${via}${reason}`,
    f.tail,
    cycle,
  );
}

/** One environment during a resolution: its raw values and what is known of each name. */
interface EnvironmentState {
  values: Readonly<Record<string, string>>;
  /** A name's resolved value and height, its failure, or the stack index while it is being resolved. */
  done: Map<string, Resolved | Failure | number>;
  /** `''` for the home environment, else how it was first named (`staging`, `billing/prod`). */
  prefix: string;
  /** The project it belongs to as written (null: the home project). */
  project: string | null;
  /** `values` inherits from Object.prototype (or nothing), which holds no string. */
  plain: boolean;
}

const isPlain = (values: object) => {
  const proto: unknown = Object.getPrototypeOf(values);
  return proto === Object.prototype || proto === null;
};

/**
 * Resolves every value of an environment. Values without `${` cost a scan;
 * other environments are fetched (through `load`) only when referenced, each
 * once. Never throws a `SecretReferenceError`: those land in `errors`, per
 * secret, so a dashboard can mark each cell; `resolveSecrets` throws them.
 */
export async function resolveReferences(
  values: Readonly<Record<string, string>>,
  options: ResolveOptions = {},
): Promise<Resolution> {
  const homeKey = options.key ?? '';
  const homeEnvs = new Set(asList(options.environment));
  const homeProjects = new Set(asList(options.project));
  const maxDepth = options.maxDepth ?? MAX_REFERENCE_DEPTH;
  const home: EnvironmentState = {
    values,
    done: new Map(),
    prefix: '',
    project: null,
    plain: isPlain(values),
  };
  /** An environment as written (`staging`, `proj/staging`) → its state, or null when unreadable. */
  const prefixes = new Map<string, EnvironmentState | null>();
  const byKey = new Map<string, EnvironmentState>([[homeKey, home]]);
  const out: Resolution = { values: {}, errors: {} };
  const stack: string[] = [];

  const labelOf = (env: EnvironmentState, name: string) =>
    env === home ? name : `${env.prefix}.${name}`;

  /** The environment a reference points into; null when it cannot be read. */
  function targetOf(from: EnvironmentState, ref: SecretReference): EnvironmentState | null {
    if (ref.environment === null) return from;
    let project = ref.project;
    if (project !== null && homeProjects.has(project)) project = null;
    // `${ENV.KEY}` inside another project's value stays in that project.
    if (ref.project === null) project = from.project;
    if (project === null && homeEnvs.has(ref.environment)) return home;
    const prefix = project === null ? ref.environment : `${project}/${ref.environment}`;
    const state = prefixes.get(prefix);
    if (state === undefined)
      throw new NeedEnvironment(prefix, { project, environment: ref.environment });
    return state;
  }

  const fail = (
    label: string,
    code: ReferenceErrorCode,
    reference: string,
    reason: string,
    cycle: string[] | null = null,
    contextual = false,
  ) => new Failed({ code, reference, reason, tail: [label], cycle, contextual });

  function resolve(env: EnvironmentState, name: string, raw: string, depth: number): Resolved {
    const label = labelOf(env, name);
    let parts: ValuePart[];
    try {
      parts = parseValue(raw, label);
    } catch (err) {
      const e = err as SecretReferenceError;
      const f = fail(label, 'invalid_reference', e.reference, e.message.slice(label.length + 2));
      env.done.set(name, f.failure);
      throw f;
    }
    env.done.set(name, stack.length);
    stack.push(label);
    let value = '';
    let height = 0;
    try {
      for (const part of parts) {
        if (typeof part === 'string') {
          value += part;
          continue;
        }
        const target = part.environment === null ? env : targetOf(env, part);
        if (target === null) {
          throw fail(
            label,
            'reference_unreadable',
            part.text,
            `${part.text} cannot be read: environment "${part.environment}"${part.project !== null ? ` of project "${part.project}"` : ''} does not exist or this credential holds no key for it`,
          );
        }
        // One lookup: a plain object inherits no string, so a string found is the target's own.
        const found: unknown = target.values[part.name];
        const targetRaw =
          typeof found === 'string' && (target.plain || Object.hasOwn(target.values, part.name))
            ? found
            : undefined;
        if (targetRaw === undefined) {
          throw fail(
            label,
            'reference_missing',
            part.text,
            target === home
              ? `${part.text}: this environment has no secret ${part.name}`
              : `${part.text}: environment "${target.prefix}" has no secret ${part.name}`,
          );
        }
        // A value without `$` is its own resolution: nothing to remember about it.
        if (!targetRaw.includes('$')) {
          value += targetRaw;
          if (height === 0) height = 1;
          continue;
        }
        const known = target.done.get(part.name);
        let r: Resolved;
        if (typeof known === 'number') {
          const cycle = [...stack.slice(known), labelOf(target, part.name)];
          throw fail(
            label,
            'reference_cycle',
            part.text,
            `references form a cycle: ${cycle.join(' → ')}`,
            cycle,
          );
        } else if (known !== undefined && 'code' in known) {
          throw new Failed({ ...known, tail: [label, ...known.tail] });
        } else if (known !== undefined) {
          r = known;
        } else {
          if (depth >= maxDepth) {
            throw fail(
              label,
              'reference_too_deep',
              part.text,
              `references nest more than ${maxDepth} deep`,
              null,
              true,
            );
          }
          try {
            r = resolve(target, part.name, targetRaw, depth + 1);
          } catch (err) {
            if (!(err instanceof Failed)) throw err;
            throw new Failed({ ...err.failure, tail: [label, ...err.failure.tail] });
          }
        }
        if (r.height >= maxDepth) {
          throw fail(
            label,
            'reference_too_deep',
            part.text,
            `references nest more than ${maxDepth} deep`,
          );
        }
        if (r.height + 1 > height) height = r.height + 1;
        value += r.value;
      }
    } catch (err) {
      if (err instanceof Failed && !err.failure.contextual) env.done.set(name, err.failure);
      else env.done.delete(name);
      throw err;
    } finally {
      stack.pop();
    }
    const r = { value, height };
    env.done.set(name, r);
    return r;
  }

  const names = Object.keys(values);
  // After fetching an environment, go on from the name that needed it: those before are done.
  let next = 0;
  for (;;) {
    try {
      for (; next < names.length; next++) {
        const name = names[next]!;
        const raw = values[name]!;
        if (!raw.includes('$')) {
          out.values[name] = raw;
          continue;
        }
        const known = home.done.get(name);
        if (known !== undefined && typeof known !== 'number') {
          if ('code' in known) out.errors[name] = toError(known);
          else out.values[name] = known.value;
          continue;
        }
        try {
          out.values[name] = resolve(home, name, raw, 0).value;
        } catch (err) {
          if (!(err instanceof Failed)) throw err;
          out.errors[name] = toError(err.failure);
        }
      }
      return out;
    } catch (err) {
      if (!(err instanceof NeedEnvironment)) throw err;
      stack.length = 0;
      const loaded = options.load ? await options.load(err.target) : null;
      let state: EnvironmentState | null = null;
      if (loaded) {
        state = byKey.get(loaded.key) ?? {
          values: loaded.values,
          done: new Map(),
          prefix: err.prefix,
          project: err.target.project,
          plain: isPlain(loaded.values),
        };
        byKey.set(loaded.key, state);
      }
      prefixes.set(err.prefix, state);
    }
  }
}

/**
 * Resolves every value of an environment, or throws: one `SecretReferenceError`
 * when a single secret fails, a `SecretReferencesError` listing them when
 * several do. Never a partial result.
 */
export async function resolveSecrets(
  values: Readonly<Record<string, string>>,
  options: ResolveOptions = {},
): Promise<Record<string, string>> {
  const { values: resolved, errors } = await resolveReferences(values, options);
  const failed = Object.keys(errors)
    .sort()
    .map((name) => errors[name]!);
  if (failed.length === 1) throw failed[0]!;
  if (failed.length > 1) throw new SecretReferencesError(failed);
  return resolved;
}

/** What an editor can offer inside `${…}`: the names of the environments the user can read. */
export interface ReferenceCatalog {
  /** Names of the environment being edited. */
  names: readonly string[];
  /** Other environments of the project, by slug, with their names (only those the user can read). */
  environments: Readonly<Record<string, readonly string[]>>;
}

/**
 * Completions for the reference being typed at the end of `beforeCursor`:
 * `from` is where the typed part starts (after `${`), and each option the
 * text that replaces it (`NAME}`, `staging.`, `staging.NAME}`). Null when the
 * cursor is not inside an unfinished `${`.
 */
export function completeReference(
  beforeCursor: string,
  catalog: ReferenceCatalog,
): { from: number; options: string[] } | null {
  const open = beforeCursor.lastIndexOf('${');
  if (open === -1 || beforeCursor.startsWith('$${', open - 1)) return null;
  const typed = beforeCursor.slice(open + 2);
  if (typed.includes('}') || typed.includes('/')) return null;
  const from = open + 2;
  const dot = typed.indexOf('.');
  const starts = (prefix: string) => (s: string) =>
    s.toLowerCase().startsWith(prefix.toLowerCase());
  if (dot !== -1) {
    const names = catalog.environments[typed.slice(0, dot)] ?? [];
    const partial = typed.slice(dot + 1);
    return {
      from,
      options: names
        .filter(starts(partial))
        .sort()
        .map((n) => `${typed.slice(0, dot)}.${n}}`),
    };
  }
  return {
    from,
    options: [
      ...catalog.names
        .filter(starts(typed))
        .sort()
        .map((n) => `${n}}`),
      ...Object.keys(catalog.environments)
        .filter(starts(typed))
        .sort()
        .map((slug) => `${slug}.`),
    ],
  };
}
