import type { Insertable, Kysely, QueryCreator, Selectable } from 'kysely';
import type { DialectName } from '../../db/database.js';
import type {
  AuditEventTable,
  Database,
  SecretTable,
  SecretVersionTable,
} from '../../db/schema.js';
import { preparedWrite } from '../../db/prepared-query.js';
import { auditChainStatement, chainAuditRows, storeChainHeads } from '../audit/chain.js';
import { offsetOf, type ListParams } from '../../http/pagination.js';
import type { SecretSort, VersionSort } from './secrets.schemas.js';
import {
  environmentQuery,
  findEnvironmentForWrite,
  type environmentsWithMembership,
  type EnvironmentForWrite,
  type EnvironmentWithMembership,
} from '../../access/access.repo.js';

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

/** The secret's columns as `joinSecret` and `joinLockedSecret` add them to an environment row. */
const SECRET_COLUMNS = [
  's.id as secret_id',
  's.version as secret_version',
  's.value as secret_value',
  's.epoch as secret_epoch',
  's.comment as secret_comment',
  's.created_at as secret_created_at',
  's.updated_at as secret_updated_at',
  's.updated_by as secret_updated_by',
] as const;

type EnvironmentQuery = ReturnType<typeof environmentsWithMembership>;

/** The environment's secret `name`, if any, as `s`. */
const joinSecret = (query: EnvironmentQuery, name: string) =>
  query
    .leftJoin('secrets as s', (join) =>
      join.onRef('s.environment_id', '=', 'e.id').on('s.name', '=', name),
    )
    .select(SECRET_COLUMNS);

/**
 * `joinSecret` with the secret's row locked until the transaction ends
 * (PostgreSQL). `FOR UPDATE` cannot reach the nullable side of an outer join,
 * so the secret comes from a lateral subquery that locks it. In READ COMMITTED a
 * row another writer changed while this one waited is read again at its
 * committed version, so the version this write builds on is the latest.
 */
const joinLockedSecret = (query: EnvironmentQuery, name: string) =>
  query
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('secrets')
          .selectAll()
          .whereRef('secrets.environment_id', '=', 'e.id')
          .where('secrets.name', '=', name)
          .forUpdate()
          .as('s'),
      (join) => join.onTrue(),
    )
    .select(SECRET_COLUMNS);

type WithSecretColumns<E> = E & {
  secret_id: string | null;
  secret_version: number | string | null;
  secret_value: string | null;
  secret_epoch: number | string | null;
  secret_comment: string | null;
  secret_created_at: string | null;
  secret_updated_at: string | null;
  secret_updated_by: string | null;
};

/** An environment row with `SECRET_COLUMNS` split into the environment and its secret `name`. */
function withSecret<E extends EnvironmentWithMembership>(
  row: WithSecretColumns<E>,
  name: string,
): E & { secret: SecretRow | undefined } {
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
  return { ...(environment as unknown as E), secret };
}

const secretWithMembership = environmentQuery((query, name: string) => joinSecret(query, name));

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
  return row && withSecret(row, name);
}

/** `findEnvironmentForWrite` with the secret `name` joined by `join`. */
const writeTargetQuery = (join: typeof joinSecret | typeof joinLockedSecret) =>
  environmentQuery((query, name: string) =>
    join(query, name).innerJoin('projects as p', 'p.id', 'e.project_id').select('p.vault_epoch'),
  );

const secretForWrite = {
  sqlite: writeTargetQuery(joinSecret),
  postgres: writeTargetQuery(joinLockedSecret),
};

/**
 * What a secret write starts from (`findEnvironmentForWrite`) and, for a change
 * of one secret, that secret `name`, in the same query; on PostgreSQL its row
 * is locked (see `joinLockedSecret`). `secret` is undefined for a new name or
 * when no `name` is given (a batch reads its own).
 */
export async function findWriteTarget(
  db: Kysely<Database>,
  dialect: DialectName,
  projectId: string,
  ref: string,
  userId: string,
  name: string | null,
): Promise<(EnvironmentForWrite & { secret: SecretRow | undefined }) | undefined> {
  if (name === null) {
    const row = await findEnvironmentForWrite(db, projectId, ref, userId);
    return row && { ...row, secret: undefined };
  }
  const row = await secretForWrite[dialect](db, projectId, ref, userId, name);
  return row && withSecret(row, name);
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

/** A secret row a change writes: inserted when `created`, its new version otherwise. */
export interface SecretWrite {
  row: SecretRow;
  created: boolean;
}

interface AppendRows {
  secret?: SecretWrite | undefined;
  versions: readonly SecretVersionRow[];
  audit: readonly Insertable<AuditEventTable>[];
}

/**
 * The PostgreSQL form of `appendChange`: one statement of data-modifying CTEs,
 * compiled once per shape (`variant` says whether the secret row is inserted,
 * updated or not written here). Its audit events are inserted unchained; the
 * statement `appendChange` returns chains them with the commit.
 */
const appendStatement = preparedWrite(
  (db, variant, rows: Omit<AppendRows, 'secret'> & { secret?: SecretRow }) => {
    const { secret, versions, audit } = rows;
    let creator: QueryCreator<Database> = db;
    if (secret) {
      creator = creator.with('written_secret', (qc) =>
        variant === 'insert'
          ? qc.insertInto('secrets').values(secret)
          : qc.updateTable('secrets').set(secretChange(secret)).where('id', '=', secret.id),
      ) as unknown as QueryCreator<Database>;
    }
    if (versions.length > 0) {
      creator = creator.with('appended_versions', (qc) =>
        qc.insertInto('secret_versions').values([...versions]),
      ) as unknown as QueryCreator<Database>;
    }
    return creator.insertInto('audit_events').values([...audit]);
  },
);

/**
 * `appendChange` where data-modifying CTEs are not available (SQLite) or a
 * batch is too large for one statement: one statement per table (and chunk),
 * each compiled once per shape as well.
 */
const secretStatement = preparedWrite((db, variant, row: SecretRow) =>
  variant === 'insert'
    ? db.insertInto('secrets').values(row)
    : db.updateTable('secrets').set(secretChange(row)).where('id', '=', row.id),
);
/** Writes a secret row's new version (the batch path; single writes end in `appendChange`). */
export function updateSecret(db: Kysely<Database>, row: SecretRow): Promise<void> {
  return secretStatement(db, 'update', row);
}
const versionsStatement = preparedWrite((db, _variant, rows: readonly SecretVersionRow[]) =>
  db.insertInto('secret_versions').values([...rows]),
);
const auditStatement = preparedWrite((db, _variant, rows: readonly Insertable<AuditEventTable>[]) =>
  db.insertInto('audit_events').values([...rows]),
);
/**
 * What every secret write stores besides the secret rows its change already
 * wrote: the secret row it left to here (`secret`), its versions and its audit
 * events. On PostgreSQL that is ONE statement (data-modifying CTEs; foreign
 * keys are checked at its end, so a new secret's first version may reference
 * it) instead of up to three round trips; batches of more than `CHUNK` rows
 * are written a chunk at a time. The environment's revision is bumped after
 * it, by the write runner (`db/environment-write.ts`).
 *
 * The audit events take their places in the project's hash chain: on SQLite
 * here (one writer at a time anyway); on PostgreSQL with the commit, through
 * the statement returned (`auditChainStatement`), which the caller must send
 * in the transaction's last round trip, after the revision bump. Taking the
 * chain's head earlier would hold its row lock, which every writer of the
 * project queues on, across the round trips that follow.
 */
export async function appendChange(
  db: Kysely<Database>,
  dialect: DialectName,
  rows: AppendRows,
): Promise<string> {
  const { secret, versions } = rows;
  const variant = !secret ? 'none' : secret.created ? 'insert' : 'update';
  if (dialect === 'postgres') {
    const { audit } = rows;
    if (audit.length > 0 && versions.length <= CHUNK && audit.length <= CHUNK) {
      await appendStatement(db, variant, { secret: secret?.row, versions, audit });
    } else {
      if (secret) await secretStatement(db, variant, secret.row);
      await inChunks(versions, (chunk) => versionsStatement(db, '', chunk));
      await inChunks(audit, (chunk) => auditStatement(db, '', chunk));
    }
    return auditChainStatement(audit);
  }
  const { rows: audit, heads } = await chainAuditRows(db, rows.audit);
  if (secret) await secretStatement(db, variant, secret.row);
  await inChunks(versions, (chunk) => versionsStatement(db, '', chunk));
  await inChunks(audit, (chunk) => auditStatement(db, '', chunk));
  await storeChainHeads(db, heads);
  return '';
}

/**
 * Bumps the environment's revision (which the listing cache keys on). Its row
 * lock serialises the environment's writers until they commit, so it comes last.
 */
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
