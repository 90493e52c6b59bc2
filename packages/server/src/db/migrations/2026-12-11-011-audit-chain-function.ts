import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen in time: never imports application code. Runs on SQLite and PostgreSQL
// (a no-op on SQLite).
// PostgreSQL appends audit events to their chain inside the database:
// coffer_audit_chain(chain, ids) takes the chain's head (row lock), gives each
// event (already inserted, without a place in the chain, in the order of `ids`)
// the next position, the previous hash and its own hash, and moves the head.
// Secret writes send it with their commit, so a project's head row is locked
// only while PostgreSQL commits, not across round trips to the application.
// The hash is the one of 2026-12-01-005 and domains/audit/chain.ts: SHA-256
// (hex) of the UTF-8 JSON array ["coffer.audit.v1", seq, id, project_id,
// action, actor_id, credential_kind, credential_id, ip, request_id,
// target_type, target_id, data, created_at, prev_hash] without spaces;
// to_json(text) escapes strings exactly as JSON.stringify does (\" \\ \b \f
// \n \r \t, other controls as lowercase \u00xx, everything else as is).

/* eslint-disable @typescript-eslint/no-explicit-any */
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql
    .raw(
      `create function coffer_audit_chain(p_chain text, p_ids text[]) returns void
language plpgsql as $fn$
declare
  v_seq integer;
  v_hash text;
  v_new text;
  v_id text;
  e audit_events%rowtype;
begin
  select seq, hash into v_seq, v_hash from audit_chain_heads where chain = p_chain for update;
  if not found then
    insert into audit_chain_heads (chain, seq, hash) values (p_chain, 0, repeat('0', 64))
      on conflict (chain) do nothing;
    select seq, hash into v_seq, v_hash from audit_chain_heads where chain = p_chain for update;
  end if;
  -- One primary-key lookup per event (never a plan that scans the log).
  foreach v_id in array p_ids loop
    select * into e from audit_events where id = v_id;
    if not found or coalesce(e.project_id, '') <> p_chain or e.chain_seq is not null then
      raise exception 'coffer_audit_chain: event % is not an unchained event of chain %', v_id, p_chain;
    end if;
    v_seq := v_seq + 1;
    v_new := encode(sha256(convert_to(
      '["coffer.audit.v1",' || v_seq::text
      || ',' || coalesce(to_json(e.id)::text, 'null')
      || ',' || coalesce(to_json(e.project_id)::text, 'null')
      || ',' || coalesce(to_json(e.action)::text, 'null')
      || ',' || coalesce(to_json(e.actor_id)::text, 'null')
      || ',' || coalesce(to_json(e.credential_kind)::text, 'null')
      || ',' || coalesce(to_json(e.credential_id)::text, 'null')
      || ',' || coalesce(to_json(e.ip)::text, 'null')
      || ',' || coalesce(to_json(e.request_id)::text, 'null')
      || ',' || coalesce(to_json(e.target_type)::text, 'null')
      || ',' || coalesce(to_json(e.target_id)::text, 'null')
      || ',' || coalesce(to_json(e.data)::text, 'null')
      || ',' || coalesce(to_json(e.created_at)::text, 'null')
      || ',' || to_json(v_hash)::text || ']', 'UTF8')), 'hex');
    update audit_events set chain_seq = v_seq, prev_hash = v_hash, hash = v_new where id = e.id;
    v_hash := v_new;
  end loop;
  update audit_chain_heads set seq = v_seq, hash = v_hash where chain = p_chain;
end
$fn$`,
    )
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw('drop function if exists coffer_audit_chain(text, text[])').execute(db);
}
