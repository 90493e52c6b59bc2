import type { Kysely } from 'kysely';
import { preparedQuery } from '../../db/prepared-query.js';
import type { ApiKeyTable, Database } from '../../db/schema.js';
import type { Principal } from '../../http/principal.js';

// The credential resolver's SQL (credentials.ts).

const TABLE = { session: 'sessions', api_key: 'api_keys', ci_token: 'ci_tokens' } as const;
/** What resolving an API key or CI token reads (API keys add their role). */
const TOKEN_COLUMNS = [
  'id',
  'project_id',
  'created_by',
  'scopes',
  'expires_at',
  'revoked_at',
  'last_used_at',
] as const;
/** A token row as resolving reads it (CI tokens' columns have the same types, `expires_at` never null). */
export type TokenRow = Pick<ApiKeyTable, (typeof TOKEN_COLUMNS)[number]>;

// The lookups behind a credential the cache does not hold (its first request in
// a while, or one that does not exist), compiled once; on SQLite they run on the
// read-only connection, so resolving or refusing a credential never queues
// behind, or ahead of, the writes.
export const apiKeyByHash = preparedQuery((db, hash: string) =>
  db
    .selectFrom('api_keys')
    .select([...TOKEN_COLUMNS, 'role'])
    .where('token_hash', '=', hash),
);
export const ciTokenByHash = preparedQuery((db, hash: string) =>
  db.selectFrom('ci_tokens').select(TOKEN_COLUMNS).where('token_hash', '=', hash),
);
export const sessionByHash = preparedQuery((db, hash: string) =>
  db
    .selectFrom('sessions')
    .select(['id', 'user_id', 'expires_at', 'last_used_at'])
    .where('token_hash', '=', hash),
);

/** Records a credential's last use (the resolver does it at most once a minute per credential). */
export async function recordLastUse(
  db: Kysely<Database>,
  kind: Principal['kind'],
  id: string,
  at: string,
): Promise<void> {
  await db.updateTable(TABLE[kind]).set({ last_used_at: at }).where('id', '=', id).execute();
}
