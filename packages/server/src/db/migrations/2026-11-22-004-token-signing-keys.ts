import type { Kysely } from 'kysely';

// Frozen in time: never imports application code. Runs on SQLite and PostgreSQL.
// A token's Ed25519 public key (derived from its key part), so the grants an API
// key makes when it mints a CI token can be verified. Nullable: rows written
// before this migration have none, and such keys simply cannot mint.

/* eslint-disable @typescript-eslint/no-explicit-any */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('signing_public_key', 'text').execute();
  await db.schema.alterTable('ci_tokens').addColumn('signing_public_key', 'text').execute();
  await db.schema
    .createIndex('vault_grants_project_epoch')
    .on('vault_grants')
    .columns(['project_id', 'epoch'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('vault_grants_project_epoch').ifExists().execute();
  await db.schema.alterTable('ci_tokens').dropColumn('signing_public_key').execute();
  await db.schema.alterTable('api_keys').dropColumn('signing_public_key').execute();
}
