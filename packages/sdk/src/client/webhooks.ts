import { apiPath, type CofferClient, type QueryValue } from './http.js';

// Typed calls of `/v1/projects/{p}/webhooks`: signed-in admins only. Payloads
// are the change feed's events, signed as Standard Webhooks do (docs/webhooks.md).

/** The change feed's kinds a webhook can subscribe to. */
export type WebhookEventKind =
  | 'secrets.changed'
  | 'environment.created'
  | 'environment.renamed'
  | 'environment.deleted'
  | 'vault.rekeyed'
  | 'member.added'
  | 'member.role_changed'
  | 'member.removed'
  | 'token.revoked';

export const WEBHOOK_EVENT_KINDS: readonly WebhookEventKind[] = [
  'secrets.changed',
  'environment.created',
  'environment.renamed',
  'environment.deleted',
  'vault.rekeyed',
  'member.added',
  'member.role_changed',
  'member.removed',
  'token.revoked',
];

export interface Webhook {
  id: string;
  project_id: string;
  url: string;
  description: string;
  /** Environment ids; empty: every environment. */
  environments: string[];
  /** Empty: every kind. */
  event_kinds: string[];
  enabled: boolean;
  /** `failing`: the server disabled it after sustained failure; `admin`: an admin did. */
  disabled_reason: 'failing' | 'admin' | null;
  disabled_at: string | null;
  failing_since: string | null;
  /** Until then the replaced secret still signs next to the new one. */
  previous_secret_expires_at: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

/** Answered at creation and rotation only: the signing secret (`whsec_…`). */
export type WebhookWithSecret = Webhook & { secret: string };

export interface WebhookInput {
  url: string;
  description?: string;
  /** Environment ids or slugs; empty: every environment. */
  environments?: string[];
  event_kinds?: WebhookEventKind[];
  enabled?: boolean;
}

export interface WebhookAttempt {
  attempt: number;
  started_at: string;
  duration_ms: number;
  outcome: 'delivered' | 'failed';
  status_code: number | null;
  error: string | null;
  /** At most the first 200 characters of the receiver's answer. */
  response_excerpt: string | null;
}

export interface WebhookDelivery {
  /** The `webhook-id` header of every attempt. */
  id: string;
  webhook_id: string;
  event_id: string | null;
  event_kind: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  finished_at: string | null;
  log: WebhookAttempt[];
}

export interface WebhookListQuery {
  page?: number;
  per_page?: number;
  sort?: 'created_at' | 'url';
  order?: 'asc' | 'desc';
  [name: string]: QueryValue;
}

export interface DeliveryListQuery {
  page?: number;
  per_page?: number;
  order?: 'asc' | 'desc';
  status?: WebhookDelivery['status'];
  [name: string]: QueryValue;
}

const hookPath = (projectId: string, webhookId: string) =>
  apiPath`/v1/projects/${projectId}/webhooks/${webhookId}`;

export const listWebhooks = (
  client: CofferClient,
  projectId: string,
  query: WebhookListQuery = {},
) => client.requestPage<Webhook>('GET', apiPath`/v1/projects/${projectId}/webhooks`, { query });

export const createWebhook = (client: CofferClient, projectId: string, input: WebhookInput) =>
  client.request<WebhookWithSecret>('POST', apiPath`/v1/projects/${projectId}/webhooks`, {
    body: input,
  });

export const getWebhook = (client: CofferClient, projectId: string, webhookId: string) =>
  client.request<Webhook>('GET', hookPath(projectId, webhookId));

export const updateWebhook = (
  client: CofferClient,
  projectId: string,
  webhookId: string,
  changes: Partial<WebhookInput>,
) => client.request<Webhook>('PATCH', hookPath(projectId, webhookId), { body: changes });

export const deleteWebhook = (client: CofferClient, projectId: string, webhookId: string) =>
  client.request<void>('DELETE', hookPath(projectId, webhookId));

/** A new secret, shown once; the old one keeps signing for `overlap_seconds` (24 h by default). */
export const rotateWebhookSecret = (
  client: CofferClient,
  projectId: string,
  webhookId: string,
  options: { overlap_seconds?: number } = {},
) =>
  client.request<WebhookWithSecret>(
    'POST',
    apiPath`/v1/projects/${projectId}/webhooks/${webhookId}/rotate-secret`,
    { body: options },
  );

/** Queues a `webhook.test` event; its outcome appears in the delivery log. */
export const testWebhook = (client: CofferClient, projectId: string, webhookId: string) =>
  client.request<WebhookDelivery>(
    'POST',
    apiPath`/v1/projects/${projectId}/webhooks/${webhookId}/test`,
  );

export const listWebhookDeliveries = (
  client: CofferClient,
  projectId: string,
  webhookId: string,
  query: DeliveryListQuery = {},
) =>
  client.requestPage<WebhookDelivery>(
    'GET',
    apiPath`/v1/projects/${projectId}/webhooks/${webhookId}/deliveries`,
    { query },
  );
