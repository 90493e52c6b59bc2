import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import { UNSAFE_METHODS } from './write-routes.js';
import {
  SESSION_COOKIE,
  type CredentialResolver,
  type Principal,
  type Resolution,
} from './principal.js';
import {
  consume,
  MemoryRateLimitStore,
  type RateLimitState,
  type RateLimitStore,
} from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** `auth`: per-IP auth budget; `none`: not rate limited (health probes). */
    rateClass?: 'auth' | 'none';
    /**
     * A bad session cookie (expired, revoked, wrong Origin) counts as no
     * credential instead of a 401, so logging in again is never blocked by a
     * stale cookie. Bearer errors still refuse the request.
     */
    ignoreInvalidSession?: boolean;
  }
}

interface PipelineDeps {
  config: Config;
  clock: Clock;
  resolver: CredentialResolver;
  rateLimitStore: RateLimitStore;
}

/** The budget a request spends: its credential's kind, or the client IP's (`anonymous`, `auth`). */
type RateBudget = 'auth' | 'session' | 'api_key' | 'ci_token' | 'anonymous';

/** A 429 refusal, with the budget it exceeded (metrics count refusals by it). */
export class RateLimitedError extends AppError {
  constructor(
    readonly budget: RateBudget,
    message: string,
  ) {
    super('rate_limited', message);
  }
}

/**
 * What the cached-read path (`cached-reads.ts`) already did for a request it
 * hands on to Fastify: the bearer resolved and one request counted against its
 * budget. The pipeline takes both from here instead of doing them again, so a
 * request is counted once whichever path answers it.
 */
export const PRE_RESOLVED = Symbol('coffer.preResolved');
export interface PreResolved {
  readonly principal: Principal;
  readonly state: RateLimitState;
}
declare module 'node:http' {
  interface IncomingMessage {
    [PRE_RESOLVED]?: PreResolved;
  }
}

/** The per-request conventions, as the cached-read path applies them too. */
export interface Conventions {
  /** The security headers of every answer, in order (`x-request-id` before them, rate limits after). */
  readonly headers: readonly (readonly [string, string])[];
  /** Spends one request of a principal's budget. */
  spend(principal: Principal, nowMs: number): RateLimitState | Promise<RateLimitState>;
}

/**
 * The per-request conventions every route shares, in order: request id, the
 * proxy HTTPS redirect, security headers, authentication, the rate limit
 * (headers on every response, 429 past the budget), and only then the 401 for a
 * bad credential, so guessing credentials spends the caller's budget.
 * Returns the hook, so errors raised before routing can apply it too, and
 * `countAnonymous` for refusals written before there is a request at all.
 */
export function registerPipeline(
  app: FastifyInstance,
  deps: PipelineDeps,
): {
  onRequest: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  /** Spends one request of a client IP's anonymous budget and returns the state for the headers. */
  countAnonymous: (ip: string) => Promise<RateLimitState>;
  conventions: Conventions;
} {
  const { config, clock, resolver } = deps;
  const limits = config.rateLimits;
  const counters = new CounterFailover(deps.rateLimitStore, app);
  const headers = securityHeaders(config);

  app.decorateRequest('principal', null);

  const onRequest = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('x-request-id', request.id);

    if (config.trustProxy && forwardedProto(request.headers) === 'http') {
      const host =
        request.headers['x-forwarded-host'] ??
        request.headers.host ??
        new URL(config.publicUrl).host;
      return reply.code(308).header('location', `https://${host}${request.url}`).send();
    }
    for (const [name, value] of headers) reply.header(name, value);

    const rateClass = request.routeOptions?.config?.rateClass;
    if (rateClass === 'none') return refuseWithoutHost(request);

    const now = clock.now();
    const pre = request.raw[PRE_RESOLVED];
    // A failure while resolving the credential (database down) still spends the
    // client IP's budget and carries the headers; the 500 follows them.
    let failure: unknown = null;
    const resolution: Resolution | null = pre
      ? { principal: pre.principal }
      : await authenticate(request, resolver, now, config).catch((err: unknown) => {
          failure = err;
          return null;
        });
    let key: string;
    let limit: number;
    let budget: RateBudget = 'anonymous';
    if (rateClass === 'auth') {
      key = `auth:${request.ip}`;
      limit = limits.auth;
      budget = 'auth';
    } else if (resolution && 'principal' in resolution) {
      ({ key, limit, budget } = budgetOf(resolution.principal, limits));
    } else {
      key = `ip:${request.ip}`;
      limit = limits.anonymous;
    }

    // Counted without a promise when the store need not wait (memory, a Redis lease with room).
    // The cached-read path counted its request already (under the same budget: it only
    // hands on requests to routes with the principal's budget).
    const counted = pre
      ? pre.state
      : counters.consume(key, limit, limits.windowSeconds, now.getTime());
    const state = counted instanceof Promise ? await counted : counted;
    const limitHeaders = rateLimitHeaders(state);
    for (let i = 0; i < limitHeaders.length; i += 2)
      reply.header(limitHeaders[i]!, limitHeaders[i + 1]);
    if (state.exceeded) {
      reply.header('retry-after', state.retryAfter);
      throw new RateLimitedError(
        budget,
        `Rate limit of ${limit} requests per minute exceeded; retry in ${state.retryAfter} s`,
      );
    }
    if (failure) throw failure;
    refuseWithoutHost(request);

    if (resolution && 'error' in resolution) {
      const staleCookie =
        request.routeOptions?.config?.ignoreInvalidSession === true &&
        request.headers.authorization === undefined;
      if (!staleCookie) throw new AppError(resolution.error, resolution.message);
    }
    request.principal = resolution && 'principal' in resolution ? resolution.principal : null;
  };
  app.addHook('onRequest', onRequest);
  const countAnonymous = async (ip: string) =>
    counters.consume(`ip:${ip}`, limits.anonymous, limits.windowSeconds, clock.now().getTime());
  const conventions: Conventions = {
    headers,
    spend(principal, nowMs) {
      const { key, limit } = budgetOf(principal, limits);
      return counters.consume(key, limit, limits.windowSeconds, nowMs);
    },
  };
  return { onRequest, countAnonymous, conventions };
}

/** The rate-limit headers of an answer, names and values in turn (`writeHead`'s flat form). */
export function rateLimitHeaders(state: RateLimitState): string[] {
  return [
    'x-ratelimit-limit',
    String(state.limit),
    'x-ratelimit-remaining',
    String(state.remaining),
    'x-ratelimit-reset',
    String(state.reset),
  ];
}

/** The security headers every answer carries (after `x-request-id`). */
function securityHeaders(config: Config): [string, string][] {
  return [
    ...(config.tls.mode !== 'off' || config.trustProxy
      ? [['strict-transport-security', 'max-age=63072000; includeSubDomains'] as [string, string]]
      : []),
    ['x-content-type-options', 'nosniff'],
    ['x-frame-options', 'DENY'],
    ['referrer-policy', 'no-referrer'],
    ['cache-control', 'no-store'],
    ['content-security-policy', "default-src 'none'; frame-ancestors 'none'"],
  ];
}

/** The budget a principal's requests spend: its rate-limit key, the limit and the budget's name. */
function budgetOf(
  p: Principal,
  limits: Config['rateLimits'],
): { key: string; limit: number; budget: RateBudget } {
  if (p.kind === 'session')
    return { key: `user:${p.userId}`, limit: limits.session, budget: p.kind };
  if (p.kind === 'api_key') return { key: `key:${p.id}`, limit: limits.apiKey, budget: p.kind };
  return { key: `ci:${p.id}`, limit: limits.ciToken, budget: p.kind };
}

/**
 * HTTP/1.1 requires `Host` (RFC 9112 §3.2); Node's own check answers a bare
 * 400, so the server lets such requests through (`requireHostHeader: false`)
 * and refuses them here, in Form A with the request id and rate-limit headers.
 */
function refuseWithoutHost(request: FastifyRequest): void {
  if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
    throw new AppError('validation_error', 'HTTP/1.1 requests must carry a Host header', [
      { field: 'host', issue: 'required' },
    ]);
  }
}

/** The scheme the client used, as the first proxy saw it (`X-Forwarded-Proto: http, https` → `http`). */
export function forwardedProto(headers: IncomingHttpHeaders): string | undefined {
  const header = headers['x-forwarded-proto'];
  const value = Array.isArray(header) ? header[0] : header;
  return value?.split(',')[0]?.trim().toLowerCase();
}

/**
 * The rate-limit store, and what happens when it fails (Redis unreachable): the
 * server keeps answering and counts in this instance's memory until the store
 * works again, logging one warning per outage. Limits then hold per instance
 * instead of across instances; refusing every request (or dropping the headers)
 * because a counter is down would take the whole API offline with it.
 */
class CounterFailover {
  private readonly local = new MemoryRateLimitStore();
  private degraded = false;

  constructor(
    private readonly store: RateLimitStore,
    private readonly app: FastifyInstance,
  ) {
    app.addHook('onClose', async () => this.local.close());
  }

  consume(
    key: string,
    limit: number,
    windowSeconds: number,
    nowMs: number,
  ): RateLimitState | Promise<RateLimitState> {
    const counted = (state: RateLimitState) => {
      if (this.degraded) {
        this.degraded = false;
        this.app.log.warn('rate-limit store is reachable again; counting in it');
      }
      return state;
    };
    const failed = (err: unknown) => {
      if (!this.degraded) {
        this.degraded = true;
        this.app.log.warn(
          { err },
          'rate-limit store unreachable; counting in this instance only until it recovers',
        );
      }
      return consume(this.local, key, limit, windowSeconds, nowMs);
    };
    try {
      const state = consume(this.store, key, limit, windowSeconds, nowMs);
      return state instanceof Promise ? state.then(counted, failed) : counted(state);
    } catch (err) {
      return failed(err);
    }
  }
}

const BEARER = /^Bearer ([^\s]+)$/i;

/**
 * The bearer token of an `Authorization` header, or why it is refused: not
 * `Bearer <token>`, or a whole credential sent where only its bearer part may
 * go (the key part must never leave the client; refused so a misconfigured
 * client learns at once, and it is never logged).
 */
export function bearerOf(header: string): string | Extract<Resolution, { error: string }> {
  const bearer = BEARER.exec(header)?.[1];
  if (bearer === undefined)
    return { error: 'unauthenticated', message: 'Authorization must be "Bearer <token>"' };
  if (bearer.includes('.')) {
    return {
      error: 'unauthenticated',
      message:
        'Send only the bearer part of the credential (before the "."); the key part must stay on the client',
    };
  }
  return bearer;
}

async function authenticate(
  request: FastifyRequest,
  resolver: CredentialResolver,
  now: Date,
  config: Config,
): Promise<Resolution | null> {
  const header = request.headers.authorization;
  if (header !== undefined) {
    const bearer = bearerOf(header);
    if (typeof bearer !== 'string') return bearer;
    return resolver.resolveBearer(bearer, now);
  }
  const cookie = readCookie(request.headers.cookie, SESSION_COOKIE);
  if (cookie === undefined) return null;
  const resolution = await resolver.resolveSession(cookie, now);
  if (
    'principal' in resolution &&
    UNSAFE_METHODS.has(request.method) &&
    !sameOrigin(request, config)
  ) {
    return {
      error: 'forbidden',
      message: 'Cookie-authenticated requests that change state need a matching Origin header',
    };
  }
  return resolution;
}

function sameOrigin(request: FastifyRequest, config: Config): boolean {
  const origin = request.headers.origin;
  if (!origin) return false;
  if (origin === new URL(config.publicUrl).origin) return true;
  const host = request.headers.host;
  return (
    host !== undefined &&
    (origin === `https://${host}` || (config.tls.mode === 'off' && origin === `http://${host}`))
  );
}

/**
 * The first cookie of that name whose value decodes. One that does not (`%ZZ`,
 * `%C3%28`) is skipped, not an error: a sibling subdomain can set such a cookie,
 * and throwing here would lock the user out of every route.
 */
function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0 || part.slice(0, eq).trim() !== name) continue;
    try {
      return decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      // not percent-encoded UTF-8: as if absent
    }
  }
  return undefined;
}

export type { FastifyReply };
