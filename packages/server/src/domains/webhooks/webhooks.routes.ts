import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { absentBodyIsEmpty, refuseBodyFields } from '../../http/no-body.js';
import { SESSION_ONLY } from '../../http/openapi.js';
import { listBody } from '../../http/pagination.js';
import { ProjectIdParams } from '../../http/params.js';
import { ok } from '../../http/schemas.js';
import { actorOf } from '../audit/audit.js';
import {
  CreateWebhookBody,
  DeliveryEnvelope,
  DeliveryList,
  DeliveryListQuery,
  RotateSecretBody,
  UpdateWebhookBody,
  WebhookEnvelope,
  WebhookList,
  WebhookListQuery,
  WebhookParams,
  WebhookWithSecret,
} from './webhooks.schemas.js';
import type { WebhooksService } from './webhooks.service.js';

const tags = ['webhooks'];
const WHO =
  'Signed-in admins of the project only: developers, viewers, API keys and CI tokens get `403 forbidden`.';
const URL_RULES =
  'The URL is checked here and again before every attempt: `https` (plain `http` only with `WEBHOOK_ALLOW_HTTP=true`), no user name or password, and a host whose every address is public: loopback, private, link-local, shared (CGNAT), multicast, unspecified, reserved and cloud metadata addresses (IPv4 and IPv6, IPv4-mapped included) are refused with `422 unprocessable`, details `url` and the reason (`loopback_address`, `private_address`, …, `https_required`, `unresolvable`), unless the operator allows private receivers (`WEBHOOK_ALLOW_PRIVATE=true`; metadata addresses never).';

/** `/projects/{project_id}/webhooks`: register, inspect, change, test and delete webhooks. */
export async function webhooksRoutes(
  app: FastifyInstance,
  { webhooks }: { webhooks: WebhooksService },
): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/projects/:project_id/webhooks',
    {
      schema: {
        tags,
        summary: 'List webhooks',
        operationId: 'listWebhooks',
        security: SESSION_ONLY,
        description: `${WHO} Signing secrets are never listed.`,
        params: ProjectIdParams,
        querystring: WebhookListQuery,
        response: { 200: WebhookList },
      },
    },
    async (request) =>
      listBody(
        await webhooks.list(request.principal, request.params.project_id, request.query),
        request.query,
      ),
  );

  r.post(
    '/projects/:project_id/webhooks',
    {
      schema: {
        tags,
        summary: 'Register a webhook',
        operationId: 'createWebhook',
        security: SESSION_ONLY,
        description: `${WHO} The answer holds the signing secret (\`whsec_…\`) once; requests are signed as Standard Webhooks do (\`webhook-id\`, \`webhook-timestamp\`, \`webhook-signature\`). \`environments\` (ids or slugs) and \`event_kinds\` narrow what it receives; empty or absent: everything. It receives the change feed's events from now on, never a value or ciphertext. ${URL_RULES}`,
        params: ProjectIdParams,
        body: CreateWebhookBody,
        response: { 201: WebhookWithSecret },
      },
    },
    async (request, reply) => {
      const created = await webhooks.create(
        actorOf(request),
        request.params.project_id,
        request.body,
      );
      return reply.code(201).send(ok(created));
    },
  );

  r.get(
    '/projects/:project_id/webhooks/:webhook_id',
    {
      schema: {
        tags,
        summary: 'Get a webhook',
        operationId: 'getWebhook',
        security: SESSION_ONLY,
        description: `${WHO} \`disabled_reason\` \`failing\`: the server disabled it after every attempt failed for the whole retry window (\`failing_since\`).`,
        params: WebhookParams,
        response: { 200: WebhookEnvelope },
      },
    },
    async (request) =>
      ok(
        await webhooks.get(request.principal, request.params.project_id, request.params.webhook_id),
      ),
  );

  r.patch(
    '/projects/:project_id/webhooks/:webhook_id',
    {
      schema: {
        tags,
        summary: 'Change a webhook',
        operationId: 'updateWebhook',
        security: SESSION_ONLY,
        description: `${WHO} Any of \`url\`, \`description\`, \`environments\`, \`event_kinds\`, \`enabled\`. Disabling marks what is still queued \`failed\`; enabling starts from the next event (what happened while it was off is not sent). ${URL_RULES}`,
        params: WebhookParams,
        body: UpdateWebhookBody,
        response: { 200: WebhookEnvelope },
      },
    },
    async (request) =>
      ok(
        await webhooks.update(
          actorOf(request),
          request.params.project_id,
          request.params.webhook_id,
          request.body,
        ),
      ),
  );

  r.delete(
    '/projects/:project_id/webhooks/:webhook_id',
    {
      preValidation: refuseBodyFields,
      schema: {
        tags,
        summary: 'Delete a webhook',
        operationId: 'deleteWebhook',
        security: SESSION_ONLY,
        description: `${WHO} Its queue and delivery log go with it.`,
        params: WebhookParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      await webhooks.remove(actorOf(request), request.params.project_id, request.params.webhook_id);
      return reply.code(204).send(null);
    },
  );

  r.post(
    '/projects/:project_id/webhooks/:webhook_id/rotate-secret',
    {
      preValidation: absentBodyIsEmpty,
      schema: {
        tags,
        summary: "Rotate a webhook's signing secret",
        operationId: 'rotateWebhookSecret',
        security: SESSION_ONLY,
        description: `${WHO} Answers the new secret once. Until \`previous_secret_expires_at\` (\`overlap_seconds\`, 24 hours by default) every request carries two signatures, space-separated: the new secret's first, then the old one's; a receiver holding either verifies it.`,
        params: WebhookParams,
        body: RotateSecretBody,
        'x-optional-body': true,
        response: { 200: WebhookWithSecret },
      },
    },
    async (request) =>
      ok(
        await webhooks.rotateSecret(
          actorOf(request),
          request.params.project_id,
          request.params.webhook_id,
          request.body,
        ),
      ),
  );

  r.post(
    '/projects/:project_id/webhooks/:webhook_id/test',
    {
      preValidation: refuseBodyFields,
      schema: {
        tags,
        summary: 'Send a test event',
        operationId: 'testWebhook',
        security: SESSION_ONLY,
        description: `${WHO} Queues a \`webhook.test\` event behind what is already queued and answers \`202\` with the delivery; its outcome appears in the delivery log. \`422\` when the webhook is disabled.`,
        params: WebhookParams,
        response: { 202: DeliveryEnvelope },
      },
    },
    async (request, reply) => {
      const delivery = await webhooks.sendTest(
        actorOf(request),
        request.params.project_id,
        request.params.webhook_id,
      );
      return reply.code(202).send(ok(delivery));
    },
  );

  r.get(
    '/projects/:project_id/webhooks/:webhook_id/deliveries',
    {
      schema: {
        tags,
        summary: "List a webhook's deliveries",
        operationId: 'listWebhookDeliveries',
        security: SESSION_ONLY,
        description: `${WHO} Newest first by default (\`order=asc\`: in the order they are sent). Each delivery carries its log: every attempt with its outcome, duration, status code and at most the first 200 characters of the receiver's answer. Filter \`status\`: \`pending\`, \`delivered\`, \`failed\`.`,
        params: WebhookParams,
        querystring: DeliveryListQuery,
        response: { 200: DeliveryList },
      },
    },
    async (request) =>
      listBody(
        await webhooks.deliveries(
          request.principal,
          request.params.project_id,
          request.params.webhook_id,
          request.query,
        ),
        request.query,
      ),
  );
}
