import type { Insertable, Kysely, Selectable } from 'kysely';
import type { DialectName } from '../../db/database.js';
import type {
  AuditEventTable,
  Database,
  SecretTable,
  SecretVersionTable,
} from '../../db/schema.js';
import { insertAuditRows } from '../audit/audit.js';
import { offsetOf, type ListParams } from '../../http/pagination.js';
import type { SecretSort, VersionSort } from './secrets.schemas.js';
import {
  bumpRevision,
  environmentQuery,
  type EnvironmentWithMembership,
} from '../environments/environments.repo.js';

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

/** With `forUpdate` (PostgreSQL writers), the row stays locked until the transaction ends. */
export async function findSecret(
  db: Kysely<Database>,
  environmentId: string,
  name: string,
  forUpdate = false,
): Promise<SecretRow | undefined> {
  const query = db
    .selectFrom('secrets')
    .selectAll()
    .where('environment_id', '=', environmentId)
    .where('name', '=', name);
  return (forUpdate ? query.forUpdate() : query).executeTakeFirst();
}

const secretWithMembership = environmentQuery((query, name: string) =>
  query
    .leftJoin('secrets as s', (join) =>
      join.onRef('s.environment_id', '=', 'e.id').on('s.name', '=', name),
    )
    .select([
      's.id as secret_id',
      's.version as secret_version',
      's.value as secret_value',
      's.epoch as secret_epoch',
      's.comment as secret_comment',
      's.created_at as secret_created_at',
      's.updated_at as secret_updated_at',
      's.updated_by as secret_updated_by',
    ]),
);

/**
 * The environment, the caller's membership and the secret `name` in one query:
 * the hot path of reading one value. `secret` is undefined when it does not exist.
 */
export async function findSecretWithMembership(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
  userId: string,
  name: string,
): Promise<(EnvironmentWithMembership & { secret: SecretRow | undefined }) | undefined> {
  const row = await secretWithMembership(db, projectId, ref, userId, name);
  if (!row) return undefined;
  const {
    secret_id,
    secret_version,
    secret_value,
    secret_epoch,
    secret_comment,
    secret_created_at,
    secret_updated_at,
    secret_updated_by,
    ...environment
  } = row;
  const secret: SecretRow | undefined =
    secret_id === null
      ? undefined
      : {
          id: secret_id,
          project_id: environment.project_id,
          environment_id: environment.id,
          name,
          version: Number(secret_version),
          value: secret_value!,
          epoch: Number(secret_epoch),
          comment: secret_comment!,
          created_at: secret_created_at!,
          updated_at: secret_updated_at!,
          updated_by: secret_updated_by,
        };
  return { ...environment, secret };
}

/**
 * With `forUpdate` (PostgreSQL writers) the rows stay locked until the
 * transaction ends, taken in name order so two batches never wait on each other
 * in a circle.
 */
export async function findSecretsByName(
  db: Kysely<Database>,
  environmentId: string,
  names: readonly string[],
  forUpdate = false,
): Promise<SecretRow[]> {
  return inChunks<string, SecretRow>([...names].sort(), (chunk) => {
    const query = db
      .selectFrom('secrets')
      .selectAll()
      .where('environment_id', '=', environmentId)
      .where('name', 'in', chunk)
      .orderBy('name');
    return (forUpdate ? query.forUpdate() : query).execute();
  });
}

/** In name order, like `findSecretsByName`, so concurrent batches claim names in one order. */
export async function insertSecrets(db: Kysely<Database>, rows: readonly SecretRow[]) {
  const ordered = [...rows].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  await inChunks(ordered, (chunk) => db.insertInto('secrets').values(chunk).execute());
}

/** What a new version of a secret changes in its row; the rest stays as created. */
type SecretChange = Pick<
  SecretRow,
  'value' | 'epoch' | 'version' | 'comment' | 'updated_at' | 'updated_by'
>;

function secretChange(row: SecretChange): SecretChange {
  const { value, epoch, version, comment, updated_at, updated_by } = row;
  return { value, epoch, version, comment, updated_at, updated_by };
}

export async function updateSecret(
  db: Kysely<Database>,
  id: string,
  patch: SecretChange,
): Promise<void> {
  await db.updateTable('secrets').set(secretChange(patch)).where('id', '=', id).execute();
}

export async function insertVersions(db: Kysely<Database>, rows: readonly SecretVersionRow[]) {
  await inChunks(rows, (chunk) => db.insertInto('secret_versions').values(chunk).execute());
}

/** A secret row a change writes: inserted when `created`, its new version otherwise. */
export interface SecretWrite {
  row: SecretRow;
  created: boolean;
}

async function writeSecret(db: Kysely<Database>, { row, created }: SecretWrite): Promise<void> {
  if (created) await insertSecrets(db, [row]);
  else await updateSecret(db, row.id, row);
}

/**
 * The end of every secret write: writes the change's secret row when it left
 * that to here (`secret`), appends its versions and audit events and bumps the
 * environment's revision (which the listing cache keys on). On PostgreSQL that
 * is ONE statement (data-modifying CTEs; foreign keys are checked at its end,
 * so a new secret's first version may reference it) instead of up to four
 * round trips, each of which other writers of the environment would wait for;
 * very large batches take the chunked path.
 */
export async function appendAndBump(
  db: Kysely<Database>,
  dialect: DialectName,
  environmentId: string,
  rows: {
    secret?: SecretWrite | undefined;
    versions: readonly SecretVersionRow[];
    audit: readonly Insertable<AuditEventTable>[];
  },
): Promise<void> {
  const { secret, versions, audit } = rows;
  if (
    dialect !== 'postgres' ||
    audit.length === 0 ||
    versions.length > CHUNK ||
    audit.length > CHUNK
  ) {
    if (secret) await writeSecret(db, secret);
    await insertVersions(db, versions);
    await insertAuditRows(db, audit);
    await bumpRevision(db, [environmentId]);
    return;
  }
  let creator = db.with('appended_audit', (qc) => qc.insertInto('audit_events').values([...audit]));
  if (secret) {
    const { row, created } = secret;
    creator = creator.with('written_secret', (qc) =>
      created
        ? qc.insertInto('secrets').values(row)
        : qc.updateTable('secrets').set(secretChange(row)).where('id', '=', row.id),
    ) as unknown as typeof creator;
  }
  if (versions.length > 0) {
    creator = creator.with('appended_versions', (qc) =>
      qc.insertInto('secret_versions').values([...versions]),
    ) as unknown as typeof creator;
  }
  await creator
    .updateTable('environments')
    .set((eb) => ({ revision: eb('revision', '+', 1) }))
    .where('id', '=', environmentId)
    .execute();
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
