import { Type } from 'typebox';
import { idPattern } from '../../ids.js';
import { listQuerySchema } from '../../http/pagination.js';
import { DataEnvelope, ListEnvelope, Nullable, Timestamp } from '../../http/schemas.js';
import { FEED_EVENT_TYPES, type FeedEventType } from '../events/events.js';
import { MAX_URL_LENGTH } from './address-guard.js';

/** The kind of the event "send a test event" queues; never a change-feed event. */
export const TEST_EVENT_KIND = 'webhook.test';

/**
 * The change feed's event kinds a webhook can subscribe to (docs/events.md);
 * not `project.deleted`: a project's webhooks are deleted with it.
 */
export const WEBHOOK_EVENT_KINDS = FEED_EVENT_TYPES.filter(
  (k): k is Exclude<FeedEventType, 'project.deleted'> => k !== 'project.deleted',
);
export type WebhookEventKind = (typeof WEBHOOK_EVENT_KINDS)[number];

export const WebhookParams = Type.Object(
  {
    project_id: Type.String({ pattern: idPattern('project') }),
    webhook_id: Type.String({ pattern: idPattern('webhook') }),
  },
  { additionalProperties: false },
);

const Url = Type.String({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  description:
    'The receiver: `https://` (`http://` only where the operator allows it), never resolving to a loopback, private, link-local, shared or metadata address unless the operator allows private receivers',
});
const Description = Type.String({ maxLength: 500 });
const EnvironmentRefs = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  maxItems: 100,
  description: 'Environment ids or slugs; empty: every environment (answers hold ids)',
});
const EventKinds = Type.Array(Type.Union(WEBHOOK_EVENT_KINDS.map((k) => Type.Literal(k))), {
  maxItems: WEBHOOK_EVENT_KINDS.length,
  uniqueItems: true,
  description: 'Empty: every kind',
});

const Webhook = Type.Object(
  {
    id: Type.String(),
    project_id: Type.String(),
    url: Type.String(),
    description: Type.String(),
    environments: Type.Array(Type.String()),
    event_kinds: Type.Array(Type.String()),
    enabled: Type.Boolean(),
    disabled_reason: Nullable(
      Type.Union([Type.Literal('failing'), Type.Literal('admin')], {
        description: '`failing`: disabled by the server after failing for the whole retry window',
      }),
    ),
    disabled_at: Nullable(Timestamp),
    failing_since: Nullable(Timestamp),
    previous_secret_expires_at: Nullable(Timestamp),
    created_by: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false },
);

const WithSecret = Type.Object(
  {
    ...Webhook.properties,
    secret: Type.String({
      description: 'The signing secret (`whsec_…`), shown once: store it with the receiver',
    }),
  },
  { additionalProperties: false },
);

export const WebhookEnvelope = DataEnvelope(Webhook);
export const WebhookWithSecret = DataEnvelope(WithSecret);
export const WebhookList = ListEnvelope(Webhook);
export const WebhookListQuery = listQuerySchema(['created_at', 'url'], {});

export const CreateWebhookBody = Type.Object(
  {
    url: Url,
    description: Type.Optional(Description),
    environments: Type.Optional(EnvironmentRefs),
    event_kinds: Type.Optional(EventKinds),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    description: Type.Optional(Description),
    environments: Type.Optional(EnvironmentRefs),
    event_kinds: Type.Optional(EventKinds),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const RotateSecretBody = Type.Object(
  {
    overlap_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 7 * 86_400,
        description:
          'How long the replaced secret keeps signing next to the new one (both signatures are sent); 24 hours by default, 0 ends it now',
      }),
    ),
  },
  { additionalProperties: false },
);

const Attempt = Type.Object(
  {
    attempt: Type.Integer(),
    started_at: Timestamp,
    duration_ms: Type.Integer(),
    outcome: Type.Union([Type.Literal('delivered'), Type.Literal('failed')]),
    status_code: Nullable(Type.Integer()),
    error: Nullable(Type.String()),
    response_excerpt: Nullable(
      Type.String({ description: 'At most the first 200 characters of the answer' }),
    ),
  },
  { additionalProperties: false },
);

const DeliveryStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('delivered'),
  Type.Literal('failed'),
]);

const Delivery = Type.Object(
  {
    id: Type.String({ description: 'The `webhook-id` header of every attempt' }),
    webhook_id: Type.String(),
    event_id: Nullable(Type.String()),
    event_kind: Type.String(),
    status: DeliveryStatus,
    attempts: Type.Integer(),
    next_attempt_at: Nullable(Timestamp),
    last_status_code: Nullable(Type.Integer()),
    last_error: Nullable(Type.String()),
    created_at: Timestamp,
    finished_at: Nullable(Timestamp),
    log: Type.Array(Attempt),
  },
  { additionalProperties: false },
);

export const DeliveryEnvelope = DataEnvelope(Delivery);
export const DeliveryList = ListEnvelope(Delivery);
export const DeliveryListQuery = listQuerySchema(['created_at'], {
  status: Type.Optional(DeliveryStatus),
});
