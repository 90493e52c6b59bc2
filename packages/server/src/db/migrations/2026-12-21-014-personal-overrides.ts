import type { Kysely } from 'kysely';

// Frozen in time: never imports application code. Runs on SQLite and PostgreSQL.
// Personal overrides: a member's own value for one secret name in one
// environment, encrypted by their client to a key only they can derive. The
// server stores the envelope and never reads it. Gone with the environment,
// the project or the user (foreign keys), and with the membership (the
// members service deletes them in the removal's transaction).

/* eslint-disable @typescript-eslint/no-explicit-any */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('personal_overrides')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) =>
      c.notNull().references('projects.id').onDelete('cascade'),
    )
    .addColumn('environment_id', 'text', (c) =>
      c.notNull().references('environments.id').onDelete('cascade'),
    )
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('personal_overrides_owner_name_key', ['environment_id', 'user_id', 'name'])
    .execute();
  await db.schema
    .createIndex('personal_overrides_project_user_idx')
    .on('personal_overrides')
    .columns(['project_id', 'user_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('personal_overrides').ifExists().execute();
}
