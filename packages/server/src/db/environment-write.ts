import type { Kysely } from 'kysely';
import { idLiteral } from '../ids.js';
import { inSharedProjectTransaction, type Db } from './database.js';
import { driverErrorKind } from './driver-errors.js';
import { GroupCommit } from './group-commit.js';
import { preparedWrite } from './prepared-query.js';
import type { Database } from './schema.js';
import type { WriteClaim } from './write-claims.js';

/** What a write's work returns to the runner. */
interface EnvironmentWriteDone<T> {
  /** The environment written: its revision is bumped last. */
  environmentId: string;
  /** PostgreSQL: the statement that chains the write's audit events, sent with the commit ('' for none). */
  auditChain: string;
  result: T;
}

/** Runs of one write transaction that lost a race before its error is the answer. */
const MAX_WRITE_ATTEMPTS = 3;

/**
 * PostgreSQL's unique violation (two writers created the same secret name at
 * once: the second one runs again and finds the row) and deadlock (two batches
 * inserting new names in a different order). SQLite's one writer never races.
 */
const isWriteRace = (db: Db, err: unknown): boolean =>
  db.dialect === 'postgres' && driverErrorKind(err) !== null;

const revisionStatement = preparedWrite((db, _variant, environment: { id: string }) =>
  db
    .updateTable('environments')
    .set((eb) => ({ revision: eb('revision', '+', 1) }))
    .where('id', '=', environment.id),
);

/** Bumps an environment's revision (the listing cache key) inside a transaction. */
async function bumpRevision(db: Kysely<Database>, environmentId: string): Promise<void> {
  await revisionStatement(db, '', { id: environmentId });
}

/**
 * `bumpRevision` as a parameterless statement, for PostgreSQL to send with the
 * commit (see `inSharedProjectTransaction`): the environment's writers queue
 * on its row only while PostgreSQL commits. The id is written into the SQL, so
 * only a well-formed one is accepted.
 */
export function revisionBumpStatement(environmentId: string): string {
  return `update environments set revision = revision + 1 where id = ${idLiteral('environment', environmentId)}`;
}

/**
 * How secret writes reach the database, whatever the dialect (ARCHITECTURE.md,
 * "Locking"): on SQLite in a group commit (concurrent writes share one fsync);
 * on PostgreSQL in a transaction holding the project's lock shared, whose
 * revision bump and audit-chain statement travel with the commit. A write that
 * lost a race on PostgreSQL runs again on the committed state.
 */
export function environmentWriter(db: Db) {
  const kysely = db.kysely;
  const groupCommit = db.dialect === 'sqlite' ? new GroupCommit(kysely) : null;

  const transact = <T>(
    projectId: string,
    work: (trx: Kysely<Database>) => Promise<EnvironmentWriteDone<T>>,
    claim: WriteClaim | undefined,
  ): Promise<EnvironmentWriteDone<T>> =>
    groupCommit
      ? groupCommit.run(async (trx) => {
          const done = await work(trx);
          await bumpRevision(trx, done.environmentId);
          return done;
        }, claim)
      : inSharedProjectTransaction(
          kysely,
          projectId,
          work,
          (done) =>
            // The audit chain's head after the revision: a project's writers
            // queue on it, so it is taken last.
            [revisionBumpStatement(done.environmentId), done.auditChain].filter(Boolean).join('; '),
          claim,
        );

  return {
    /** PostgreSQL writers run concurrently, so they lock the rows they change (`for update`). */
    lockRows: db.dialect === 'postgres',

    /**
     * Runs `work` as one write of `projectId`'s environment (see above);
     * retried on a lost race. Under `claim`, the request's idempotency claim
     * passed down by its route (`idempotencyAtCommit`, http/idempotency.ts),
     * or else the claim of the request being handled.
     */
    async runEnvironmentWrite<T>(
      projectId: string,
      work: (trx: Kysely<Database>) => Promise<EnvironmentWriteDone<T>>,
      claim?: WriteClaim,
    ): Promise<{ environmentId: string; result: T }> {
      for (let attempt = 1; ; attempt++) {
        try {
          const { environmentId, result } = await transact(projectId, work, claim);
          return { environmentId, result };
        } catch (err) {
          if (attempt >= MAX_WRITE_ATTEMPTS || !isWriteRace(db, err)) throw err;
        }
      }
    },
  };
}
