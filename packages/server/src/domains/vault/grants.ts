import { verifyGrantSignature, type Grant } from '@coffer/sdk';
import { AppError, staleEpoch, type ErrorDetail } from '../../errors.js';
import { newId } from '../../ids.js';
import type { GrantRow, RecipientType } from './vault.repo.js';

// Grant rules shared by the vault (member grants, re-key) and the tokens domain
// (the environment-key grants of a new API key or CI token). The server cannot
// open a grant; it checks that each one is signed by the caller for exactly the
// recipient, environment and epoch it will be stored under, so a client bug or a
// forged upload cannot leave a member or token holding a grant that fails later.

/** `verifyGrantSignature` throws on malformed input; for the server that is just "does not verify". */
function signatureHolds(
  grant: Grant,
  recipientPublicKey: string,
  granterSigningPublicKey: string,
): boolean {
  try {
    return verifyGrantSignature(grant, { recipientPublicKey, granterSigningPublicKey });
  } catch {
    return false;
  }
}

export const invalidSignatures = (details: ErrorDetail[]) =>
  new AppError(
    'unprocessable',
    'A grant signature does not verify against your signing key and the recipient’s public key',
    details,
  );

export interface EnvironmentGrantInput {
  environment_id: string;
  epoch: number;
  sealed_key: string;
  signature: string;
}

/**
 * Checks a new token's environment-key grants: one per scoped environment, no
 * more, at the current epoch, each signed by the minter. Returns the rows to insert.
 */
export function tokenGrantRows(input: {
  projectId: string;
  epoch: number;
  recipientType: Exclude<RecipientType, 'user'>;
  recipientId: string;
  recipientPublicKey: string;
  granterId: string;
  granterSigningPublicKey: string;
  environmentIds: readonly string[];
  grants: readonly EnvironmentGrantInput[];
  at: string;
}): GrantRow[] {
  const { grants } = input;
  if (grants.length > 0 && input.epoch === 0) {
    throw new AppError('version_conflict', 'The vault is not initialised yet', [
      { field: 'grants', issue: 'not_initialized', current_epoch: 0 },
    ]);
  }
  grants.forEach((g, i) => {
    if (g.epoch !== input.epoch) throw staleEpoch(`grants.${i}.epoch`, input.epoch);
  });
  const scoped = new Set(input.environmentIds);
  const granted = new Set(grants.map((g) => g.environment_id));
  const missing = [...scoped].filter((e) => !granted.has(e));
  const unexpected = [...granted].filter((e) => !scoped.has(e));
  const details: ErrorDetail[] = [];
  if (missing.length) details.push({ field: 'grants', issue: 'missing', environment_ids: missing });
  if (unexpected.length)
    details.push({ field: 'grants', issue: 'unexpected', environment_ids: unexpected });
  if (granted.size !== grants.length) details.push({ field: 'grants', issue: 'duplicate' });
  if (details.length) {
    throw new AppError(
      'unprocessable',
      'Grants must cover exactly the environments in scope: one environment-key grant each',
      details,
    );
  }
  const rows = grants.map((g) =>
    grantRow(
      {
        projectId: input.projectId,
        epoch: g.epoch,
        kind: 'environment_key',
        recipientType: input.recipientType,
        recipientId: input.recipientId,
        environmentId: g.environment_id,
        granterId: input.granterId,
        at: input.at,
      },
      g,
    ),
  );
  const bad = signatureFailures(
    'grants',
    rows,
    () => input.recipientPublicKey,
    input.granterSigningPublicKey,
  );
  if (bad.length) throw invalidSignatures(bad);
  return rows;
}

/** A new `vault_grants` row for a grant the client sealed and signed. */
export function grantRow(
  where: {
    projectId: string;
    epoch: number;
    kind: GrantRow['kind'];
    recipientType: RecipientType;
    recipientId: string;
    environmentId: string | null;
    granterId: string;
    at: string;
  },
  signed: { sealed_key: string; signature: string },
): GrantRow {
  return {
    id: newId('grant'),
    project_id: where.projectId,
    epoch: where.epoch,
    kind: where.kind,
    recipient_type: where.recipientType,
    recipient_id: where.recipientId,
    environment_id: where.environmentId,
    sealed_key: signed.sealed_key,
    granter_id: where.granterId,
    signature: signed.signature,
    created_at: where.at,
  };
}

/** One `<field>.<i>.signature` detail per row whose signature does not verify. */
export function signatureFailures(
  field: string,
  rows: readonly GrantRow[],
  recipientPublicKey: (row: GrantRow) => string,
  granterSigningPublicKey: string,
): ErrorDetail[] {
  return rows.flatMap((row, i) =>
    signatureHolds(asGrant(row), recipientPublicKey(row), granterSigningPublicKey)
      ? []
      : [{ field: `${field}.${i}.signature`, issue: 'invalid_signature' }],
  );
}

/** The SDK's view of a stored grant (what was signed). */
const asGrant = (row: GrantRow): Grant => ({
  kind: row.kind,
  project_id: row.project_id,
  epoch: row.epoch,
  environment_id: row.environment_id,
  recipient_id: row.recipient_id,
  sealed_key: row.sealed_key,
  granter_id: row.granter_id,
  signature: row.signature,
});

export const grantView = (
  row: GrantRow & {
    granter_signing_public_key: string | null;
    granter_public_key?: string | null;
    granter_email?: string | null;
  },
) => ({
  id: row.id,
  ...asGrant(row),
  recipient_type: row.recipient_type,
  granter_signing_public_key: row.granter_signing_public_key,
  // A user granter's X25519 key and e-mail, so clients can compare both keys with their pins.
  granter_public_key: row.granter_public_key ?? null,
  granter_email: row.granter_email ?? null,
  created_at: row.created_at,
});
