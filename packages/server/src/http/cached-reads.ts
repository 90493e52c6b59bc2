import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import proxyAddr from '@fastify/proxy-addr';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Actor } from '../domains/audit/audit.js';
import {
  bearerOf,
  forwardedProto,
  PRE_RESOLVED,
  rateLimitHeaders,
  type Conventions,
  type PreResolved,
} from './pipeline.js';
import type { CredentialResolver } from './principal.js';
import type { RateLimitState } from './rate-limit.js';
import { completedLine } from './logging.js';

/** The route the cached path answers, as Fastify names it (metrics label it so either way). */
export const CACHED_READ_ROUTE = '/v1/projects/:project_id/environments/:env/secrets/:name';

/**
 * The read route's path with nothing Fastify's router would decode or split:
 * no `%`, no query string. Anything else takes Fastify's path.
 */
const READ_PATH = /^\/v1\/projects\/([^/?%]+)\/environments\/([^/?%]+)\/secrets\/([^/?%]+)$/;
const JSON_TYPE = 'application/json; charset=utf-8';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

interface CachedReadDeps {
  config: Config;
  clock: Clock;
  resolver: CredentialResolver;
  conventions: Conventions;
  /** `SecretsService.cachedGet`: the answer's body when all of it is cached, else undefined. */
  read(actor: Actor, projectId: string, ref: string, name: string): Promise<string | undefined>;
  nextRequestId: () => string;
  log: FastifyBaseLogger;
  /** The metrics' request counter, when metrics are on. */
  observe?: (method: string, route: string, status: number, seconds: number) => void;
}

/**
 * The cached read: `GET …/environments/{env}/secrets/{name}` with an API key or
 * CI token, answered without Fastify when this instance holds everything the
 * answer needs. Reading one secret is what every application start and CI job
 * does, and in Fastify's path a cached read cost twice a bare route (hooks,
 * routing, validation, the reply's machinery) for an answer that is a cached
 * string; here it is the request's own work and Node's HTTP.
 *
 * It answers only when all of this holds, checked in this order:
 *
 * - `GET` on exactly that path (no `%`, no query), a `Host`, no body, and
 *   behind a trusted proxy not a plain-HTTP request (which is redirected);
 * - `Authorization: Bearer` with a credential `CredentialResolver.cachedBearer`
 *   knows (cached, unexpired, its last use recorded);
 * - the principal's rate limit not exceeded (one request spent);
 * - `SecretsService.cachedGet` answers: the project's change token read as for
 *   any read (the rule that a read after an acknowledged write sees it holds
 *   alike), the lookup cached under it, the caller allowed the value, and the
 *   body already serialized by Fastify's route.
 *
 * Its answer is the one Fastify's route gives, header for header (a test
 * compares them), with the same access-log line, metrics and read audit.
 * Anything else goes on to Fastify: before the rate limit as if this path did
 * not exist; after it with the principal and the spent request on the raw
 * request (`PRE_RESOLVED`), so that nothing is resolved or counted twice, and
 * Fastify gives every error, 429 included.
 */
export function serveCachedReads(
  server: Server,
  deps: CachedReadDeps,
): { readonly answered: number } {
  const { config, clock, resolver, conventions } = deps;
  const [fastify] = server.listeners('request') as Handler[];
  if (fastify === undefined) throw new Error('serveCachedReads: the server has no request handler');
  server.removeListener('request', fastify);
  const trustAll = () => true;
  const ipOf = config.trustProxy
    ? (request: IncomingMessage) => proxyAddr(request, trustAll)
    : (request: IncomingMessage) => request.socket.remoteAddress;
  const hostOf = (request: IncomingMessage) => {
    const header = config.trustProxy ? request.headers['x-forwarded-host'] : undefined;
    if (!header) return request.headers.host;
    // As Fastify's `request.host`: the last proxy's entry.
    const forwarded = String(header);
    return forwarded.slice(forwarded.lastIndexOf(',') + 1).trim();
  };
  const security = conventions.headers.flat();
  const counts = { answered: 0 };
  const logCompleted = completedLine(deps.log);

  const handOn = (request: IncomingMessage, response: ServerResponse, pre: PreResolved) => {
    request[PRE_RESOLVED] = pre;
    fastify(request, response);
  };

  const answer = (
    request: IncomingMessage,
    response: ServerResponse,
    started: number,
    requestId: string,
    ip: string | undefined,
    state: RateLimitState,
    body: string,
  ) => {
    response.writeHead(200, [
      'x-request-id',
      requestId,
      ...security,
      ...rateLimitHeaders(state),
      'content-type',
      JSON_TYPE,
      'content-length',
      String(Buffer.byteLength(body)),
    ]);
    response.end(body);
    counts.answered++;
    const elapsed = performance.now() - started;
    logCompleted(
      { id: requestId, method: 'GET', url: request.url!, host: hostOf(request), ip },
      elapsed,
    );
    deps.observe?.('GET', CACHED_READ_ROUTE, 200, elapsed / 1000);
  };

  /** True when this path took the request (answered or handed on later); false: Fastify's now. */
  const take = (request: IncomingMessage, response: ServerResponse): boolean => {
    if (request.method !== 'GET') return false;
    const url = request.url;
    if (url === undefined || !url.startsWith('/v1/projects/')) return false;
    const match = READ_PATH.exec(url);
    if (!match) return false;
    const started = performance.now();
    const headers = request.headers;
    if (headers.host === undefined || headers['transfer-encoding'] !== undefined) return false;
    if (headers['content-length'] !== undefined && headers['content-length'] !== '0') return false;
    if (config.trustProxy && forwardedProto(headers) === 'http') return false;
    if (headers.authorization === undefined) return false;
    const bearer = bearerOf(headers.authorization);
    if (typeof bearer !== 'string') return false;
    const now = clock.now();
    const principal = resolver.cachedBearer(bearer, now);
    if (principal === undefined) return false;

    const spent = conventions.spend(principal, now.getTime());
    const go = (state: RateLimitState) => {
      const pre = { principal, state };
      if (state.exceeded) return handOn(request, response, pre);
      const requestId = deps.nextRequestId();
      const ip = ipOf(request);
      const actor = { principal, ip: ip ?? null, requestId };
      deps.read(actor, match[1]!, match[2]!, match[3]!).then(
        (body) => {
          if (body === undefined) return handOn(request, response, pre);
          try {
            answer(request, response, started, requestId, ip, state, body);
          } catch (err) {
            if (!response.headersSent) return handOn(request, response, pre);
            deps.log.error({ err, reqId: requestId }, 'cached read failed after its headers');
          }
        },
        // A failure (the change token unreadable): Fastify's path gives its answer.
        () => handOn(request, response, pre),
      );
    };
    if (spent instanceof Promise) {
      // A store that must wait (Redis without a lease in hand). It does not reject (the
      // pipeline's failover counts locally instead); if it did, nothing was counted, and
      // Fastify's path counts and answers as it would have.
      spent.then(go, () => fastify(request, response));
    } else {
      go(spent);
    }
    return true;
  };

  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    if (!take(request, response)) fastify(request, response);
  });
  return counts;
}
