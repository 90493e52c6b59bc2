import { fingerprint, verifyKeyPins, type KeyPinsDocument } from '@coffer/sdk';
import type { SharedDeps } from '../../shared-deps.js';
import { AppError } from '../../errors.js';
import type { Principal } from '../../http/principal.js';
import { projectAccess, requireSession } from '../../access/project-access.js';
import type { IdentityService } from '../identity/identity.service.js';
import type { VaultService } from '../vault/vault.service.js';
import {
  findPins,
  findPinsVersion,
  insertFirstPins,
  replacePins,
  type KeyPinsRow,
} from './key-trust.repo.js';

type Deps = Pick<SharedDeps, 'db' | 'clock'> & {
  identity: Pick<IdentityService, 'publicKeysOf'>;
  vault: Pick<VaultService, 'keyHolders'>;
};

/**
 * Key pins: each user's signed document of the keys they accepted for others.
 * The server checks the signature against the user's signing key (so a client
 * bug cannot store garbage) and that the version grows; it cannot alter a
 * document without the owner's key, only withhold or roll it back, which
 * clients detect by remembering the highest version they saw.
 */
export function keyTrustService({ db: { kysely: db }, clock, identity, vault }: Deps) {
  return {
    async getPins(principal: Principal | null) {
      const { userId } = requireSession(principal, 'have key pins');
      const row = await findPins(db, userId);
      if (!row) return { version: 0, document: null, signature: null };
      return {
        version: Number(row.version),
        document: JSON.parse(row.document) as KeyPinsDocument,
        signature: row.signature,
      };
    },

    async putPins(
      principal: Principal | null,
      input: { document: KeyPinsDocument; signature: string },
    ) {
      const { userId } = requireSession(principal, 'store key pins');
      const { document, signature } = input;
      if (document.user_id !== userId) {
        throw new AppError('unprocessable', 'The document must be your own (user_id)', [
          { field: 'document.user_id', issue: 'not_yours' },
        ]);
      }
      const keys = await identity.publicKeysOf(db, userId);
      if (!keys?.signing_public_key)
        throw new AppError('forbidden', 'Your account has no signing key');
      try {
        verifyKeyPins({ document, signature }, keys.signing_public_key);
      } catch {
        throw new AppError(
          'unprocessable',
          'The signature does not verify against your signing key, or the document is malformed (pins sorted by user_id, one per user)',
          [{ field: 'signature', issue: 'invalid_signature' }],
        );
      }
      const at = clock.now().toISOString();
      await db.transaction().execute(async (trx) => {
        const current = await findPinsVersion(trx, userId);
        const currentVersion = current ? Number(current.version) : 0;
        if (document.version <= currentVersion) {
          throw new AppError(
            'version_conflict',
            `The stored key pins are at version ${currentVersion}: fetch them, merge and send a higher version`,
            [{ field: 'document.version', issue: 'not_growing', current_version: currentVersion }],
          );
        }
        const row: KeyPinsRow = {
          version: document.version,
          document: JSON.stringify(document),
          signature,
          updated_at: at,
        };
        if (current) {
          if (!(await replacePins(trx, userId, currentVersion, row))) {
            throw new AppError(
              'version_conflict',
              'The key pins changed meanwhile: fetch them and retry',
              [{ field: 'document.version', issue: 'not_growing' }],
            );
          }
        } else {
          if ((await insertFirstPins(trx, userId, row)) !== document.version) {
            throw new AppError(
              'version_conflict',
              'The key pins changed meanwhile: fetch them and retry',
              [{ field: 'document.version', issue: 'not_growing' }],
            );
          }
        }
      });
      return { version: document.version, document, signature };
    },

    /** The public keys of a project's active admins and developers, for any member of the project. */
    async memberKeys(principal: Principal | null, projectId: string) {
      await projectAccess(db, principal, projectId);
      const rows = await vault.keyHolders(db, projectId);
      return rows.map((m) => ({
        member_id: m.member_id,
        user_id: m.user_id,
        email: m.email,
        name: m.name,
        role: m.role as 'admin' | 'developer',
        public_key: m.public_key!,
        signing_public_key: m.signing_public_key!,
        fingerprint: fingerprint(m.public_key!, m.signing_public_key!),
      }));
    },
  };
}
