import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen in time: never imports application code. Runs on SQLite and PostgreSQL
// (a no-op on PostgreSQL).
// SQLite keeps idempotency keys in one b-tree instead of three: the table
// becomes WITHOUT ROWID, its rows stored in the order of their primary key
// (`lookup`, which starts with the key's time for the SDK's keys, so a group
// commit's rows go to the end of it), and loses its index on `expires_at`.
// Each keyed write made the group commit write pages of all three b-trees;
// the expired rows are now found by walking the table in `lookup` order, a
// few hundred rows at a time (domains/idempotency). PostgreSQL keeps its
// table and index: its expiry query runs on the index.

/* eslint-disable @typescript-eslint/no-explicit-any */

/** Copies the keys into a new table `name` (as `WITHOUT ROWID` or not), which then replaces theirs. */
async function rebuild(db: Kysely<any>, name: string, withoutRowid: boolean): Promise<void> {
  await db.schema
    .createTable(name)
    .addColumn('lookup', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .modifyEnd(withoutRowid ? sql`without rowid` : sql``)
    .execute();
  await sql`insert into ${sql.table(name)}
    select lookup, owner, fingerprint, result, created_at, expires_at from idempotency_keys`.execute(
    db,
  );
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.alterTable(name).renameTo('idempotency_keys').execute();
}

export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await rebuild(db, 'idempotency_keys_by_lookup', true);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await rebuild(db, 'idempotency_keys_with_rowid', false);
  await db.schema
    .createIndex('idempotency_keys_expires_at')
    .on('idempotency_keys')
    .column('expires_at')
    .execute();
}
