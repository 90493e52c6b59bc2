import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { deriveEvents, environmentOfRow, type FeedEvent, type FeedSourceRow } from './events.js';
import { deletedEnvironments, environmentsById, feedRowsAfter, userNames } from './events.repo.js';

/**
 * Rows read per query. Above the largest batch (1,000 secrets, one audit row
 * each), so a page always holds at least one whole write.
 */
const PAGE_ROWS = 2_000;

const groupKey = (row: FeedSourceRow): string | null =>
  row.action.startsWith('secret.')
    ? `${row.request_id ?? `#${row.chain_seq}`}|${environmentOfRow(row) ?? ''}`
    : null;

/**
 * Reads the project's events after id `afterId` from durable storage (the
 * audit log), oldest first, at most about `PAGE_ROWS` rows' worth: `more` says
 * whether to call again after the last event's id. A secret write's rows are
 * never split across two reads (one write is one event).
 */
export async function readEvents(
  db: Kysely<Database>,
  projectId: string,
  afterId: number,
  pageRows = PAGE_ROWS,
): Promise<{ events: FeedEvent[]; more: boolean }> {
  let rows = await feedRowsAfter(db, projectId, afterId, pageRows);
  const more = rows.length === pageRows;
  if (more) {
    // The last write may continue past the page: leave it to the next read.
    const last = groupKey(rows[rows.length - 1]!);
    if (last !== null) {
      let cut = rows.length;
      while (cut > 0 && groupKey(rows[cut - 1]!) === last) cut--;
      if (cut > 0) rows = rows.slice(0, cut);
    }
  }
  if (rows.length === 0) return { events: [], more: false };

  const environmentIds = new Set<string>();
  const userIds = new Set<string>();
  for (const row of rows) {
    const env = environmentOfRow(row);
    if (env) environmentIds.add(env);
    if (row.actor_id) userIds.add(row.actor_id);
  }
  const [environments, users] = await Promise.all([
    environmentsById(db, [...environmentIds]),
    userNames(db, [...userIds]),
  ]);
  const envs = new Map<string, { slug: string; name: string; revision: number | null }>(
    environments.map((e) => [e.id, { slug: e.slug, name: e.name, revision: Number(e.revision) }]),
  );
  const gone = [...environmentIds].filter((id) => !envs.has(id));
  for (const row of await deletedEnvironments(db, projectId, gone)) {
    const data = JSON.parse(row.data) as { slug?: string; name?: string };
    envs.set(row.target_id ?? '', {
      slug: data.slug ?? '',
      name: data.name ?? '',
      revision: null,
    });
  }
  const names = new Map(users.map((u) => [u.id, u.name]));
  const events = deriveEvents(rows, {
    environment: (id) => envs.get(id),
    userName: (id) => names.get(id) ?? null,
  });
  return { events, more };
}
