import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { SESSION_OR_BEARER } from '../../http/openapi.js';
import type { EventsService } from './events.service.js';
import { FEED_EVENT_TYPES } from './events.js';

const EVENT_ID = '^[0-9]{1,15}$';

const DESCRIPTION = `Server-Sent Events: the project's changes as they commit, for a session, an API key or a CI token. **No event ever carries a value or a ciphertext**: a client fetches and decrypts what changed itself.

Each event has an \`id:\` line (its position in the project's audit chain, increasing), an \`event:\` line (its kind) and a \`data:\` line (JSON). Kinds: ${FEED_EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}; and the stream's own notices \`ready\` (live from \`last_id\` on), \`reset\` (the id you resumed from is no longer kept: re-read everything) and \`end\` (the stream ends: \`reason\` \`credential_revoked\`, \`credential_expired\`, \`access_lost\`, \`access_changed\`, \`project_deleted\` or \`shutdown\`, with a \`retry:\` hint). Shapes: docs/events.md.

A credential sees what it may list: a token only the environments in its scopes; CI tokens no members. Resume with \`Last-Event-ID\` (or \`since\`): what was missed is replayed from the audit log. A comment line every 15 s keeps proxies from closing an idle stream. Open streams are limited per credential and per instance (\`429\`); a stream counts once against the rate limit.`;

/** `GET /v1/projects/{project_id}/events`: the change feed as Server-Sent Events. */
export async function eventsRoutes(
  app: FastifyInstance,
  { events: service }: { events: EventsService },
): Promise<void> {
  // Graceful shutdown: before the server waits for in-flight requests, every
  // stream ends with a reconnect hint (streams never finish on their own).
  app.addHook('preClose', (done) => {
    service.shutdown();
    done();
  });

  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/projects/:project_id/events',
    {
      schema: {
        tags: ['events'],
        summary: 'Stream the project’s changes (Server-Sent Events)',
        operationId: 'streamEvents',
        security: SESSION_OR_BEARER,
        description: DESCRIPTION,
        params: Type.Object({ project_id: Type.String({ minLength: 1, maxLength: 64 }) }),
        querystring: Type.Object(
          {
            environment: Type.Optional(
              Type.String({
                minLength: 1,
                maxLength: 64,
                description:
                  'Only this environment’s events (id or slug), and the project-wide `vault.rekeyed` and `project.deleted`',
              }),
            ),
            since: Type.Optional(
              Type.String({
                pattern: EVENT_ID,
                description: 'Replay the events after this id (as `Last-Event-ID`, which wins)',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        headers: Type.Object({
          'last-event-id': Type.Optional(
            Type.String({
              pattern: EVENT_ID,
              description: 'The id of the last event received: what came after is replayed',
            }),
          ),
        }),
        response: {
          200: {
            description:
              'A `text/event-stream` that stays open: events, notices and heartbeat comments',
            content: {
              'text/event-stream': {
                schema: Type.String({
                  description:
                    'id: 118\\nevent: secrets.changed\\ndata: {"id":118,"type":"secrets.changed",…}\\n\\n',
                }),
              },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const lastEventId = request.headers['last-event-id'] ?? request.query.since;
      const ticket = await service.prepare(request.principal, request.params.project_id, {
        environment: request.query.environment,
        since: lastEventId === undefined ? undefined : Number(lastEventId),
      });
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string | number | string[]>),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        // Proxies that buffer responses (nginx) pass this one through as it comes.
        'x-accel-buffering': 'no',
      });
      raw.flushHeaders();
      const stream = await service.start(ticket, raw);
      raw.once('close', () => stream.close());
      if (raw.destroyed) stream.close();
    },
  );
}
