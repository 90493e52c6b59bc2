import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config.js';
import { systemClock, type Clock } from './clock.js';
import type { Db } from './db/database.js';
import { registerErrorHandling } from './http/errors.js';
import { registerPipeline } from './http/pipeline.js';
import type { CredentialResolver } from './http/principal.js';
import { MemoryRateLimitStore, type RateLimitStore } from './http/rate-limit.js';
import { ErrorEnvelope } from './http/schemas.js';
import { healthRoutes } from './domains/health/health.routes.js';
import { docsRoutes } from './domains/docs/docs.routes.js';
import { V1_DOMAINS } from './domains/index.js';

export interface AppDeps {
  config: Config;
  db: Db;
  clock?: Clock;
  rateLimitStore?: RateLimitStore;
  /** How credentials become principals; the identity domain's resolver when omitted. */
  resolver?: CredentialResolver;
  logger?: FastifyServerOptions['logger'];
  /** TLS material; without it the instance speaks plain HTTP (tests inject, proxies terminate TLS). */
  https?: { key: string | Buffer; cert: string | Buffer };
}

/** Everything a domain's routes may use. Built once per app. */
export interface AppContext {
  config: Config;
  db: Db;
  clock: Clock;
}

export type App = FastifyInstance;

/** Log paths that must never reach a log line: credentials and anything secret. */
export const REDACTED_LOG_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  '*.password',
  '*.auth_key',
  '*.credential',
  '*.token',
];

/** Builds the Fastify app with every convention and domain registered. Never listens. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const { config, db } = deps;
  const clock = deps.clock ?? systemClock;
  const rateLimitStore = deps.rateLimitStore ?? new MemoryRateLimitStore();

  const options: FastifyServerOptions = {
    logger: deps.logger ?? {
      level: config.logLevel,
      redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
    },
    trustProxy: config.trustProxy,
    bodyLimit: config.bodyLimitBytes,
    genReqId: () => `req_${randomBytes(12).toString('base64url')}`,
    return503OnClosing: true,
    forceCloseConnections: false,
    ajv: {
      customOptions: {
        removeAdditional: false,
        allErrors: true,
        coerceTypes: 'array',
        useDefaults: true,
      },
    },
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
  };
  const app = (deps.https
    ? Fastify({ ...options, https: deps.https } as FastifyServerOptions)
    : Fastify(options)
  ).withTypeProvider<TypeBoxTypeProvider>() as unknown as FastifyInstance;

  const context: AppContext = { config, db, clock };
  const resolver =
    deps.resolver ??
    (await import('./domains/identity/credentials.js')).credentialResolver(context);

  registerErrorHandling(app);
  registerPipeline(app, { config, clock, resolver, rateLimitStore });

  // Every route documents the Form A error body for its failures.
  app.addHook('onRoute', (route) => {
    if (!route.schema) return;
    const response = (route.schema.response ?? {}) as Record<string, unknown>;
    response['4xx'] ??= ErrorEnvelope;
    response['5xx'] ??= ErrorEnvelope;
    route.schema.response = response;
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
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'API key (cek_…) or CI token (ci_…): the part before the "."',
          },
          session: { type: 'apiKey', in: 'cookie', name: 'coffer_session' },
        },
      },
    },
  });

  await app.register(healthRoutes, context);
  await app.register(docsRoutes, context);
  await app.register(
    async (v1) => {
      for (const domain of V1_DOMAINS) await v1.register(domain, context);
    },
    { prefix: '/v1' },
  );

  return app;
}
