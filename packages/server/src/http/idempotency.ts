import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onSendHookHandler,
  preHandlerHookHandler,
} from 'fastify';
import { AppError } from '../errors.js';
import { runClaimed, type WriteClaim } from '../db/write-claims.js';
import type { Claimed, IdempotencyService } from '../domains/idempotency/idempotency.service.js';
import type { ResultShape } from '../domains/idempotency/body-strings.js';
import type { Principal } from './principal.js';
import { hooksOf, servesWrites, UNSAFE_METHODS } from './write-routes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The idempotency claim this request's write runs under, if it sent a key. */
    writeClaim: WriteClaim | null;
  }
  interface FastifyContextConfig {
    /**
     * The route's change is one environment write (`db/environment-write.ts`)
     * and nothing the route does before it depends on the claim (its time,
     * its ids): a repeat can be recognised at the write's commit instead of
     * by reading the key before the handler (see `IdempotencyService.claim`).
     * The route passes the claim to its write itself (`Actor.writeClaim`):
     * the handler does not run in the claims' async context, whose promise
     * hook would cost every promise of the process while it is on.
     */
    idempotencyAtCommit?: boolean;
    /**
     * The route's write result, without the strings its request's body holds
     * (which are never stored), holds only what the database holds in clear
     * anyway (a secret's id, name, version and times; no value, token or key
     * that is not the client's own from the body): it is stored under the key
     * unsealed, as JSON, which saves a keyed write the key derivation, AES-GCM and base64
     * (`resultCodec` in domains/idempotency). A route whose result can hold
     * anything else (a rollback's earlier ciphertext, a new API key's bearer
     * part) leaves this unset, and its results are sealed.
     */
    idempotencyResultInClear?: boolean;
    /**
     * How the route's write result is laid out, so that it is stored by
     * position, in clear (it implies `idempotencyResultInClear`), without its
     * property names (`ResultShape` in domains/idempotency/body-strings.ts).
     * A result laid out otherwise is stored as JSON.
     */
    idempotencyResultShape?: ResultShape;
  }
}

/** 16 to 64 visible ASCII characters: what a client generates (a UUID, 32 random base64url). */
const KEY_PATTERN = /^[\x21-\x7e]{16,64}$/;
const REPLAYED_HEADER = 'idempotent-replayed';

const atCommit = (request: FastifyRequest) =>
  request.routeOptions.config?.idempotencyAtCommit === true;

/** Whose keys a credential's requests use: a person's sessions share theirs. */
const ownerOf = (principal: Principal) =>
  principal.kind === 'session' ? `user:${principal.userId}` : `${principal.kind}:${principal.id}`;

/**
 * `Idempotency-Key` on every unsafe request (ARCHITECTURE.md, "Idempotency
 * keys"): once the request is authenticated and validated, its claim is taken
 * (`IdempotencyService.claim`) and the handler runs inside it, so that the
 * write's own transaction records the key (db/write-claims.ts). No route does
 * anything for it. Requests without a credential (sign-up, log-in) take no part.
 */
export function registerIdempotency(
  app: FastifyInstance,
  { idempotency }: { idempotency: Pick<IdempotencyService, 'claim'> },
): void {
  app.decorateRequest('writeClaim', null);

  /** With the claim taken: the rest of the request's handling runs under it. */
  const proceed = (
    request: FastifyRequest,
    reply: FastifyReply,
    { claim, done }: Claimed,
    next: HookHandlerDoneFunction,
  ) => {
    // Answered, or the connection gone: a repeat waiting on this instance goes
    // on. `done` may run twice, so `on`: `once` would wrap it for each request.
    reply.raw.on('close', done);
    request.writeClaim = claim;
    // A route checking at commit passes the claim to its write itself.
    if (atCommit(request)) return next();
    // The handler runs inside the claim, and so does every call it makes.
    runClaimed(claim, next, (release) => reply.raw.once('close', release));
  };
  // A callback hook, not an async one: a write without a key, and a keyed one
  // whose claim is taken at once, go on without a promise.
  const claimKey: preHandlerHookHandler = (request, reply, next) => {
    if (!UNSAFE_METHODS.has(request.method)) return next();
    const key = request.headers['idempotency-key'];
    if (key === undefined) return next();
    if (typeof key !== 'string' || !KEY_PATTERN.test(key)) {
      return next(
        new AppError(
          'validation_error',
          'Idempotency-Key must be 16 to 64 visible ASCII characters, new for each request',
          [{ field: 'Idempotency-Key', issue: 'invalid' }],
        ),
      );
    }
    if (!request.principal) return next();
    let claimed: Claimed | Promise<Claimed>;
    // Only the claim's own failures are caught here: what `next` runs reports its own.
    try {
      const config = request.routeOptions.config;
      claimed = idempotency.claim(
        {
          owner: ownerOf(request.principal),
          key,
          method: request.method,
          url: request.url,
          body: request.body,
          // Kept by the JSON parser (http/json-body.ts).
          bodyBytes: request.bodyBytes,
        },
        {
          atCommit: atCommit(request),
          // A shape stores the result by position, in clear: it implies `idempotencyResultInClear`.
          resultInClear:
            config?.idempotencyResultInClear === true ||
            config?.idempotencyResultShape !== undefined,
          resultShape: config?.idempotencyResultShape,
        },
      );
    } catch (err) {
      return next(err as Error);
    }
    if (!(claimed instanceof Promise)) return proceed(request, reply, claimed, next);
    claimed.then(
      (taken) => proceed(request, reply, taken, next),
      (err: unknown) => next(err as Error),
    );
  };
  // A repeat's answer says it is one. The claim only sets a flag: were it to
  // call back into the reply, every keyed request's reply, request and socket
  // state would be reachable from the write's queue (docs/performance.md,
  // "What kept keyed writes alive").
  const markReplayed: onSendHookHandler = (request, reply, payload, next) => {
    if (request.writeClaim?.replayed) void reply.header(REPLAYED_HEADER, 'true');
    next(null, payload);
  };
  // Only routes with an unsafe method get the hooks (reads pay nothing), ahead of
  // the route's own: a write's mark (`markProjectWrites`) is taken inside the claim.
  app.addHook('onRoute', (route) => {
    if (!servesWrites(route)) return;
    route.preHandler = [claimKey, ...hooksOf(route.preHandler)];
    route.onSend = [markReplayed, ...hooksOf(route.onSend)];
  });
}

/**
 * Documents the header on every unsafe operation of the OpenAPI document, with
 * the answers it adds (`409 request_in_progress`, `422 idempotency_key_reused`)
 * and the `Idempotent-Replayed` header of a repeat's answer.
 */
export function documentIdempotency<T>(document: T): T {
  type Json = Record<string, unknown>;
  const paths = (document as { paths?: Record<string, Json> }).paths ?? {};
  for (const item of Object.values(paths)) {
    for (const [method, value] of Object.entries(item)) {
      if (!UNSAFE_METHODS.has(method.toUpperCase())) continue;
      const operation = value as Json;
      const parameters = (operation.parameters ??= []) as Json[];
      parameters.push({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description:
          'A key the client generates for this write (16 to 64 visible ASCII characters, e.g. a UUID) and sends again when it retries it. For 24 hours a repeat with the same credential, method, URL and body (compared as sent, byte for byte) is not executed again: it is answered as the first was, with `Idempotent-Replayed: true`. The same key with another request is `422 idempotency_key_reused`; a repeat while the first is still being handled waits for it, or answers `409 request_in_progress`. Ignored on requests without a credential (sign-up, log-in).',
        schema: { type: 'string', minLength: 16, maxLength: 64, pattern: '^[\\x21-\\x7e]+$' },
      });
    }
  }
  return document;
}
