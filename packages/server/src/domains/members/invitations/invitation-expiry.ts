import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database, MemberTable } from '../../../db/schema.js';
import type { SharedDeps } from '../../../shared-deps.js';
import { unclaimed } from '../../../db/write-claims.js';
import { audit, SYSTEM_ACTOR } from '../../audit/audit.js';
import {
  findLapsedInvitations,
  revokeLapsedInvitation,
  type LapseScope,
  type LapsedInvitation,
} from './invitations.repo.js';

const BATCH = 200;

/** Whether a row that still says `pending` is in fact a lapsed invitation. */
export const hasLapsed = (
  member: Pick<MemberTable, 'status' | 'invitation_expires_at'>,
  now: Date,
): boolean =>
  member.status === 'pending' &&
  member.invitation_expires_at !== null &&
  member.invitation_expires_at <= now.toISOString();

/**
 * Turns lapsed invitations into `revoked`, each with an `invitation.expired`
 * audit event in the same transaction. Rows another request already revoked
 * are skipped, so concurrent callers never audit one expiry twice.
 */
export async function revokeLapsed(
  trx: Kysely<Database>,
  invitations: readonly LapsedInvitation[],
  now: Date,
): Promise<void> {
  const at = now.toISOString();
  for (const invitation of invitations) {
    if (!(await revokeLapsedInvitation(trx, invitation.id, at))) continue;
    await audit(
      trx,
      { actor: SYSTEM_ACTOR, projectId: invitation.project_id, at: now },
      'invitation.expired',
      ['member', invitation.id],
      {
        user_id: invitation.user_id,
        role: invitation.role,
        before: { status: 'pending' },
        after: { status: 'revoked' },
      },
    );
  }
}

/**
 * Applies expiry to invitations in `scope` before they are read, so the API
 * never shows a lapsed invitation as `pending`; the periodic sweep calls it
 * with an empty scope. Costs one read when nothing has lapsed.
 */
export async function expireLapsedInvitations(
  db: Kysely<Database>,
  scope: LapseScope,
  now: Date,
): Promise<number> {
  let expired = 0;
  for (;;) {
    const lapsed = await findLapsedInvitations(db, scope, now.toISOString(), BATCH);
    if (lapsed.length === 0) return expired;
    // Housekeeping before the request's own change: not the write its idempotency key names.
    await unclaimed(() => db.transaction().execute((trx) => revokeLapsed(trx, lapsed, now)));
    expired += lapsed.length;
    if (lapsed.length < BATCH) return expired;
  }
}

/** Reads apply expiry lazily; the sweep keeps stored statuses honest for everything else. */
const SWEEP_INTERVAL_MS = 60_000;

/** The periodic expiry of lapsed invitations: one per app, started when it is ready. */
export function invitationExpirySweep(
  { db, clock }: Pick<SharedDeps, 'db' | 'clock'>,
  log: Pick<FastifyBaseLogger, 'error'>,
): { start(): void; stop(): void } {
  let sweep: NodeJS.Timeout | null = null;
  return {
    start() {
      sweep = setInterval(() => {
        expireLapsedInvitations(db.kysely, {}, clock.now()).catch((err: unknown) =>
          log.error({ err }, 'invitation expiry sweep failed'),
        );
      }, SWEEP_INTERVAL_MS);
      sweep.unref();
    },
    stop() {
      if (sweep) clearInterval(sweep);
    },
  };
}
