import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { SESSION_OR_BEARER } from '../../http/openapi.js';
import { listBody, listQuerySchema } from '../../http/pagination.js';
import { ListEnvelope, Nullable, Timestamp } from '../../http/schemas.js';
import { actorOf } from './audit.js';
import type { auditService } from './audit.service.js';

const AuditEvent = Type.Object(
  {
    id: Type.String({ description: '`evt_…`' }),
    action: Type.String({ description: 'Dotted verb, e.g. `secret.updated`, `secrets.listed`' }),
    actor_id: Nullable(Type.String({ description: 'The accountable user (`usr_…`)' })),
    credential: Nullable(
      Type.Object(
        {
          kind: Type.String({ description: '`session`, `api_key` or `ci_token`' }),
          id: Type.String(),
        },
        { additionalProperties: false },
      ),
    ),
    ip: Nullable(Type.String()),
    request_id: Nullable(Type.String()),
    target: Nullable(
      Type.Object({ type: Type.String(), id: Type.String() }, { additionalProperties: false }),
    ),
    data: Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'Facts about the event (before/after, names, versions); never a secret value or key',
      },
    ),
    created_at: Timestamp,
  },
  { additionalProperties: false },
);

const AuditQuery = listQuerySchema(['created_at'], {
  action: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: 'Only this action' }),
  ),
  actor_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'Only events of this user' }),
  ),
  since: Type.Optional(
    Type.String({ format: 'date-time', description: 'Events at or after this time (ISO 8601)' }),
  ),
  until: Type.Optional(
    Type.String({ format: 'date-time', description: 'Events before this time (ISO 8601)' }),
  ),
});

/** `GET /v1/projects/{project_id}/audit-events`. */
export async function auditRoutes(
  app: FastifyInstance,
  { audit: service }: { audit: ReturnType<typeof auditService> },
): Promise<void> {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/projects/:project_id/audit-events',
    {
      schema: {
        tags: ['audit'],
        summary: 'List audit events',
        operationId: 'listAuditEvents',
        security: SESSION_OR_BEARER,
        description:
          'Admins only. Every state change of the project and every read of secret values by an API key or CI token (`secret.read`, `secrets.listed`, `secret.versions_listed`; token reads are written in batches within about a quarter of a second). Newest first by default. Events never contain secret values or keys.',
        params: Type.Object({ project_id: Type.String({ minLength: 1, maxLength: 64 }) }),
        querystring: AuditQuery,
        response: { 200: ListEnvelope(AuditEvent) },
      },
    },
    async (request) => {
      const { action, actor_id, since, until, ...params } = request.query;
      const page = await service.list(
        actorOf(request),
        request.params.project_id,
        { action, actorId: actor_id, since, until },
        params,
      );
      return listBody(page, params);
    },
  );
}
