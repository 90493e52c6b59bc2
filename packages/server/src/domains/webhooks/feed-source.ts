import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { DeliverySource } from './delivery-worker.js';

// Placeholder until the change feed (domains/events) is merged: no events yet.
export const feedSource: DeliverySource = {
  pending: async () => ({ deliveries: [], cursor: null }),
};

export const latestEventId = async (
  _db: Kysely<Database>,
  _projectId: string,
): Promise<string | null> => null;
