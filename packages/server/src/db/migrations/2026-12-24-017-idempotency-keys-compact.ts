import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen in time: never imports application code. Runs on SQLite and PostgreSQL.
// Idempotency keys take about half the bytes: `lookup` and `fingerprint` are
// stored as bytes instead of hex (the fingerprint's first 16 bytes, which is
// all a repeat is compared on), and `owner` and `expires_at` go: the lookup
// already binds the key to its credential, and a key expires 24 h after its
// `created_at`. Every keyed write inserts a row, so its size is what a group of
// writes commits (SQLite: the WAL pages of the key table). PostgreSQL's index
// on the expiry moves to `created_at`. The rows there are converted in place:
// a repeat of a write made before the upgrade still finds its key.

/* eslint-disable @typescript-eslint/no-explicit-any */

const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter;

export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    await sql`drop index if exists idempotency_keys_expires_at`.execute(db);
    await sql`alter table idempotency_keys
      alter column lookup type bytea using decode(lookup, 'hex'),
      alter column fingerprint type bytea using decode(substr(fingerprint, 1, 32), 'hex'),
      drop column owner,
      drop column expires_at`.execute(db);
    await db.schema
      .createIndex('idempotency_keys_created_at')
      .on('idempotency_keys')
      .column('created_at')
      .execute();
    return;
  }
  await sql`create table idempotency_keys_compact (
      lookup blob primary key,
      fingerprint blob not null,
      result text,
      created_at text not null
    ) without rowid`.execute(db);
  await sql`insert into idempotency_keys_compact
    select unhex(lookup), unhex(substr(fingerprint, 1, 32)), result, created_at
    from idempotency_keys`.execute(db);
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.alterTable('idempotency_keys_compact').renameTo('idempotency_keys').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  // The owner of a key is not kept: rows come back with an empty one.
  if (isPostgres(db)) {
    await sql`drop index if exists idempotency_keys_created_at`.execute(db);
    await sql`alter table idempotency_keys
      alter column lookup type text using encode(lookup, 'hex'),
      alter column fingerprint type text using encode(fingerprint, 'hex'),
      add column owner text not null default '',
      add column expires_at text`.execute(db);
    await sql`update idempotency_keys
      set expires_at = to_char((created_at::timestamptz + interval '24 hours') at time zone 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`.execute(db);
    await sql`alter table idempotency_keys alter column expires_at set not null`.execute(db);
    await db.schema
      .createIndex('idempotency_keys_expires_at')
      .on('idempotency_keys')
      .column('expires_at')
      .execute();
    return;
  }
  await sql`create table idempotency_keys_hex (
      lookup text primary key,
      owner text not null,
      fingerprint text not null,
      result text,
      created_at text not null,
      expires_at text not null
    ) without rowid`.execute(db);
  await sql`insert into idempotency_keys_hex
    select lower(hex(lookup)), '', lower(hex(fingerprint)), result, created_at,
      strftime('%Y-%m-%dT%H:%M:%fZ', created_at, '+24 hours')
    from idempotency_keys`.execute(db);
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.alterTable('idempotency_keys_hex').renameTo('idempotency_keys').execute();
}
