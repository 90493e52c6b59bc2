import { CryptoError, verifyMembershipChain, type MembershipStatement } from '@coffer/sdk';
import type { SharedDeps } from '../../shared-deps.js';
import { AppError } from '../../errors.js';
import { audit, type Actor } from '../audit/audit.js';
import {
  lockedProjectAccess,
  projectAccess,
  requireRole,
  requireSession,
} from '../../access/project-access.js';
import type { IdentityService } from '../identity/identity.service.js';
import { findStatements, insertStatements } from './membership-chain.repo.js';

type Deps = Pick<SharedDeps, 'db' | 'clock'> & { identity: Pick<IdentityService, 'publicKeysOf'> };

/**
 * The signed membership chain of each project. Clients are its judges: they
 * replay it from the root and trust only what admins of the chain signed. The
 * server stores it and appends only a valid continuation signed by the caller
 * (an admin, with their own registered key), so an honest server never holds a
 * chain a client would refuse; it cannot forge one, only withhold its tail.
 */
export function membershipChainService({ db: { kysely: db, dialect }, clock, identity }: Deps) {
  const stored = async (executor: typeof db, projectId: string) => {
    const rows = await findStatements(executor, projectId);
    return rows.map((r) => JSON.parse(r.statement) as MembershipStatement);
  };

  return {
    /** The whole chain, for any member or token of the project (empty: the project has none yet). */
    async chain(principal: Parameters<typeof projectAccess>[1], projectId: string) {
      await projectAccess(db, principal, projectId);
      return { statements: await stored(db, projectId) };
    },

    /**
     * Appends `statements` (signed by the caller, an admin) at the chain's head:
     * `409 version_conflict` (`not_head`) when the first one's seq is not the
     * chain's length, `422 unprocessable` (`invalid_chain`) when the result
     * does not verify or a statement is not the caller's.
     */
    async append(actor: Actor, projectId: string, statements: MembershipStatement[]) {
      const principal = requireSession(actor.principal, 'sign membership statements');
      return db.transaction().execute(async (trx) => {
        const access = await lockedProjectAccess(trx, dialect, principal, projectId);
        requireRole(access, 'admin', 'sign membership statements');
        const chain = await stored(trx, projectId);
        const first = statements[0]!;
        if (first.seq !== chain.length) {
          throw new AppError(
            'version_conflict',
            `The membership chain has ${chain.length} statements: fetch it and sign the next one`,
            [{ field: 'statements.0.seq', issue: 'not_head', current_length: chain.length }],
          );
        }
        const keys = await identity.publicKeysOf(trx, principal.userId);
        for (const [i, s] of statements.entries()) {
          if (s.signer_id !== principal.userId) {
            throw unprocessable(
              `statements.${i}.signer_id`,
              'not_yours',
              'Sign statements yourself: signer_id must be your user id',
            );
          }
        }
        let state;
        try {
          state = verifyMembershipChain([...chain, ...statements], projectId);
        } catch (error) {
          if (error instanceof CryptoError) {
            throw unprocessable('statements', 'invalid_chain', `${error.message}`);
          }
          throw error;
        }
        // The caller signs with the key the server has for them, as the chain holds it.
        const own = state.members.get(principal.userId);
        const signedWith =
          own?.signing_public_key ??
          statements.find((s) => s.user_id === principal.userId)?.signing_public_key;
        if (!keys?.signing_public_key || signedWith !== keys.signing_public_key) {
          throw unprocessable(
            'statements',
            'invalid_chain',
            'The chain holds a signing key for you other than your account’s',
          );
        }
        for (const [i, s] of statements.entries()) {
          if (s.kind !== 'add' && s.kind !== 'root') continue;
          const subject = await identity.publicKeysOf(trx, s.user_id);
          if (
            subject?.public_key !== s.public_key ||
            subject.signing_public_key !== s.signing_public_key
          ) {
            throw unprocessable(
              `statements.${i}.public_key`,
              'not_their_keys',
              `The keys in statement ${s.seq} are not the account keys of ${s.user_id}`,
            );
          }
        }
        const at = clock.now();
        await insertStatements(
          trx,
          statements.map((s) => ({
            project_id: projectId,
            seq: s.seq,
            statement: JSON.stringify(s),
            created_at: at.toISOString(),
          })),
        );
        for (const s of statements) {
          await audit(trx, { actor, projectId, at }, 'membership.signed', ['user', s.user_id], {
            seq: s.seq,
            kind: s.kind,
            role: s.role,
          });
        }
        return { length: state.length, head: state.head, fingerprint: state.fingerprint };
      });
    },
  };
}

const unprocessable = (field: string, issue: string, message: string) =>
  new AppError('unprocessable', message, [{ field, issue }]);
