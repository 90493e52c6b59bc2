import { AsyncLocalStorage } from 'node:async_hooks';
import type { Kysely } from 'kysely';
import type { Database, IdempotencyKeyTable } from './schema.js';

/** Of a group's keys, which have a row (`KeyRecords.find`). */
export interface GroupKeyRows {
  /** Lookups whose row is live at the key's own `at`: a write committed under the key. */
  live: Set<string>;
  /** Lookups whose row had expired by the key's own `at`: `KeyRecords.insert` removes them. */
  expired: string[];
}

/** What a group's read of its keys needs of each claim. */
export type GroupKey = Pick<WriteClaim, 'lookup' | 'lookupBytes' | 'at'>;

/**
 * The key rows of several writes at once, for a writer that runs them in one
 * transaction (the SQLite group commit): one statement to find which keys are
 * taken and one to insert the rows, in place of one insert per write.
 */
export interface KeyRecords {
  /** Of `keys` (the group's claims), in `trx`: those whose row is live, and those whose row had expired. */
  find(trx: Kysely<Database>, keys: readonly GroupKey[]): Promise<GroupKeyRows>;
  /**
   * Inserts `rows` after removing the `expired` rows `find` reported; fails
   * (a unique violation) if a key has a row all the same.
   */
  insert(
    trx: Kysely<Database>,
    rows: readonly IdempotencyKeyTable[],
    expired: readonly string[],
  ): Promise<void>;
}

/**
 * A request's claim on its write: its idempotency key (domains/idempotency).
 * The write's own transaction records it, after the write's work and before
 * the commit, so the write and the record of it commit together or not at all.
 */
export interface WriteClaim {
  /**
   * Records, in `trx`, that this write commits under the key, with what its
   * work returned. When another request with the same key committed first,
   * throws (`409 request_in_progress`), which rolls this write back.
   */
  record(trx: Kysely<Database>, value: unknown): Promise<void>;
  /**
   * `record` as parameterless SQL for PostgreSQL to send with the commit (see
   * `inSharedProjectTransaction`): no round trip of its own while the write
   * holds its locks. When another request with the key committed first, it
   * fails with a unique violation, which rolls the write back (`explain`).
   */
  recordStatement(value: unknown): string;
  /** Where the key's row is found (its primary key), as hex. */
  readonly lookup: string;
  /** `lookup` as the bytes the row stores, decoded once per claim. */
  readonly lookupBytes: Uint8Array;
  /** `record`'s row, for a writer that inserts the rows of several writes at once through `records`. */
  recordRow(value: unknown): IdempotencyKeyTable;
  /** The statements for the key rows of several writes (`KeyRecords`). */
  readonly records: KeyRecords;
  /**
   * Set when a write under this key already committed (a repeat, or a retry
   * after the answer was lost): what its work returned, returned again
   * instead of running the write.
   */
  readonly committed: { value: unknown } | null;
  /**
   * Set when the write is answered from an earlier one's result (the answer
   * then says so). A flag, not a callback to the HTTP layer: the claim must
   * reach nothing of the request's reply (see `KeyClaim` in domains/idempotency).
   */
  replayed: boolean;
  /**
   * The instant the request is handled at (what the clock says while it
   * runs): a repeat is handled at the first attempt's instant.
   */
  readonly at: Date;
  /**
   * The suffix randomness of the request's next id of `kind`, derived from the
   * key: a repeat draws the same ids as the first attempt, so an answer built
   * from ids made before the write (a new project's id) is the same again.
   */
  idBytes(kind: string): Buffer;
  /**
   * What a failed write transaction means under the claim: a unique violation
   * because another request with the key committed first (its ids are ours)
   * becomes `409 request_in_progress`; anything else is returned unchanged.
   * A claim checked at commit (no read of the key before the handler) finds
   * out here that the write was a repeat: it returns that write's result as
   * a `CommittedEarlier`, which is answered in place of the error.
   */
  explain(error: unknown): Promise<unknown>;
  /** Whether a transaction of this request has taken the claim. */
  settled: boolean;
  /** While the write's work runs: ids it makes are skipped by a repeat, so need not be drawn from the key. */
  writing: boolean;
  /**
   * True until the request is answered. Work it started that outlives it
   * (a timer of a background worker, which inherits the context) is then no
   * longer claimed: its ids, time and transactions are its own.
   */
  active: boolean;
}

/**
 * The claim of the request being handled, carried through its async calls.
 * A context, not state: each request runs in its own (`http/idempotency.ts`).
 */
const writeClaims = new AsyncLocalStorage<WriteClaim>();
/** Claimed requests being handled now (`runClaimed` … `released`). */
let claimsInFlight = 0;

/**
 * Runs `next` (the rest of a request's handling) inside `claim`'s context;
 * `untilAnswered` is given, first, the function to call once the request is
 * answered (or its connection gone). While no claimed
 * request is being handled the context is switched off: on Node 20 an
 * enabled AsyncLocalStorage makes every promise of the process, in every
 * request, call a hook, which reads and requests without a key need not pay.
 */
export function runClaimed(
  claim: WriteClaim,
  next: () => void,
  untilAnswered: (release: () => void) => void,
): void {
  claimsInFlight++;
  let released = false;
  untilAnswered(() => {
    if (released) return;
    released = true;
    claim.active = false;
    // Work the request started that outlives it is no longer claimed anyway (`active`).
    if (--claimsInFlight === 0) writeClaims.disable();
  });
  writeClaims.run(claim, next);
}

/**
 * `fn`, to be called later from another async context (the SQLite group
 * commit runs every queued write from the one that drains the queue): runs
 * it in the claim of the request that called this, or outside any claim when
 * that request holds none, never in the drainer's. Cheaper than
 * `AsyncResource.bind`, which makes a resource per call (and, on Node 20,
 * two deprecation wrappers).
 */
export function boundToClaim<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  const claim = activeClaim();
  // With no claim, `run(undefined)` is a plain call while the context is off.
  return (...args) => writeClaims.run(claim as WriteClaim, fn, ...args);
}

/** Whether the claims' context is on: while a claimed request is being handled, and only then. */
export const claimContextOn = (): boolean => claimsInFlight > 0;

/** The claim of the request being handled, while it is being handled. */
export function activeClaim(): WriteClaim | undefined {
  const claim = writeClaims.getStore();
  return claim?.active ? claim : undefined;
}

/**
 * Why a writer that checks the keys of several writes at once did not run
 * one: its key's row is live (or another write of the batch holds the key).
 * `explain` answers it as it answers a key's failed insert.
 */
export class KeyTaken extends Error {
  constructor() {
    super('another request with this idempotency key committed first');
  }
}

/** What `explain` returns when the failed write was a repeat of one that committed: its result. */
export class CommittedEarlier {
  constructor(readonly value: unknown) {}
}

/**
 * Runs one write transaction under the current request's claim. `transact`
 * starts the transaction, runs the work given to it and commits. The first
 * write of a request that holds a claim records it in that same transaction;
 * when a write under the key already committed, its result is returned and no
 * transaction starts. Every way a write transaction starts goes through here:
 * `transaction()` of the database's Kysely handle, `inSharedProjectTransaction`
 * and the SQLite group commit. A request makes its change in one transaction.
 * `recordWithCommit`: `transact` records the key itself, given the claim as
 * its second argument (PostgreSQL: `recordStatement` sent with its commit;
 * the SQLite group commit: the rows of the group's keys in one statement),
 * instead of a statement of its own in the work.
 */
export async function claimedTransaction<T>(
  transact: (work: (trx: Kysely<Database>) => Promise<T>, recordedBy?: WriteClaim) => Promise<T>,
  work: (trx: Kysely<Database>) => Promise<T>,
  claim: WriteClaim | undefined = activeClaim(),
  { recordWithCommit = false }: { recordWithCommit?: boolean } = {},
): Promise<T> {
  if (!claim || claim.settled) return transact(work);
  if (claim.committed) {
    claim.settled = true;
    claim.replayed = true;
    return claim.committed.value as T;
  }
  try {
    const claimed = async (trx: Kysely<Database>) => {
      claim.writing = true;
      try {
        const result = await work(trx);
        if (!recordWithCommit) await claim.record(trx, result);
        return result;
      } finally {
        claim.writing = false;
      }
    };
    // With `recordWithCommit`, `transact` records the key itself.
    const value = await (recordWithCommit ? transact(claimed, claim) : transact(claimed));
    claim.settled = true;
    return value;
  } catch (err) {
    const explained = await claim.explain(err);
    if (!(explained instanceof CommittedEarlier)) throw explained;
    claim.settled = true;
    claim.replayed = true;
    return explained.value as T;
  }
}

/**
 * Runs `work` outside the current request's claim: for housekeeping writes a
 * request makes before its own (expiring lapsed invitations), which must not
 * take the claim of the request's change.
 */
export function unclaimed<T>(work: () => T): T {
  return writeClaims.exit(work);
}
