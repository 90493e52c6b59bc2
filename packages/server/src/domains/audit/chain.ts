import { createHash } from 'node:crypto';
import type { Insertable, Kysely } from 'kysely';
import type { AuditEventTable, Database } from '../../db/schema.js';
import { idLiteral } from '../../ids.js';
import { inSnapshot } from '../../db/database.js';
import {
  auditedProjects,
  chainHeads,
  chainPage,
  firstUnchainedEvent,
  reserveChainPositions,
  updateChainHead,
} from './chain.repo.js';

/**
 * The audit log as hash chains, one per project (and one, keyed '', for events
 * without a project). Each event stores its position in the chain
 * (`chain_seq`), the previous event's hash (`prev_hash`, 64 zeros for the
 * first) and its own `hash`: SHA-256 over a canonical encoding of every field
 * and `prev_hash`. Editing, deleting or reordering a stored event breaks the
 * chain at that event; `audit_chain_heads` holds each chain's last position and
 * hash, so removing events from the end shows too.
 *
 * Appending reserves positions on the chain's head row (an upsert that locks it
 * on PostgreSQL until commit, so a project's events are appended one
 * transaction at a time; SQLite has one writer anyway) and must run inside the
 * transaction that inserts the events: a rollback gives the positions back.
 * The encoding must never change: the migration that chained the events
 * written before it (2026-12-01-005) carries its own copy of it, and so does
 * PostgreSQL's `coffer_audit_chain` function (2026-12-11-011).
 *
 * On PostgreSQL, secret writes chain their events in the database instead
 * (`auditChainStatement`): the events are inserted without a place in the
 * chain, and one call of `coffer_audit_chain` sent in the commit's round trip
 * (see `inSharedProjectTransaction`) locks the head, hashes and places them and
 * moves the head, so a project's writers queue on its head only while
 * PostgreSQL commits. Either way an event is never committed unchained.
 */

export const GENESIS_HASH = '0'.repeat(64);
const VERSION = 'coffer.audit.v1';

export type AuditRow = Insertable<AuditEventTable>;
type ChainedFields = Pick<
  AuditEventTable,
  | 'id'
  | 'project_id'
  | 'action'
  | 'actor_id'
  | 'credential_kind'
  | 'credential_id'
  | 'ip'
  | 'request_id'
  | 'target_type'
  | 'target_id'
  | 'data'
  | 'created_at'
>;

const orNull = <T>(value: T | undefined): T | null => (value === undefined ? null : value);

/** SHA-256 (hex) of an event at `seq` in its chain, after the event hashed `prevHash`. */
export function auditEventHash(event: ChainedFields, seq: number, prevHash: string): string {
  const canonical = JSON.stringify([
    VERSION,
    seq,
    event.id,
    orNull(event.project_id),
    event.action,
    orNull(event.actor_id),
    orNull(event.credential_kind),
    orNull(event.credential_id),
    orNull(event.ip),
    orNull(event.request_id),
    orNull(event.target_type),
    orNull(event.target_id),
    event.data,
    event.created_at,
    prevHash,
  ]);
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

const chainOf = (projectId: string | null | undefined): string => projectId ?? '';

/** The new last link of a chain, for `storeChainHeads` (or a statement of the caller's) to write. */
export interface ChainHead {
  chain: string;
  hash: string;
}

/**
 * Gives each row its place in its chain: reserves positions on the chains'
 * heads (in chain order, so two transactions never wait on each other's heads
 * in opposite orders) and computes the hashes. Returns the rows to insert and
 * the heads' new hashes, which the caller stores in the same transaction.
 */
export async function chainAuditRows(
  trx: Kysely<Database>,
  rows: readonly AuditRow[],
): Promise<{ rows: AuditRow[]; heads: ChainHead[] }> {
  const byChain = new Map<string, AuditRow[]>();
  for (const row of rows) {
    const chain = chainOf(row.project_id);
    let list = byChain.get(chain);
    if (!list) byChain.set(chain, (list = []));
    list.push(row);
  }
  const out: AuditRow[] = [];
  const heads: ChainHead[] = [];
  for (const chain of [...byChain.keys()].sort()) {
    const list = byChain.get(chain)!;
    const reserved = await reserveChainPositions(trx, chain, list.length, GENESIS_HASH);
    let seq = Number(reserved.seq) - list.length;
    let prev = reserved.hash;
    for (const row of list) {
      seq++;
      const hash = auditEventHash(row as ChainedFields, seq, prev);
      out.push({ ...row, chain_seq: seq, prev_hash: prev, hash });
      prev = hash;
    }
    heads.push({ chain, hash: prev });
  }
  return { rows: out, heads };
}

/**
 * PostgreSQL: the parameterless statement that chains `rows` (inserted
 * unchained, in this transaction) in the order given, for the caller to send
 * with its commit; '' when there is nothing to chain. Every value in it is an
 * id checked by `idLiteral` (the chain '' aside), so nothing else reaches the
 * SQL text.
 */
export function auditChainStatement(rows: readonly AuditRow[]): string {
  const byChain = new Map<string, string[]>();
  for (const row of rows) {
    const chain = chainOf(row.project_id);
    let ids = byChain.get(chain);
    if (!ids) byChain.set(chain, (ids = []));
    ids.push(idLiteral('auditEvent', row.id));
  }
  // In chain order, like `chainAuditRows`, so two writers never take heads in opposite orders.
  return [...byChain.keys()]
    .sort()
    .map((chain) => {
      const literal = chain === '' ? "''" : idLiteral('project', chain);
      return `select coffer_audit_chain(${literal}, array[${byChain.get(chain)!.join(',')}]::text[])`;
    })
    .join('; ');
}

/** Writes the heads `chainAuditRows` returned (in the same transaction). */
export async function storeChainHeads(
  trx: Kysely<Database>,
  heads: readonly ChainHead[],
): Promise<void> {
  for (const head of heads) await updateChainHead(trx, head.chain, head.hash);
}

/** The verdict on one chain. */
export interface ChainReport {
  /** The project's id, or null for the events without a project. */
  projectId: string | null;
  events: number;
  /** The last event's hash, as stored in the chain's head. */
  head: string | null;
  /** The first broken link; absent when the chain verifies. */
  broken?: { eventId: string | null; seq: number | null; reason: string };
}

const short = (hash: string | null | undefined) => (hash ? hash.slice(0, 12) : 'none');
const PAGE = 2_000;

/**
 * Checks every chain, in one consistent snapshot (a repeatable-read
 * transaction on PostgreSQL, a read transaction on SQLite): each event's
 * position follows the previous one, its `prev_hash` is the previous event's
 * hash, its fields still hash to its `hash`, and the head names the last event.
 * Reports the first broken link of each chain.
 */
export async function verifyAuditChains(
  db: Kysely<Database>,
  dialect: 'sqlite' | 'postgres',
): Promise<ChainReport[]> {
  return inSnapshot(db, dialect, async (trx) => {
    const heads = new Map((await chainHeads(trx)).map((h) => [h.chain, h]));
    const projects = await auditedProjects(trx);
    const chains = new Set<string>([
      ...heads.keys(),
      ...projects.map((p) => chainOf(p.project_id)),
    ]);
    const reports: ChainReport[] = [];
    for (const chain of [...chains].sort()) {
      reports.push(await verifyChain(trx, chain, heads.get(chain)));
    }
    return reports;
  });
}

async function verifyChain(
  trx: Kysely<Database>,
  chain: string,
  head: { seq: number; hash: string } | undefined,
): Promise<ChainReport> {
  const projectId = chain === '' ? null : chain;
  const report: ChainReport = { projectId, events: 0, head: head?.hash ?? null };
  const broken = (eventId: string | null, seq: number | null, reason: string) => {
    report.broken = { eventId, seq, reason };
    return report;
  };

  const unchained = await firstUnchainedEvent(trx, projectId);
  if (unchained) return broken(unchained.id, null, 'the event has no place in the chain (no hash)');

  let expected = 1;
  let running = GENESIS_HASH;
  let previousId: string | null = null;
  let after: { seq: number; id: string } | null = null;
  for (;;) {
    const page = await chainPage(trx, projectId, after, PAGE);
    for (const row of page) {
      const seq = Number(row.chain_seq);
      if (seq < expected) {
        return broken(
          row.id,
          seq,
          `out of order: position ${seq} is taken twice (also by ${previousId ?? 'an earlier event'})`,
        );
      }
      if (seq > expected) {
        const missing = seq - expected;
        return broken(
          row.id,
          seq,
          `missing: ${missing} event${missing === 1 ? '' : 's'} (position ${expected}${missing > 1 ? `–${seq - 1}` : ''}) deleted before this one`,
        );
      }
      if (row.prev_hash !== running) {
        return broken(
          row.id,
          seq,
          `out of order: its prev_hash ${short(row.prev_hash)} is not the hash of the event before it (${previousId ?? 'chain start'}: ${short(running)}); events were reordered or replaced`,
        );
      }
      const computed = auditEventHash(row, seq, row.prev_hash);
      if (computed !== row.hash) {
        return broken(
          row.id,
          seq,
          `edited: its fields hash to ${short(computed)}, not to the stored ${short(row.hash)}`,
        );
      }
      running = row.hash;
      previousId = row.id;
      expected++;
      report.events++;
    }
    if (page.length < PAGE) break;
    const last = page[page.length - 1]!;
    after = { seq: Number(last.chain_seq), id: last.id };
  }

  if (!head) {
    return broken(null, null, 'the chain has no head record (audit_chain_heads row deleted)');
  }
  if (Number(head.seq) !== report.events || head.hash !== running) {
    const missing = Number(head.seq) - report.events;
    return broken(
      null,
      Number(head.seq),
      missing > 0
        ? `missing: the head records ${head.seq} events ending in ${short(head.hash)}, only ${report.events} remain (the last ${missing} deleted)`
        : `the head records event ${head.seq} with hash ${short(head.hash)}, but the chain ends at ${report.events} with ${short(running)}`,
    );
  }
  return report;
}
