import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { FEED_ACTIONS, type FeedSourceRow } from './events.js';

/**
 * The feed's SQL: reads only. The feed is the audit log (`audit_events`, on
 * the `(project_id, chain_seq)` index), so this domain writes nothing.
 */

/** The project's audit rows of feed actions after position `afterSeq`, in chain order. */
export async function feedRowsAfter(
  db: Kysely<Database>,
  projectId: string,
  afterSeq: number,
  limit: number,
): Promise<FeedSourceRow[]> {
  const rows = await db
    .selectFrom('audit_events')
    .select([
      'chain_seq',
      'project_id',
      'action',
      'actor_id',
      'credential_kind',
      'request_id',
      'target_id',
      'data',
      'created_at',
    ])
    .where('project_id', '=', projectId)
    .where('chain_seq', '>', afterSeq)
    .where('action', 'in', FEED_ACTIONS)
    .orderBy('chain_seq')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    ...r,
    chain_seq: Number(r.chain_seq),
    project_id: r.project_id ?? projectId,
  }));
}

/**
 * The range of positions the project's chain keeps: the first stored event's
 * position (events before it are no longer kept) and the head's (the last one
 * committed). Both 0 for a project without events.
 */
export async function chainRange(
  db: Kysely<Database>,
  projectId: string,
): Promise<{ first: number; last: number }> {
  const [first, head] = await Promise.all([
    db
      .selectFrom('audit_events')
      .select((eb) => eb.fn.min('chain_seq').as('first'))
      .where('project_id', '=', projectId)
      .executeTakeFirst(),
    db
      .selectFrom('audit_chain_heads')
      .select('seq')
      .where('chain', '=', projectId)
      .executeTakeFirst(),
  ]);
  return { first: Number(first?.first ?? 0), last: Number(head?.seq ?? 0) };
}

/** Current slug, name and revision of environments (of any project: ids are global). */
export async function environmentsById(db: Kysely<Database>, ids: readonly string[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('environments')
    .select(['id', 'slug', 'name', 'revision'])
    .where('id', 'in', ids)
    .execute();
}

/** Slug and name of deleted environments, from their deletion's audit event. */
export async function deletedEnvironments(
  db: Kysely<Database>,
  projectId: string,
  ids: readonly string[],
) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('audit_events')
    .select(['target_id', 'data'])
    .where('project_id', '=', projectId)
    .where('action', '=', 'environment.deleted')
    .where('target_id', 'in', ids)
    .execute();
}

export async function userNames(db: Kysely<Database>, ids: readonly string[]) {
  if (ids.length === 0) return [];
  return db.selectFrom('users').select(['id', 'name']).where('id', 'in', ids).execute();
}

/**
 * Whether a stream's credential still holds, and until when: a session that
 * still exists, a token not revoked. `expires_at` null: no expiry (API keys
 * without one).
 */
export async function credentialState(
  db: Kysely<Database>,
  kind: 'session' | 'api_key' | 'ci_token',
  id: string,
): Promise<{ live: boolean; expiresAt: string | null }> {
  if (kind === 'session') {
    const row = await db
      .selectFrom('sessions')
      .select('expires_at')
      .where('id', '=', id)
      .executeTakeFirst();
    return { live: row !== undefined, expiresAt: row?.expires_at ?? null };
  }
  const row = await db
    .selectFrom(kind === 'api_key' ? 'api_keys' : 'ci_tokens')
    .select(['expires_at', 'revoked_at'])
    .where('id', '=', id)
    .executeTakeFirst();
  return { live: row !== undefined && row.revoked_at === null, expiresAt: row?.expires_at ?? null };
}
