import type { Insertable, Kysely, SelectQueryBuilder } from 'kysely';
import type { DialectName } from '../../db/database.js';
import type { ApiKeyTable, CiTokenTable, Database } from '../../db/schema.js';
import { offsetOf, type ListParams } from '../../http/pagination.js';
import { orderBySort, type SortColumn } from '../../db/list-order.js';

// SQL of API keys and CI tokens. Their grants live in `vault_grants`, the vault
// domain's table, written through the vault service.

type Db = Kysely<Database>;

export type TokenTable = 'api_keys' | 'ci_tokens';

const API_KEY_COLUMNS = [
  'id',
  'name',
  'role',
  'scopes',
  'created_by',
  'created_at',
  'expires_at',
  'last_used_at',
  'revoked_at',
] as const;

const CI_TOKEN_COLUMNS = [
  'id',
  'name',
  'scopes',
  'created_by',
  'created_by_api_key',
  'created_at',
  'expires_at',
  'last_used_at',
  'revoked_at',
] as const;

export async function idTaken(db: Db, table: TokenTable, id: string): Promise<boolean> {
  return (
    (await db.selectFrom(table).select('id').where('id', '=', id).executeTakeFirst()) !== undefined
  );
}

export async function signingKeyOfUser(db: Db, userId: string): Promise<string | null> {
  const row = await db
    .selectFrom('users')
    .select('signing_public_key')
    .where('id', '=', userId)
    .executeTakeFirst();
  return row?.signing_public_key ?? null;
}

export async function apiKeyMinter(db: Db, id: string) {
  return db
    .selectFrom('api_keys')
    .select(['signing_public_key', 'expires_at', 'revoked_at'])
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function insertApiKey(db: Db, row: Insertable<ApiKeyTable>): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

export async function insertCiToken(db: Db, row: Insertable<CiTokenTable>): Promise<void> {
  await db.insertInto('ci_tokens').values(row).execute();
}

export async function findApiKey(db: Db, projectId: string, id: string) {
  return db
    .selectFrom('api_keys')
    .select([...API_KEY_COLUMNS, 'token_hash'])
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function findCiToken(db: Db, projectId: string, id: string) {
  return db
    .selectFrom('ci_tokens')
    .select([...CI_TOKEN_COLUMNS, 'token_hash'])
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
}

const API_KEY_SORTS: Record<string, SortColumn> = {
  created_at: { column: 'created_at' },
  name: { column: 'name', text: true },
  expires_at: { column: 'expires_at', nullable: true },
  last_used_at: { column: 'last_used_at', nullable: true },
};

export function listApiKeys(db: Db, dialect: DialectName, projectId: string, params: ListParams) {
  const base = db.selectFrom('api_keys').where('project_id', '=', projectId);
  return page(base, API_KEY_COLUMNS, API_KEY_SORTS, dialect, params);
}

/** One page of a token table and the total, ordered by an allow-listed column then id. */
async function page<T extends TokenTable, C extends readonly (keyof Database[T] & string)[]>(
  base: SelectQueryBuilder<Database, T, object>,
  columns: C,
  sorts: Record<string, SortColumn>,
  dialect: DialectName,
  params: ListParams,
) {
  const [rows, total] = await Promise.all([
    orderBySort(base.select(columns as never), dialect, sorts[params.sort]!, params.order, 'id')
      .limit(params.per_page)
      .offset(offsetOf(params))
      .execute(),
    base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows: rows as Pick<Database[T], C[number]>[], total: Number(total.n) };
}

/** Which CI tokens a caller may see and revoke: all of them, or only those they minted. */
export type CiTokenOwner = { all: true } | { all: false; userId: string; apiKeyId: string | null };

const CI_TOKEN_SORTS: Record<string, SortColumn> = {
  created_at: { column: 'created_at' },
  name: { column: 'name', text: true },
  expires_at: { column: 'expires_at' },
};

function ownedCiTokens(db: Db, projectId: string, owner: CiTokenOwner) {
  let query = db.selectFrom('ci_tokens').where('project_id', '=', projectId);
  if (!owner.all) {
    query = query.where('created_by', '=', owner.userId);
    query =
      owner.apiKeyId === null
        ? query.where('created_by_api_key', 'is', null)
        : query.where('created_by_api_key', '=', owner.apiKeyId);
  }
  return query;
}

export function listCiTokens(
  db: Db,
  dialect: DialectName,
  projectId: string,
  owner: CiTokenOwner,
  params: ListParams,
) {
  return page(
    ownedCiTokens(db, projectId, owner),
    CI_TOKEN_COLUMNS,
    CI_TOKEN_SORTS,
    dialect,
    params,
  );
}

export async function findOwnedCiToken(db: Db, projectId: string, owner: CiTokenOwner, id: string) {
  return ownedCiTokens(db, projectId, owner)
    .select([...CI_TOKEN_COLUMNS, 'token_hash'])
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function revoke(db: Db, table: TokenTable, id: string, at: string): Promise<void> {
  await db
    .updateTable(table)
    .set({ revoked_at: at })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Live CI tokens an API key minted: revoked with it, since a token never outlives its minter. */
export async function revokeCiTokensMintedBy(db: Db, apiKeyId: string, at: string) {
  return db
    .updateTable('ci_tokens')
    .set({ revoked_at: at })
    .where('created_by_api_key', '=', apiKeyId)
    .where('revoked_at', 'is', null)
    .returning(['id', 'token_hash'])
    .execute();
}

/**
 * Revokes the live API keys and CI tokens a user created in a project (they
 * leave it), so they cannot come back to life if the user is invited again
 * later. Returns their ids.
 */
export async function revokeCreatedBy(
  db: Db,
  projectId: string,
  userId: string,
  at: string,
): Promise<string[]> {
  const revoked: string[] = [];
  for (const table of ['api_keys', 'ci_tokens'] as const) {
    const rows = await db
      .updateTable(table)
      .set({ revoked_at: at })
      .where('project_id', '=', projectId)
      .where('created_by', '=', userId)
      .where('revoked_at', 'is', null)
      .returning('id')
      .execute();
    revoked.push(...rows.map((r) => r.id));
  }
  return revoked;
}
