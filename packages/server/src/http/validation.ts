import type { FastifyInstance, preValidationHookHandler } from 'fastify';
import type { ErrorDetail } from '../errors.js';

interface SchemaError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
}

const ISSUE_BY_KEYWORD: Record<string, string> = {
  required: 'required',
  additionalProperties: 'unknown',
  maximum: 'maximum',
  exclusiveMaximum: 'maximum',
  minimum: 'minimum',
  exclusiveMinimum: 'minimum',
  maxLength: 'too_long',
  minLength: 'too_short',
  maxItems: 'too_many',
  minItems: 'too_few',
  maxProperties: 'too_many',
  uniqueItems: 'duplicate',
};

/** `/user/name` → `user.name`; the whole body is `body`. */
function fieldOf(instancePath: string, child?: unknown): string {
  const parts = instancePath
    .split('/')
    .filter(Boolean)
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (typeof child === 'string') parts.push(child);
  return parts.length === 0 ? 'body' : parts.join('.');
}

/** Turns schema validator errors into Form A `details`, one entry per field. */
export function detailsFromSchemaErrors(
  errors: readonly SchemaError[],
  context: string,
): ErrorDetail[] {
  const byField = new Map<string, ErrorDetail>();
  for (const e of errors) {
    const child =
      e.keyword === 'required'
        ? e.params.missingProperty
        : e.keyword === 'additionalProperties'
          ? e.params.additionalProperty
          : undefined;
    let field = fieldOf(e.instancePath, child);
    if (field === 'body' && context !== 'body') field = context;
    if (byField.has(field)) continue;
    byField.set(field, { field, issue: ISSUE_BY_KEYWORD[e.keyword] ?? 'invalid' });
  }
  return [...byField.values()];
}

export function describeDetails(details: readonly ErrorDetail[]): string {
  const first = details[0];
  if (!first) return 'The request is invalid';
  const what: Record<string, string> = {
    required: 'is required',
    unknown: 'is not a field this operation accepts',
    maximum: 'is above the maximum',
    minimum: 'is below the minimum',
    too_long: 'is too long',
    too_short: 'is too short',
  };
  const more = details.length > 1 ? ` (and ${details.length - 1} more)` : '';
  return `${first.field} ${what[first.issue] ?? 'is invalid'}${more}`;
}

type JsonSchema = Readonly<Record<string, unknown>>;

/** The JSON types a schema admits (`type`, or the types of an `anyOf` such as a union of literals). */
function typesOf(schema: JsonSchema | undefined): Set<string> {
  const types = new Set<string>();
  if (!schema) return types;
  if (typeof schema.type === 'string') types.add(schema.type);
  if (Array.isArray(schema.type)) for (const t of schema.type) types.add(String(t));
  if (schema.const !== undefined) types.add(typeof schema.const);
  if (Array.isArray(schema.anyOf))
    for (const s of schema.anyOf) for (const t of typesOf(s)) types.add(t);
  return types;
}

const NUMERIC = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

type Coerce = (value: unknown) => unknown;

/**
 * The conversion of one parameter, worked out once from its schema; null when
 * the value stays as it arrived (a string parameter).
 */
function coercionOf(schema: JsonSchema | undefined): Coerce | null {
  const types = typesOf(schema);
  if (types.has('array')) {
    const item = coercionOf(schema?.items as JsonSchema | undefined) ?? ((v: unknown) => v);
    return (value) => (Array.isArray(value) ? value : [value]).map(item);
  }
  if (types.has('string')) return null;
  const numeric = types.has('integer') || types.has('number');
  const boolean = types.has('boolean');
  if (!numeric && !boolean) return null;
  return (value) => {
    if (typeof value !== 'string') return value;
    if (numeric && NUMERIC.test(value)) return Number(value);
    if (boolean && (value === 'true' || value === 'false')) return value === 'true';
    return value;
  };
}

/**
 * Query strings and path parameters arrive as text, so `?page=2` becomes the
 * number its schema asks for. Only exact decimal numbers and `true`/`false` are
 * converted (`2.5` stays fractional and fails an integer schema; anything else
 * stays a string and fails validation). Request bodies are JSON and are never
 * coerced: `{"name": 123}` is a validation error, not the string "123".
 * Null when no parameter of the schema needs converting.
 */
function parameterCoercion(
  schema: JsonSchema | undefined,
): ((values: Record<string, unknown>) => Record<string, unknown>) | null {
  const properties = (schema?.properties ?? {}) as Record<string, JsonSchema>;
  const conversions = Object.entries(properties).flatMap(([name, property]) => {
    const coerce = coercionOf(property);
    return coerce ? [[name, coerce] as const] : [];
  });
  if (conversions.length === 0) return null;
  return (values) => {
    const out: Record<string, unknown> = { ...values };
    for (const [name, coerce] of conversions) {
      if (Object.hasOwn(values, name)) out[name] = coerce(values[name]);
    }
    return out;
  };
}

/** Adds the text-to-type coercion to every route that declares a querystring or params schema. */
export function registerParameterCoercion(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as { querystring?: JsonSchema; params?: JsonSchema } | undefined;
    const query = parameterCoercion(schema?.querystring);
    const params = parameterCoercion(schema?.params);
    if (!query && !params) return;
    const coerce: preValidationHookHandler = (request, _reply, done) => {
      if (query) request.query = query(request.query as Record<string, unknown>);
      if (params) request.params = params(request.params as Record<string, unknown>);
      done();
    };
    const existing = route.preValidation;
    route.preValidation = existing
      ? [coerce, ...(Array.isArray(existing) ? existing : [existing])]
      : coerce;
  });
}
