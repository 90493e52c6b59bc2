import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

// The SQL of the audit log's hash chains (chain.ts holds the hashing and the rules).

type Db = Kysely<Database>;

/**
 * Reserves `count` positions on a chain's head (created at `genesisHash` when
 * new): the head's last position and hash after the reservation. On PostgreSQL
 * the upsert locks the head's row until commit.
 */
export function reserveChainPositions(trx: Db, chain: string, count: number, genesisHash: string) {
  return trx
    .insertInto('audit_chain_heads')
    .values({ chain, seq: count, hash: genesisHash })
    .onConflict((oc) =>
      oc.column('chain').doUpdateSet((eb) => ({
        seq: eb('audit_chain_heads.seq', '+', count),
      })),
    )
    .returning(['seq', 'hash'])
    .executeTakeFirstOrThrow();
}

/** Stores a chain head's new last hash. */
export async function updateChainHead(trx: Db, chain: string, hash: string): Promise<void> {
  await trx.updateTable('audit_chain_heads').set({ hash }).where('chain', '=', chain).execute();
}

/** Every chain's head. */
export const chainHeads = (trx: Db) => trx.selectFrom('audit_chain_heads').selectAll().execute();

/** The projects (null: none) that have audit events. */
export const auditedProjects = (trx: Db) =>
  trx.selectFrom('audit_events').select('project_id').distinct().execute();

const eventsOf = (trx: Db, projectId: string | null) =>
  trx
    .selectFrom('audit_events')
    .where((eb) =>
      projectId === null ? eb('project_id', 'is', null) : eb('project_id', '=', projectId),
    );

/** The first (by time) event of a project's chain that has no place in it, if any. */
export const firstUnchainedEvent = (trx: Db, projectId: string | null) =>
  eventsOf(trx, projectId)
    .select(['id'])
    .where((eb) => eb.or([eb('chain_seq', 'is', null), eb('hash', 'is', null)]))
    .orderBy('created_at')
    .orderBy('id')
    .executeTakeFirst();

/** A page of a project's chain in chain order, after `after` (position, then id). */
export function chainPage(
  trx: Db,
  projectId: string | null,
  after: { seq: number; id: string } | null,
  limit: number,
) {
  let query = eventsOf(trx, projectId)
    .select([
      'id',
      'project_id',
      'action',
      'actor_id',
      'credential_kind',
      'credential_id',
      'ip',
      'request_id',
      'target_type',
      'target_id',
      'data',
      'created_at',
      'chain_seq',
      'prev_hash',
      'hash',
    ])
    .orderBy('chain_seq')
    .orderBy('id')
    .limit(limit);
  if (after) {
    const { seq, id } = after;
    query = query.where((eb) =>
      eb.or([eb('chain_seq', '>', seq), eb.and([eb('chain_seq', '=', seq), eb('id', '>', id)])]),
    );
  }
  return query.execute();
}
