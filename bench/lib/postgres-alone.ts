// PostgreSQL on its own, running the transaction a Coffer secret write runs, from
// pgbench (a C client that costs next to no CPU): what the database allows on
// this machine, measured in the same run as Coffer's writes.
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { PROJECT_LOCK_SPACE } from '../../packages/server/src/db/database.js';

/**
 * The shape of `write` in secrets.service on PostgreSQL, statement for
 * statement and in the same round trips: the transaction's start with the
 * project's shared advisory lock; the environment with the secret's row locked;
 * one statement of data-modifying CTEs (the secret row, its new version, the
 * audit event); the environment's revision bump with the commit. Values are
 * the size of the benchmark's (a ~400-character envelope), over 100 secrets of
 * one environment, as in the HTTP scenario.
 */
const WRITE = `\\set n random(1, 100)
begin \\; select pg_advisory_xact_lock_shared(${PROJECT_LOCK_SPACE}, hashtext('proj_bench'));
select e.revision, s.version from pgb_environments e left join lateral (select version from pgb_secrets where environment_id = e.id and name = 'S' || :n for update) s on true where e.id = 'env_bench';
with written as (update pgb_secrets set version = version + 1, value = repeat('v', 400), updated_at = now() where environment_id = 'env_bench' and name = 'S' || :n returning id, version, value), versions as (insert into pgb_versions (secret_id, version, value, created_at) select id, version, value, now() from written) insert into pgb_audit (action, target_id, data, created_at) select 'secret.updated', id, '{"name":"S' || :n || '"}', now() from written;
`;
const COMMIT = `update pgb_environments set revision = revision + 1 where id = 'env_bench' \\; commit;\n`;

/**
 * The same write with an idempotency key, as Coffer sends it on PostgreSQL:
 * the key's row inserted in the commit's round trip, before the revision bump
 * (which takes the environment's row lock every writer of it queues on), as a
 * parameterless statement. The row is the size of a secret write's (a 38-byte
 * lookup that starts with the key's time, as the SDK's keys do; a 16-byte
 * fingerprint; the result stored by position, about 100 characters).
 */
const KEYED_COMMIT = `insert into pgb_keys (lookup, fingerprint, result, created_at) values (decode(lpad(to_hex(nextval('pgb_key_order')), 76, '0'), 'hex'), decode('00112233445566778899aabbccddeeff', 'hex'), '~@secret.v1["sec_01JBENCHBENCHBENCHBENCHBENC","\u007f3",17,"rotated by the bench","\u007f5","\u007f9"]', '2026-12-06T23:59:59.123Z') \\; ${COMMIT}`;

const SCRIPTS = { plain: WRITE + COMMIT, keyed: WRITE + KEYED_COMMIT };
/** Which of the two transactions pgbench runs. */
export type AloneScript = keyof typeof SCRIPTS;

const SCHEMA = `
create table pgb_environments (id text primary key, revision bigint not null);
create table pgb_secrets (
  id text primary key, environment_id text not null references pgb_environments (id),
  name text not null, version integer not null, value text not null,
  updated_at timestamptz not null, unique (environment_id, name));
create table pgb_versions (
  id bigserial primary key, secret_id text not null references pgb_secrets (id),
  version integer not null, value text not null, created_at timestamptz not null,
  unique (secret_id, version));
create table pgb_audit (
  id bigserial primary key, action text not null, target_id text not null,
  data text not null, created_at timestamptz not null);
insert into pgb_environments values ('env_bench', 0);
insert into pgb_secrets
  select 'sec_' || n, 'env_bench', 'S' || n, 1, repeat('v', 400), now() from generate_series(1, 100) n;
create table pgb_keys (
  lookup bytea primary key, fingerprint bytea not null, result text, created_at text not null);
create index pgb_keys_created_at on pgb_keys (created_at);
create sequence pgb_key_order;
`;

/** Whether pgbench can run here (Debian: package postgresql-client). */
export function havePgbench(): boolean {
  return spawnSync('pgbench', ['--version']).status === 0;
}

/**
 * Makes the tables (`pgb_*`, in the benchmark's database) and returns how to
 * run one of the two transactions from `clients` connections for `seconds`:
 * committed transactions per second.
 */
export async function postgresAlone(opts: {
  databaseUrl: string;
  workDir: string;
  clients: number;
}): Promise<(script: AloneScript, seconds: number) => Promise<number>> {
  const client = new pg.Client({ connectionString: opts.databaseUrl });
  await client.connect();
  try {
    await client.query(SCHEMA);
  } finally {
    await client.end();
  }
  const files = new Map<AloneScript, string>();
  for (const [name, text] of Object.entries(SCRIPTS) as [AloneScript, string][]) {
    const file = join(opts.workDir, `postgres-alone-${name}.sql`);
    writeFileSync(file, text);
    files.set(name, file);
  }
  return async (script, seconds) => {
    const out = await pgbench(opts, files.get(script)!, seconds);
    const tps = /^tps = ([\d.]+)/m.exec(out);
    const failed = /^number of failed transactions: (\d+)/m.exec(out);
    if (!tps) throw new Error(`pgbench printed no tps: ${out.slice(-500)}`);
    if (failed && Number(failed[1]) > 0)
      throw new Error(`pgbench: ${failed[1]} transactions failed`);
    return Number(tps[1]);
  };
}

function pgbench(
  opts: { databaseUrl: string; clients: number },
  script: string,
  seconds: number,
): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const args = ['-n', '-c', String(opts.clients), '-j', '2', '-T', String(seconds)];
    const child = spawn('pgbench', [...args, '-f', script, opts.databaseUrl], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`pgbench exited with ${code}: ${out.slice(-500)}`)),
    );
  });
}
