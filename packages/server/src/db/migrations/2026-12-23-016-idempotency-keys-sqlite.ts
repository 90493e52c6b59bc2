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
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await db.schema
    .createTable('idempotency_keys_by_lookup')
    .addColumn('lookup', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .modifyEnd(sql`without rowid`)
    .execute();
  await sql`insert into idempotency_keys_by_lookup
    select lookup, owner, fingerprint, result, created_at, expires_at from idempotency_keys`.execute(
    db,
  );
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.alterTable('idempotency_keys_by_lookup').renameTo('idempotency_keys').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await db.schema
    .createTable('idempotency_keys_with_rowid')
    .addColumn('lookup', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await sql`insert into idempotency_keys_with_rowid
    select lookup, owner, fingerprint, result, created_at, expires_at from idempotency_keys`.execute(
    db,
  );
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.alterTable('idempotency_keys_with_rowid').renameTo('idempotency_keys').execute();
  await db.schema
    .createIndex('idempotency_keys_expires_at')
    .on('idempotency_keys')
    .column('expires_at')
    .execute();
}
