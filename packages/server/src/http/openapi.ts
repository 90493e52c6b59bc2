import { ERROR_STATUS } from '../errors.js';
import { ErrorEnvelope } from './schemas.js';

/**
 * The credentials an operation takes, as its OpenAPI `security` requirement set.
 * Every route schema names one (the OpenAPI test refuses an operation without),
 * so clients and linters know which calls need what. The names are the
 * document's `components.securitySchemes`: `session` (the `coffer_session`
 * cookie of a signed-in user) and `bearer` (an API key or a CI token; which of
 * the two a route accepts, and with what role or scope, its description says).
 */
type SecurityRequirements = Array<Record<string, string[]>>;

/** No credential: the sign-up and sign-in flow and the health probes. */
export const NO_CREDENTIAL: SecurityRequirements = [];
/** A signed-in user only; API keys and CI tokens get 403. */
export const SESSION_ONLY: SecurityRequirements = [{ session: [] }];
/** A session, or an API key or CI token of the project. */
export const SESSION_OR_BEARER: SecurityRequirements = [{ bearer: [] }, { session: [] }];
/** Works with a session and without a credential (logging out). */
export const OPTIONAL_SESSION: SecurityRequirements = [{ session: [] }, {}];

export const SECURITY_SCHEMES = {
  bearer: {
    type: 'http',
    scheme: 'bearer',
    description:
      'An API key (`cek_…`) or a CI token (`ci_…`): the bearer, the part of the full credential `<bearer>.<key part>` before the "." (the key part never leaves the client)',
  },
  session: {
    type: 'apiKey',
    in: 'cookie',
    name: 'coffer_session',
    description:
      'The session cookie `POST /v1/auth/login` sets (HttpOnly, Secure, SameSite=Strict); unsafe methods also need a same-origin `Origin`',
  },
} as const;

/**
 * Marks a route schema for the document: whether the route spends a rate-limit
 * budget (all but the health probes), so its operation documents `429`.
 * Removed from the document again by `documentErrorResponses`.
 */
export const RATE_LIMITED = 'x-coffer-rate-limited';

type Json = Record<string, unknown>;

const ERROR_REF = { $ref: '#/components/schemas/Error' };

const errorResponse = (description: string, headers?: Json) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema: ERROR_REF } },
});

const codesOf = (status: number) =>
  Object.entries(ERROR_STATUS)
    .filter(([, s]) => s === status)
    .map(([code]) => `\`${code}\``)
    .join(', ');

const RATE_LIMIT_HEADERS = {
  'Retry-After': { description: 'Seconds until the budget refills', schema: { type: 'integer' } },
  'X-RateLimit-Limit': { description: 'Requests per window', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': {
    description: 'Requests left in this window',
    schema: { type: 'integer' },
  },
  'X-RateLimit-Reset': {
    description: 'Seconds until the window resets',
    schema: { type: 'integer' },
  },
};

const OPERATION_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);

/**
 * Every operation's failures in the Form A error body, one shared `Error`
 * schema: `400` where it takes input, `401` and `403` where it takes a
 * credential, `404` where its path names something, `429` where it is rate
 * limited, and `4XX`/`5XX` for everything else. The server answers all of them
 * with the same envelope (`app.ts` serializes every 4xx/5xx with it); this only
 * names the statuses a client should expect and what they mean.
 */
export function documentErrorResponses<T>(document: T): T {
  const doc = document as Json & { paths?: Record<string, Json>; components?: Json };
  const components = (doc.components ??= {}) as Json;
  const schemas = (components.schemas ??= {}) as Json;
  const error = JSON.parse(JSON.stringify(ErrorEnvelope)) as Json;
  const inner = (error.properties as Json).error as Json;
  (inner.properties as Json).code = {
    type: 'string',
    enum: Object.keys(ERROR_STATUS),
    description: 'What went wrong, for programs; the HTTP status follows from it',
  };
  error.description =
    'Form A error body. `request_id` matches the `X-Request-Id` header; `details` name the fields at fault.';
  schemas.Error = error;

  for (const item of Object.values(doc.paths ?? {})) {
    for (const [method, value] of Object.entries(item)) {
      if (!OPERATION_METHODS.has(method)) continue;
      const operation = value as Json;
      // The route's own responses stay (a specific error it declares wins); the
      // catch-all 4XX and 5XX are rewritten below.
      const responses: Json = { ...((operation.responses ?? {}) as Json) };
      delete responses['4XX'];
      delete responses['5XX'];
      const parameters = (operation.parameters ?? []) as Json[];
      const security = (operation.security ?? []) as Json[];
      const rateLimited = operation[RATE_LIMITED] !== false;
      delete operation[RATE_LIMITED];
      const add = (status: string, response: Json) => {
        responses[status] ??= response;
      };
      if (parameters.length > 0 || operation.requestBody !== undefined) {
        add(
          '400',
          errorResponse(
            '`validation_error`: a parameter or the body does not match its schema; `details` name each field and issue',
          ),
        );
      }
      const named = security.filter((requirement) => Object.keys(requirement).length > 0);
      if (named.length > 0) {
        add(
          '401',
          errorResponse(
            `${codesOf(401)}: the credential is missing, unknown, revoked or expired (\`token_expired\`)`,
          ),
        );
      }
      // Where a credential is required (not merely taken, as by logout).
      if (named.length > 0 && named.length === security.length) {
        add(
          '403',
          errorResponse(
            '`forbidden`: the credential is valid but may not do this (role, token scope or credential kind)',
          ),
        );
      }
      if (parameters.some((p) => p.in === 'path')) {
        add(
          '404',
          errorResponse(
            '`not_found`: what the path names does not exist or is not visible to this credential',
          ),
        );
      }
      if (rateLimited) {
        add(
          '429',
          errorResponse(
            '`rate_limited`: the budget of this credential (or client IP) is spent; retry after `Retry-After` seconds',
            RATE_LIMIT_HEADERS,
          ),
        );
      }
      add(
        '4XX',
        errorResponse(
          `Any other client error, e.g. ${codesOf(409)} (409), ${codesOf(422)} (422), \`payload_too_large\` (413)`,
        ),
      );
      add(
        '5XX',
        errorResponse(
          '`internal_error` (quote `request_id` when reporting it) or `service_unavailable` (the database is not reachable; or, for a write to a project on instances sharing Redis, Redis is not: nothing was written, retry)',
        ),
      );
      // Statuses in order, the ranges after them.
      operation.responses = Object.fromEntries(
        Object.entries(responses).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      );
    }
  }
  return document;
}
