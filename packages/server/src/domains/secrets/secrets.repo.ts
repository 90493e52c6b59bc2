import type { Kysely, Selectable } from 'kysely';
import type { Database, SecretTable, SecretVersionTable } from '../../db/schema.js';
import { offsetOf, type ListParams } from '../../http/pagination.js';
import type { SecretSort, VersionSort } from './secrets.schemas.js';

export type SecretRow = Selectable<SecretTable>;
export type SecretVersionRow = Selectable<SecretVersionTable>;

/** Rows (or names) per statement, well below SQLite's and PostgreSQL's parameter limits. */
const CHUNK = 500;

async function inChunks<T, R>(
  items: readonly T[],
  run: (chunk: T[]) => Promise<R[] | unknown>,
): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += CHUNK) {
    const result = await run(items.slice(i, i + CHUNK));
    if (Array.isArray(result)) out.push(...(result as R[]));
  }
  return out;
}

export async function countSecrets(db: Kysely<Database>, environmentId: string): Promise<number> {
  const { total } = await db
    .selectFrom('secrets')
    .select((eb) => eb.fn.countAll().as('total'))
    .where('environment_id', '=', environmentId)
    .executeTakeFirstOrThrow();
  return Number(total);
}

export async function listSecrets(
  db: Kysely<Database>,
  environmentId: string,
  params: ListParams<SecretSort>,
): Promise<SecretRow[]> {
  return db
    .selectFrom('secrets')
    .selectAll()
    .where('environment_id', '=', environmentId)
    .orderBy(params.sort, params.order)
    .orderBy('id', params.order)
    .limit(params.per_page)
    .offset(offsetOf(params))
    .execute();
}

export async function findSecret(
  db: Kysely<Database>,
  environmentId: string,
  name: string,
): Promise<SecretRow | undefined> {
  return db
    .selectFrom('secrets')
    .selectAll()
    .where('environment_id', '=', environmentId)
    .where('name', '=', name)
    .executeTakeFirst();
}

export async function findSecretsByName(
  db: Kysely<Database>,
  environmentId: string,
  names: readonly string[],
): Promise<SecretRow[]> {
  return inChunks<string, SecretRow>(names, (chunk) =>
    db
      .selectFrom('secrets')
      .selectAll()
      .where('environment_id', '=', environmentId)
      .where('name', 'in', chunk)
      .execute(),
  );
}

/** The project's current key epoch; read after `lockProject` so no re-key can slip in. */
export async function vaultEpoch(db: Kysely<Database>, projectId: string): Promise<number> {
  const row = await db
    .selectFrom('projects')
    .select('vault_epoch')
    .where('id', '=', projectId)
    .executeTakeFirstOrThrow();
  return Number(row.vault_epoch);
}

export async function insertSecrets(db: Kysely<Database>, rows: readonly SecretRow[]) {
  await inChunks(rows, (chunk) => db.insertInto('secrets').values(chunk).execute());
}

export async function updateSecret(
  db: Kysely<Database>,
  id: string,
  patch: Pick<SecretRow, 'value' | 'epoch' | 'version' | 'comment' | 'updated_at' | 'updated_by'>,
): Promise<void> {
  const { value, epoch, version, comment, updated_at, updated_by } = patch;
  await db
    .updateTable('secrets')
    .set({ value, epoch, version, comment, updated_at, updated_by })
    .where('id', '=', id)
    .execute();
}

export async function insertVersions(db: Kysely<Database>, rows: readonly SecretVersionRow[]) {
  await inChunks(rows, (chunk) => db.insertInto('secret_versions').values(chunk).execute());
}

/** Deletes secrets; their versions go with them (foreign-key cascade). */
export async function deleteSecrets(db: Kysely<Database>, ids: readonly string[]): Promise<void> {
  await inChunks(ids, (chunk) => db.deleteFrom('secrets').where('id', 'in', chunk).execute());
}

export async function countVersions(db: Kysely<Database>, secretId: string): Promise<number> {
  const { total } = await db
    .selectFrom('secret_versions')
    .select((eb) => eb.fn.countAll().as('total'))
    .where('secret_id', '=', secretId)
    .executeTakeFirstOrThrow();
  return Number(total);
}

export async function listVersions(
  db: Kysely<Database>,
  secretId: string,
  params: ListParams<VersionSort>,
): Promise<SecretVersionRow[]> {
  return db
    .selectFrom('secret_versions')
    .selectAll()
    .where('secret_id', '=', secretId)
    .orderBy(params.sort, params.order)
    .orderBy('id', params.order)
    .limit(params.per_page)
    .offset(offsetOf(params))
    .execute();
}

export async function findVersion(
  db: Kysely<Database>,
  secretId: string,
  version: number,
): Promise<SecretVersionRow | undefined> {
  return db
    .selectFrom('secret_versions')
    .selectAll()
    .where('secret_id', '=', secretId)
    .where('version', '=', version)
    .executeTakeFirst();
}
