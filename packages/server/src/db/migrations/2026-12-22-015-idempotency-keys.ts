import type { Kysely } from 'kysely';

// Frozen in time: never imports application code. Runs on SQLite and PostgreSQL.
// Idempotency keys: one row per write that committed under a key a client sent
// with an unsafe request, inserted by the write's own transaction
// (domains/idempotency). `lookup` is a hash of the credential and the key (the
// key itself is never stored); `result` is encrypted under a key derived from
// the client's key, so the database alone cannot read it. Rows expire after 24 h.

/* eslint-disable @typescript-eslint/no-explicit-any */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('lookup', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('idempotency_keys_expires_at')
    .on('idempotency_keys')
    .column('expires_at')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').ifExists().execute();
}
