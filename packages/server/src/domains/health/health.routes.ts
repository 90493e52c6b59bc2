import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { SharedDeps } from '../../shared-deps.js';
import { AppError } from '../../errors.js';
import { NO_CREDENTIAL } from '../../http/openapi.js';
import { DataEnvelope } from '../../http/schemas.js';

const Health = DataEnvelope(
  Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false }),
);

/** `/healthz`: the process is alive. `/readyz`: and its database answers. Neither is rate limited. */
export async function healthRoutes(
  app: FastifyInstance,
  { db }: Pick<SharedDeps, 'db'>,
): Promise<void> {
  app.get(
    '/healthz',
    {
      config: { rateClass: 'none' },
      schema: {
        tags: ['ops'],
        summary: 'Liveness probe',
        operationId: 'getLiveness',
        security: NO_CREDENTIAL,
        response: { 200: Health },
      },
    },
    async () => ({ data: { status: 'ok' as const } }),
  );
  app.get(
    '/readyz',
    {
      config: { rateClass: 'none' },
      schema: {
        tags: ['ops'],
        summary: 'Readiness probe: the database answers',
        operationId: 'getReadiness',
        security: NO_CREDENTIAL,
        response: { 200: Health },
      },
    },
    async (request) => {
      try {
        await db.ping();
      } catch (err) {
        request.log.warn({ err }, 'readiness check failed');
        throw new AppError('service_unavailable', 'The database is not reachable');
      }
      return { data: { status: 'ok' as const } };
    },
  );
}
