import ValidatorSelector from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';

/**
 * Fastify's own schema compilers (Ajv for requests, fast-json-stringify for
 * responses), each route's functions compiled when the route first uses them
 * instead of all at `ready`.
 *
 * Compiling every schema of the API is most of a server's start: about 60 % of
 * its CPU before it listens, paid again by every process a deploy, a restart or
 * a test starts, for routes most processes never serve. A route's first request
 * pays its own compile (a few milliseconds) once. What is compiled, and with
 * which options, is exactly what Fastify compiles eagerly; `compileAll` runs
 * every pending compile at once (the schema test calls it, so a schema that
 * does not compile fails a test, not a request).
 */

/** What Fastify hands a schema compiler: one part of one route. */
interface RouteSchema {
  schema: unknown;
  method: string;
  url: string;
  httpPart?: string;
  httpStatus?: string;
  contentType?: string;
}
type Validate = ((data: unknown, parent?: unknown) => unknown) & {
  errors?: unknown;
  schemaEnv?: unknown;
};
type Serialize = (data: unknown) => string;
type CompilerBuilder<F> = (externalSchemas: unknown, options: unknown) => (route: RouteSchema) => F;

export interface LazySchemas {
  /** Fastify's `schemaController.compilersFactory`. */
  compilersFactory: { buildValidator: unknown; buildSerializer: unknown };
  /** Compiles every schema not compiled yet and says how many; throws the first compile error. */
  compileAll(): number;
}

export function lazySchemas(): LazySchemas {
  const pending = new Set<() => unknown>();
  const buildValidator = ValidatorSelector() as unknown as CompilerBuilder<Validate>;
  const buildSerializer = SerializerSelector() as unknown as CompilerBuilder<Serialize>;

  function once<F>(compile: () => F): () => F {
    let compiled: F | undefined;
    const get = () => {
      if (compiled === undefined) {
        compiled = compile();
        pending.delete(get);
      }
      return compiled;
    };
    pending.add(get);
    return get;
  }

  const lazyValidators: CompilerBuilder<Validate> = (externalSchemas, options) => {
    const compileFor = buildValidator(externalSchemas, options);
    return (route) => {
      const get = once(() => compileFor(withLowerCaseHeaders(route)));
      const validate: Validate = (data, parent) => {
        const fn = get();
        const result = fn(data, parent);
        validate.errors = fn.errors;
        return result;
      };
      // Ajv's functions take the parent object so `useDefaults` can set a whole
      // part; Fastify passes it to a function that has `schemaEnv`.
      validate.schemaEnv = true;
      return validate;
    };
  };
  const lazySerializers: CompilerBuilder<Serialize> = (externalSchemas, options) => {
    const compileFor = buildSerializer(externalSchemas, options);
    return (route) => {
      const get = once(() => compileFor(route));
      return (data) => get()(data);
    };
  };

  return {
    compilersFactory: { buildValidator: lazyValidators, buildSerializer: lazySerializers },
    compileAll() {
      const all = [...pending];
      for (const get of all) get();
      return all.length;
    },
  };
}

/**
 * Header names are case-insensitive: Fastify lower-cases a headers schema's
 * property names before compiling it with its own compiler, and skips that for a
 * custom one like this; done here so headers validate the same.
 */
function withLowerCaseHeaders(route: RouteSchema): RouteSchema {
  const schema = route.schema as { properties?: Record<string, unknown>; required?: string[] };
  if (route.httpPart !== 'headers' || typeof schema !== 'object' || schema === null) return route;
  const lowered: Record<string, unknown> = { ...schema };
  if (schema.properties)
    lowered.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, value]) => [name.toLowerCase(), value]),
    );
  if (Array.isArray(schema.required))
    lowered.required = schema.required.map((name) => name.toLowerCase());
  return { ...route, schema: lowered };
}
