import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, type ErrorDetail } from '../errors.js';

/**
 * Text the database cannot hold as it was sent is refused before any handler
 * sees it: a NUL character (PostgreSQL's text type cannot store U+0000, and the
 * query failed with a 500), or a string that is not well-formed Unicode (a lone
 * surrogate such as `"\ud800"`, which both drivers silently replaced with U+FFFD,
 * storing another name than the one sent). Checked in path parameters, the
 * query string, and every string and key of a JSON body, at any depth, on
 * every route but the dashboard's files.
 */
export function registerTextCheck(app: FastifyInstance): void {
  // A callback hook: it runs on every request, and an async one costs a promise each time.
  app.addHook('preValidation', (request, _reply, done) => {
    // The dashboard's files answer a path they cannot serve with their own 404.
    if (request.routeOptions.config?.staticFiles) return done();
    done(unfitText(request));
  });
}

/** The 400 for a request holding unfit text, or undefined when all of it is fit. */
function unfitText(request: FastifyRequest): AppError | undefined {
  // Most requests: flat parameters and query, no body. Checked without the
  // walk's allocations; anything else (or anything unfit) takes the walk.
  if (request.body === undefined && flatAndFit(request.params) && flatAndFit(request.query)) {
    return undefined;
  }
  const bad = [
    ...badStrings(request.params, 'params'),
    ...badStrings(request.query, 'query'),
    ...badStrings(request.body, 'body'),
  ];
  if (bad.length === 0) return undefined;
  const details: ErrorDetail[] = bad.slice(0, 20).map((field) => ({ field, issue: 'invalid' }));
  return new AppError(
    'validation_error',
    `${details[0]!.field} holds a NUL character or text that is not valid Unicode`,
    details,
  );
}

/** NUL, or a lone surrogate (a paired one is one astral code point under the `u` flag). */
// eslint-disable-next-line no-control-regex -- NUL is exactly what is looked for
const UNFIT = /\u0000|\p{Cs}/u;

/** True when `value` is an object of fit strings (keys too); false when that is not known. */
function flatAndFit(value: unknown): boolean {
  if (value === null || value === undefined) return true;
  if (typeof value !== 'object') return false;
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    if (typeof item !== 'string' || UNFIT.test(key) || UNFIT.test(item)) return false;
  }
  return true;
}

interface Step {
  value: unknown;
  key: string | null;
  parent: Step | null;
}

/**
 * The fields (`name`, `items.0.value`, `page`; `body` for the body itself)
 * whose string value or key is unfit. Iterative, with each step linked to its
 * parent, so a body nested 10,000 levels deep costs neither stack nor copies.
 */
function badStrings(root: unknown, context: 'params' | 'query' | 'body'): string[] {
  const out: string[] = [];
  const fieldOf = (step: Step) => {
    const parts: string[] = [];
    for (let s: Step | null = step; s?.key != null; s = s.parent) parts.push(s.key);
    return parts.length > 0 ? parts.reverse().join('.') : context;
  };
  const stack: Step[] = [{ value: root, key: null, parent: null }];
  while (stack.length > 0 && out.length < 20) {
    const step = stack.pop()!;
    const { value } = step;
    if (typeof value === 'string') {
      if (UNFIT.test(value)) out.push(fieldOf(step));
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => stack.push({ value: item, key: String(i), parent: step }));
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (UNFIT.test(key)) out.push(fieldOf(step));
        else stack.push({ value: item, key, parent: step });
      }
    }
  }
  return out;
}
