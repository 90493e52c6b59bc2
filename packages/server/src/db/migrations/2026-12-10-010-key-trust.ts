import type { Kysely } from 'kysely';

// Frozen in time: never imports application code. Runs on SQLite and PostgreSQL.
// Key trust (no silent key substitution):
// - members: the introduction secret sealed for the project's admins by the
//   inviter's client, the inviter's proof over their own keys, and the proof the
//   invitee's client sent with its acceptance (all opaque to the server).
// - key_pins: each user's signed document of the keys they accepted for others;
//   the server keeps the latest version and refuses one that does not grow.

/* eslint-disable @typescript-eslint/no-explicit-any */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('members').addColumn('introduction_sealed_secret', 'text').execute();
  await db.schema.alterTable('members').addColumn('introduction_inviter_proof', 'text').execute();
  await db.schema.alterTable('members').addColumn('introduction_proof', 'text').execute();
  await db.schema
    .createTable('key_pins')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('document', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('key_pins').ifExists().execute();
  await db.schema.alterTable('members').dropColumn('introduction_proof').execute();
  await db.schema.alterTable('members').dropColumn('introduction_inviter_proof').execute();
  await db.schema.alterTable('members').dropColumn('introduction_sealed_secret').execute();
}
