import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { visibleTo, type FeedEvent, type FeedViewer } from '../events/events.js';
import { chainRange } from '../events/events.repo.js';
import { readEvents } from '../events/feed.js';
import type { DeliverySource } from './delivery-worker.js';
import type { WebhookRow } from './webhooks.repo.js';

/**
 * A webhook's payloads are the change feed's events (docs/events.md), read
 * from the audit log after the webhook's cursor: names, ids and revisions,
 * never a value or its ciphertext. A webhook belongs to the project and was
 * registered by an admin, so it sees what an admin's stream sees, narrowed by
 * its environments (events of other environments are left out; events of no
 * environment, such as a re-key, are kept) and its event kinds.
 */

/** The project's latest event id (its audit chain's head): where a new or re-enabled webhook starts. */
export async function latestEventId(db: Kysely<Database>, projectId: string): Promise<string> {
  return String((await chainRange(db, projectId)).last);
}

const adminViewer = (webhook: WebhookRow): FeedViewer => ({
  principal: { kind: 'session', userId: webhook.created_by, sessionId: webhook.id },
  role: 'admin',
  scopes: null,
});

function wanted(webhook: WebhookRow, event: FeedEvent): boolean {
  const kinds = JSON.parse(webhook.event_kinds) as string[];
  if (kinds.length > 0 && !kinds.includes(event.type)) return false;
  const environments = JSON.parse(webhook.environments) as string[];
  if (environments.length === 0 || !('environment' in event)) return true;
  return environments.includes(event.environment.id);
}

/** The request body of one event, as Standard Webhooks lays it out: `type`, `timestamp`, `data`. */
export const payloadOf = (event: FeedEvent): string =>
  JSON.stringify({ type: event.type, timestamp: event.at, data: event });

export const feedSource: DeliverySource = {
  async pending(db, webhook) {
    const after = Number(webhook.event_cursor ?? 0);
    const { events } = await readEvents(db, webhook.project_id, after);
    if (events.length === 0) return { deliveries: [], cursor: null };
    const viewer = adminViewer(webhook);
    const deliveries = events.flatMap((event) => {
      const visible = visibleTo(event, viewer);
      if (!visible || !wanted(webhook, visible)) return [];
      const body = payloadOf(visible);
      return [{ eventId: String(visible.id), eventKind: visible.type, payload: () => body }];
    });
    return { deliveries, cursor: String(events[events.length - 1]!.id) };
  },
};
