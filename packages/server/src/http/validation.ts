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
