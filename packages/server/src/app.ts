import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { systemClock } from './clock.js';
import { compose, type ProcessResources } from './compose.js';
import { AppError } from './errors.js';
import { registerErrorHandling, sendError } from './http/errors.js';
import { trackAnswers, whenAnswered } from './http/connections.js';
import { AccessLog, loggerOptions } from './http/logging.js';
import { registerPipeline } from './http/pipeline.js';
import { documentIdempotency, registerIdempotency } from './http/idempotency.js';
import {
  MemoryRateLimitStore,
  type RateLimitState,
  type RateLimitStore,
} from './http/rate-limit.js';
import { ErrorEnvelope } from './http/schemas.js';
import { registerParameterCoercion } from './http/validation.js';
import { registerTextCheck } from './http/text.js';
import { registerJsonBodies } from './http/json-body.js';
import { healthRoutes } from './domains/health/health.routes.js';
import { docsRoutes } from './domains/docs/docs.routes.js';
import { dashboardRoutes } from './domains/dashboard/dashboard.routes.js';
import { V1_DOMAINS } from './domains/index.js';
import { documentErrorResponses, RATE_LIMITED, SECURITY_SCHEMES } from './http/openapi.js';
import type { Metrics } from './metrics.js';
import { notifyAfterWrites } from './domains/events/after-write.js';
import { countPendingDeliveries } from './domains/webhooks/webhooks.repo.js';
import { markProjectWrites } from './http/project-writes.js';
import { lazySchemas } from './http/lazy-schemas.js';
import { serveCachedReads } from './http/cached-reads.js';

export interface AppDeps extends Omit<ProcessResources, 'clock'> {
  clock?: ProcessResources['clock'];
  rateLimitStore?: RateLimitStore;
  logger?: FastifyServerOptions['logger'];
  /** TLS material; without it the instance speaks plain HTTP (tests inject, proxies terminate TLS). */
  https?: { key: string | Buffer; cert: string | Buffer; handshakeTimeout?: number };
}

export type App = FastifyInstance;

declare module 'fastify' {
  interface FastifyInstance {
    /** This app's cache of resolved credentials (tests and instances sharing revocations reach it). */
    credentials: import('./domains/identity/credentials.js').CredentialCache;
    /** This app's metrics when they are on (`METRICS_PORT` or `METRICS_TOKEN`), else null. */
    metrics: Metrics | null;
    /** Compiles every route schema not compiled yet (they compile on first use); how many. */
    compileSchemas(): number;
  }
}

/**
 * Request ids: a random per-app prefix and a counter. Unique across instances
 * and restarts without a call into the CSPRNG on every request (they are
 * correlation ids, not secrets).
 */
function requestIds(): () => string {
  const prefix = randomBytes(6).toString('base64url');
  let counter = 0;
  return () => `req_${prefix}${(counter++).toString(36).padStart(6, '0')}`;
}

/** Builds the Fastify app with every convention and domain registered. Never listens. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const { config } = deps;
  const clock = deps.clock ?? systemClock;
  const rateLimitStore = deps.rateLimitStore ?? new MemoryRateLimitStore();
  // Filled in once the pipeline exists: errors Fastify raises before routing
  // (a malformed URL) still get the request id, security and rate-limit headers.
  let conventions: ((request: FastifyRequest, reply: FastifyReply) => Promise<unknown>) | null =
    null;
  // Refusals written before there is a request (broken HTTP, oversized headers)
  // spend the client IP's anonymous budget once the pipeline exists.
  let countAnonymous: ((ip: string) => Promise<RateLimitState>) | null = null;
  const nextRequestId = requestIds();
  const schemas = lazySchemas();

  const options: FastifyServerOptions = {
    logger: loggerOptions(config.logLevel, deps.logger),
    logController: new AccessLog(),
    trustProxy: config.trustProxy,
    bodyLimit: config.bodyLimitBytes,
    genReqId: nextRequestId,
    // During shutdown a request that arrives on a kept-alive connection is still
    // served (with `Connection: close`) by the normal pipeline, so it gets a Form A
    // body rather than Fastify's own 503.
    return503OnClosing: false,
    forceCloseConnections: false,
    schemaController: {
      compilersFactory: schemas.compilersFactory,
    } as FastifyServerOptions['schemaController'],
    ajv: {
      customOptions: {
        removeAdditional: false,
        allErrors: true,
        // Bodies are JSON and must match their types exactly; query strings and
        // path parameters are converted first by `registerParameterCoercion`.
        coerceTypes: false,
        useDefaults: true,
      },
    },
    // Above the longest secret name (256), so a too-long name gets its field-level 400.
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 300 },
    frameworkErrors: (error, request, reply) => {
      const reject = () =>
        sendError(request, reply, 'validation_error', 'The request URL is malformed', [
          { field: 'url', issue: 'invalid' },
        ]);
      if (!conventions) return reject();
      // The pipeline may refuse first (429); its error is answered the same way.
      void conventions(request, reply).then(reject, (err: unknown) =>
        err instanceof AppError
          ? sendError(request, reply, err.code, err.message, err.details)
          : sendError(request, reply, 'internal_error', 'An unexpected error occurred'),
      );
    },
    clientErrorHandler: (err: Error & { code?: string }, socket: Socket) =>
      rejectMalformedRequest(err, socket, nextRequestId(), countAnonymous),
  };
  // Node's own refusal of a request without Host is a bare 400; the pipeline
  // refuses it instead, in Form A (`refuseWithoutHost`).
  const app = (deps.https
    ? Fastify({
        ...options,
        https: { ...deps.https, requireHostHeader: false },
      } as FastifyServerOptions)
    : Fastify({ ...options, http: { requireHostHeader: false } } as FastifyServerOptions)
  ).withTypeProvider<TypeBoxTypeProvider>() as unknown as FastifyInstance;

  trackAnswers(app.server);
  const parts = compose({ ...deps, clock }, app.log);
  app.decorate('credentials', parts.credentials);
  app.addHook('onReady', async () => parts.start());
  app.addHook('onClose', () => parts.close());
  notifyAfterWrites(app, parts.events.notifier);
  const { port: metricsPort, token: metricsToken } = config.metrics;
  // prom-client loads only when metrics are on (a tenth of a start's CPU otherwise).
  const metricsModule =
    metricsPort !== null || metricsToken !== null ? await import('./metrics.js') : null;
  const metrics = metricsModule ? new metricsModule.Metrics() : undefined;
  app.decorate('metrics', metrics ?? null);
  app.decorate('compileSchemas', schemas.compileAll);
  const { resolver, shared } = parts;

  registerErrorHandling(app);
  registerParameterCoercion(app);
  registerTextCheck(app);
  const pipeline = registerPipeline(app, { config, clock, resolver, rateLimitStore });
  if (shared.changeTokens) markProjectWrites(app, shared.changeTokens);
  conventions = pipeline.onRequest;
  countAnonymous = pipeline.countAnonymous;
  registerIdempotency(app, parts);
  // JSON is the only request body type; anything else is 415.
  registerJsonBodies(app);

  // Every route documents the Form A error body for its failures.
  app.addHook('onRoute', (route) => {
    if (!route.schema) return;
    const response = (route.schema.response ?? {}) as Record<string, unknown>;
    response['4xx'] ??= ErrorEnvelope;
    response['5xx'] ??= ErrorEnvelope;
    route.schema.response = response;
    (route.schema as Record<string, unknown>)[RATE_LIMITED] = route.config?.rateClass !== 'none';
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Coffer API',
        version: '1.0.0',
        description:
          'End-to-end encrypted secrets manager. Form A conventions: `{data}` envelopes, `{error:{code,message,details}}` errors, page/per_page/sort/order pagination.',
      },
      servers: [{ url: config.publicUrl }],
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    // Shared schemas keep their own name (`Pagination`) instead of `def-0`.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
    transformObject: (document) =>
      documentIdempotency(
        documentErrorResponses(
          withOptionalDefaults(
            'openapiObject' in document ? document.openapiObject : document.swaggerObject,
          ),
        ),
      ),
  });

  if (metrics && metricsModule) {
    metricsModule.registerMetrics(
      app,
      metrics,
      {
        ...shared,
        outbox: parts.outbox,
        readCaches: {
          listing: shared.listingCache,
          access: parts.services.secrets.caches.access,
          secret: parts.services.secrets.caches.secret,
          credential: parts.credentials,
        },
      },
      metricsToken,
    );
    metrics.gauge(
      'coffer_audit_buffer_events',
      'Audit events of token reads waiting in memory to be written',
      () => parts.readAudit.size,
    );
    metrics.counter(
      'coffer_webhook_failed_attempts_total',
      'Webhook delivery attempts that failed (retried until the webhook is disabled)',
      () => parts.webhookWorker.failedAttempts,
    );
    metrics.gauge(
      'coffer_webhook_deliveries_pending',
      'Webhook deliveries queued and not yet delivered (backlog)',
      () => countPendingDeliveries(shared.db.kysely),
    );
  }
  await app.register(healthRoutes, shared);
  await app.register(docsRoutes);
  const v1Deps = { ...parts.services, rekeyBodyLimitBytes: config.rekeyBodyLimitBytes };
  await app.register(
    async (v1) => {
      for (const domain of V1_DOMAINS) await v1.register(domain, v1Deps);
    },
    { prefix: '/v1' },
  );
  await app.register(dashboardRoutes, shared);

  const secrets = parts.services.secrets;
  const cached = serveCachedReads(app.server, {
    config,
    clock,
    resolver,
    conventions: pipeline.conventions,
    read: (actor, projectId, ref, name) => secrets.cachedGet(actor, projectId, ref, name),
    nextRequestId,
    log: app.log,
    observe: metrics?.observeRequest.bind(metrics),
  });
  metrics?.counter(
    'coffer_cached_reads_total',
    'Secret reads answered by the cached-read path, without Fastify (already counted in coffer_http_requests_total)',
    () => cached.answered,
  );
  return app;
}

/** Sockets already answered: a parser in error reports every further chunk again. */
const refusedSockets = new WeakSet<Socket>();

/**
 * Requests Node cannot even parse (broken HTTP, oversized headers) never reach
 * Fastify's routing; they still get a Form A body with a request id, and the
 * rate-limit headers of the client IP's anonymous budget, which they spend (the
 * socket's peer address: behind a proxy, the proxy's).
 */
function rejectMalformedRequest(
  err: Error & { code?: string },
  socket: Socket,
  requestId: string,
  countAnonymous: ((ip: string) => Promise<RateLimitState>) | null,
): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || refusedSockets.has(socket)) return;
  refusedSockets.add(socket);
  const [status, reason, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'Request headers are too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'The request took too long to arrive']
        : [400, 'Bad Request', 'The request is not valid HTTP'];
  const body = JSON.stringify({
    error: { code: 'validation_error', message, request_id: requestId },
  });
  const counted =
    countAnonymous && socket.remoteAddress
      ? countAnonymous(socket.remoteAddress).catch(() => null)
      : Promise.resolve(null);
  // Bytes that cannot be parsed after a valid request on the same connection
  // (pipelined): that request is answered first, as HTTP/1.1 orders answers.
  void Promise.all([counted, whenAnswered(socket)]).then(([state]) => {
    if (socket.destroyed) return;
    const limits = state
      ? `X-RateLimit-Limit: ${state.limit}\r\nX-RateLimit-Remaining: ${state.remaining}\r\nX-RateLimit-Reset: ${state.reset}\r\n`
      : '';
    if (socket.writable) {
      socket.end(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n${limits}X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    // The answer is on its way (FIN after it); whatever the client still sends is
    // dropped until it closes too, or for a second at most.
    const linger = setTimeout(() => socket.destroy(), 1000);
    linger.unref();
    socket.once('close', () => clearTimeout(linger));
  });
}

/**
 * A query parameter with a default (`page`, `per_page`, `sort`, `order`) may be
 * left out; the schema lists it as required only because validation fills it in.
 */
function withOptionalDefaults<T>(document: T): T {
  const paths = (document as { paths?: Record<string, Record<string, unknown>> }).paths ?? {};
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      const parameters = (operation as { parameters?: unknown[] }).parameters ?? [];
      for (const p of parameters as { in?: string; required?: boolean; schema?: object }[]) {
        if (p.in !== 'path' && p.schema && 'default' in p.schema) p.required = false;
      }
      // A route whose body may be left out marks its schema `'x-optional-body': true`;
      // @fastify/swagger otherwise documents every body as required.
      const op = operation as { 'x-optional-body'?: boolean; requestBody?: { required?: boolean } };
      if (op['x-optional-body']) {
        if (op.requestBody) op.requestBody.required = false;
        delete op['x-optional-body'];
      }
    }
  }
  return document;
}
