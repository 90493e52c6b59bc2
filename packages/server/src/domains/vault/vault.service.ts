import { envelopeEpoch, fingerprint } from '@coffer/sdk';
import type { Kysely } from 'kysely';
import type { SharedDeps } from '../../shared-deps.js';
import type { Database } from '../../db/schema.js';
import { AppError, staleEpoch, validation, type ErrorDetail } from '../../errors.js';
import type { Principal } from '../../http/principal.js';
import { audit, type Actor } from '../audit/audit.js';
import {
  lockedProjectAccess,
  projectAccess,
  requireRole,
  type ProjectAccess,
} from '../../access/project-access.js';
import { grantRow, grantView, invalidSignatures, signatureFailures } from './grants.js';
import * as repo from './vault.repo.js';
import type { GrantRow, VaultMemberRow } from './vault.repo.js';

type VaultDeps = Pick<SharedDeps, 'db' | 'clock' | 'listingCache'>;

interface MemberGrantInput {
  recipient_id: string;
  epoch: number;
  sealed_key: string;
  signature: string;
}

interface RekeyInput {
  from_epoch: number;
  versions: readonly { id: string; value: string }[];
  grants: readonly MemberGrantInput[];
  token_grants: readonly (MemberGrantInput & { environment_id: string })[];
  /** Introduction secrets re-sealed under the new epoch; absent: the stored ones are dropped. */
  introductions?: readonly { member_id: string; sealed_secret: string }[] | undefined;
}

/** At most this many ids are listed in a 409's details; `count` says how many there are. */
const LISTED_IDS = 20;

/**
 * Granting, snapshotting and re-keying touch the project key itself, which only
 * members hold: API keys and CI tokens hold environment keys, so they are refused
 * even with the admin role.
 */
function requireMemberAdmin(access: ProjectAccess, action: string): void {
  requireRole(access, 'admin', action);
  if (access.principal.kind !== 'session') {
    throw new AppError(
      'forbidden',
      `Only a signed-in admin can ${action}: API keys and CI tokens hold environment keys, not the project key`,
    );
  }
}

const memberKeys = (m: VaultMemberRow) => ({
  user_id: m.user_id,
  email: m.email,
  name: m.name,
  role: m.role as 'admin' | 'developer',
  public_key: m.public_key!,
  signing_public_key: m.signing_public_key!,
  fingerprint: fingerprint(m.public_key!, m.signing_public_key!),
});

/** Set difference for 409 details: what is missing and what should not be there. */
function compareSets(
  field: string,
  expected: ReadonlySet<string>,
  given: ReadonlySet<string>,
): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const missing = [...expected].filter((x) => !given.has(x));
  const unexpected = [...given].filter((x) => !expected.has(x));
  if (missing.length)
    details.push({
      field,
      issue: 'missing',
      count: missing.length,
      ids: missing.slice(0, LISTED_IDS),
    });
  if (unexpected.length)
    details.push({
      field,
      issue: 'unexpected',
      count: unexpected.length,
      ids: unexpected.slice(0, LISTED_IDS),
    });
  return details;
}

function firstDuplicate(values: readonly string[]): number {
  const seen = new Set<string>();
  for (let i = 0; i < values.length; i++) {
    if (seen.has(values[i]!)) return i;
    seen.add(values[i]!);
  }
  return -1;
}

export function vaultService(deps: VaultDeps) {
  const { db, clock } = deps;
  const kysely = db.kysely;

  return {
    // For other domains, on their handle (their transaction or the database);
    // no access check: the caller made it.
    /** The project's key epoch and whether a re-key is recommended. */
    stateOf: (handle: Kysely<Database>, projectId: string) => repo.vaultState(handle, projectId),
    /** The project's key holders: active admins and developers with registered keys. */
    keyHolders: (handle: Kysely<Database>, projectId: string) =>
      repo.vaultMembers(handle, projectId),
    /** The project's environments (id, name, slug), the targets of environment-key grants. */
    environmentsOf: (handle: Kysely<Database>, projectId: string) =>
      repo.environmentsOf(handle, projectId),
    insertGrants: (handle: Kysely<Database>, rows: readonly GrantRow[]) =>
      repo.insertGrants(handle, rows),
    /** A user's grants in the project: they became a viewer or left. */
    deleteUserGrants: (handle: Kysely<Database>, projectId: string, userId: string) =>
      repo.deleteUserGrants(handle, projectId, userId),
    /** The grants of these API keys and CI tokens, at every epoch: they were revoked. */
    deleteGrantsOf: (
      handle: Kysely<Database>,
      projectId: string,
      recipientIds: readonly string[],
    ) => repo.deleteGrantsOf(handle, projectId, recipientIds),
    /** The token grants of an environment's key: the environment is being deleted. */
    deleteEnvironmentGrants: (handle: Kysely<Database>, projectId: string, environmentId: string) =>
      repo.deleteEnvironmentGrants(handle, projectId, environmentId),

    /** The caller's view of the vault: epoch, their own grants, and for admins who awaits one. */
    async status(principal: Principal | null, projectId: string) {
      const access = await projectAccess(kysely, principal, projectId);
      const state = await repo.vaultState(kysely, projectId);
      if (!state) throw new AppError('not_found', 'Project not found');
      const p = access.principal;
      const recipient =
        p.kind === 'session' ? { type: 'user' as const, id: p.userId } : { type: p.kind, id: p.id };
      const epoch = state.vault_epoch;
      const status = {
        project_id: projectId,
        epoch,
        initialized: epoch > 0,
        rekey_recommended: state.rekey_recommended === 1,
        recipient,
        grants: [] as ReturnType<typeof grantView>[],
      };
      // A viewer (or a token acting as one) holds no key.
      if (access.role === 'viewer' || epoch === 0) return status;
      const rows = await repo.grantsOf(kysely, projectId, epoch, recipient.type, recipient.id);
      const scopes = access.scopes;
      status.grants = rows
        .filter((g) =>
          recipient.type === 'user'
            ? g.kind === 'project_key'
            : g.environment_id !== null && scopes !== null && g.environment_id in scopes,
        )
        .map(grantView);
      if (access.role !== 'admin' || p.kind !== 'session') return status;
      const pending = await repo.membersAwaitingGrant(kysely, projectId, epoch);
      return {
        ...status,
        pending_grants: pending.map((m) => ({
          member_id: m.member_id,
          ...memberKeys(m),
          ...(m.introduction_sealed_secret
            ? {
                introduction: {
                  sealed_secret: m.introduction_sealed_secret,
                  proof: m.introduction_proof ?? null,
                },
              }
            : {}),
        })),
      };
    },

    /**
     * Stores project-key grants made by an admin's client. The first one — the
     * admin's own grant at epoch 1 — initialises the vault (epoch 0 → 1).
     */
    async grant(actor: Actor, projectId: string, grants: readonly MemberGrantInput[]) {
      const access = await projectAccess(kysely, actor.principal, projectId);
      requireMemberAdmin(access, 'grant the project key');
      const granterId = access.userId;
      const dup = firstDuplicate(grants.map((g) => g.recipient_id));
      if (dup >= 0) throw validation(`grants.${dup}.recipient_id`, 'duplicate');

      const at = clock.now();
      const result = await kysely.transaction().execute(async (trx) => {
        // Judged again under the lock: a concurrent demotion or removal has committed by now.
        requireMemberAdmin(
          await lockedProjectAccess(trx, db.dialect, actor.principal, projectId),
          'grant the project key',
        );
        const state = await repo.vaultState(trx, projectId);
        if (!state) throw new AppError('not_found', 'Project not found');
        const initializing = state.vault_epoch === 0;
        const epoch = initializing ? 1 : state.vault_epoch;
        grants.forEach((g, i) => {
          if (g.epoch !== epoch) throw staleEpoch(`grants.${i}.epoch`, state.vault_epoch);
        });
        if (initializing && !grants.some((g) => g.recipient_id === granterId)) {
          throw new AppError(
            'version_conflict',
            'The vault is not initialised: the first grant must be your own, at epoch 1',
            [{ field: 'grants', issue: 'not_initialized', current_epoch: 0 }],
          );
        }
        // Only someone holding the current key can share it; otherwise a second
        // admin could hand out a different key under the same epoch.
        if (!initializing && !(await repo.hasProjectKeyGrant(trx, projectId, epoch, granterId))) {
          throw new AppError(
            'forbidden',
            'You hold no grant for the current epoch, so you cannot share the project key',
          );
        }
        const members = new Map(
          (await repo.vaultMembers(trx, projectId)).map((m) => [m.user_id, m]),
        );
        const granter = members.get(granterId);
        if (!granter) throw new AppError('forbidden', 'Your account has no signing key');
        const notMembers = grants
          .map((g, i) => ({ g, i }))
          .filter(({ g }) => !members.has(g.recipient_id))
          .map(({ i }) => ({ field: `grants.${i}.recipient_id`, issue: 'not_vault_member' }));
        if (notMembers.length) {
          throw new AppError(
            'unprocessable',
            'Grants go only to active admins and developers of the project',
            notMembers,
          );
        }
        const rows = grants.map((g) =>
          grantRow(
            {
              projectId,
              epoch,
              kind: 'project_key',
              recipientType: 'user',
              recipientId: g.recipient_id,
              environmentId: null,
              granterId,
              at: at.toISOString(),
            },
            g,
          ),
        );
        const bad = signatureFailures(
          'grants',
          rows,
          (row) => members.get(row.recipient_id)!.public_key!,
          granter.signing_public_key!,
        );
        if (bad.length) throw invalidSignatures(bad);

        await repo.deleteRecipientGrants(
          trx,
          projectId,
          epoch,
          'user',
          rows.map((r) => r.recipient_id),
        );
        await repo.insertGrants(trx, rows);
        if (initializing) {
          await repo.initializeVault(trx, projectId);
          await audit(trx, { actor, projectId, at }, 'vault.initialized', null, { epoch });
        }
        for (const row of rows) {
          await audit(trx, { actor, projectId, at }, 'vault.granted', ['user', row.recipient_id], {
            epoch,
            kind: 'project_key',
          });
        }
        return { epoch, rows };
      });
      return {
        epoch: result.epoch,
        grants: result.rows.map((r) => ({
          id: r.id,
          recipient_id: r.recipient_id,
          epoch: r.epoch,
        })),
      };
    },

    /** Everything a re-keying client must re-encrypt and re-grant, read consistently. */
    async snapshot(principal: Principal | null, projectId: string) {
      const access = await projectAccess(kysely, principal, projectId);
      requireMemberAdmin(access, 'read the vault snapshot');
      const now = clock.now().toISOString();
      return kysely.transaction().execute(async (trx) => {
        const state = await repo.vaultState(trx, projectId);
        if (!state) throw new AppError('not_found', 'Project not found');
        const environments = await repo.environmentsOf(trx, projectId);
        const versions = await repo.allVersions(trx, projectId);
        const members = await repo.vaultMembers(trx, projectId);
        const held = new Map(
          (await repo.projectKeyGrantsAt(trx, projectId, state.vault_epoch)).map((g) => [
            g.recipient_id,
            g,
          ]),
        );
        const tokens = await repo.liveTokens(trx, projectId, now);
        const introductions = await repo.introductionsOf(trx, projectId);
        return {
          project_id: projectId,
          epoch: state.vault_epoch,
          environments,
          versions,
          // Only members who hold the key now are re-granted: one still awaiting a
          // grant stays pending (an admin must vouch for their keys first).
          members: members
            .filter((m) => held.has(m.user_id))
            .map((m) => {
              const g = held.get(m.user_id)!;
              return {
                ...memberKeys(m),
                grant: {
                  epoch: g.epoch,
                  sealed_key: g.sealed_key,
                  signature: g.signature,
                  granter_id: g.granter_id,
                  granter_signing_public_key: g.granter_signing_public_key,
                  granter_public_key: g.granter_public_key,
                  granter_email: g.granter_email,
                },
              };
            }),
          introductions,
          api_keys: tokens
            .filter((t) => t.type === 'api_key')
            .map((t) => ({
              id: t.id,
              name: t.name,
              role: t.role,
              scopes: t.scopes,
              public_key: t.public_key,
              expires_at: t.expires_at,
              created_by: t.signed_by,
            })),
          ci_tokens: tokens
            .filter((t) => t.type === 'ci_token')
            .map((t) => ({
              id: t.id,
              name: t.name,
              scopes: t.scopes,
              public_key: t.public_key,
              expires_at: t.expires_at!,
              created_by: t.signed_by,
            })),
        };
      });
    },

    /**
     * Commits a re-key atomically: every stored version re-encrypted under the next
     * epoch, every member who held the project key at the old epoch and every live
     * token re-granted (members awaiting a grant stay pending). Any
     * gap between the upload and what is stored is a 409 that says what differs,
     * so the client refetches the snapshot and redoes the work.
     */
    async rekey(actor: Actor, projectId: string, input: RekeyInput) {
      const access = await projectAccess(kysely, actor.principal, projectId);
      requireMemberAdmin(access, 're-key the vault');
      const granterId = access.userId;
      const to = input.from_epoch + 1;

      const dupVersion = firstDuplicate(input.versions.map((v) => v.id));
      if (dupVersion >= 0) throw validation(`versions.${dupVersion}.id`, 'duplicate');
      const dupGrant = firstDuplicate(input.grants.map((g) => g.recipient_id));
      if (dupGrant >= 0) throw validation(`grants.${dupGrant}.recipient_id`, 'duplicate');
      const tokenKey = (g: { recipient_id: string; environment_id: string }) =>
        `${g.recipient_id}/${g.environment_id}`;
      const dupToken = firstDuplicate(input.token_grants.map(tokenKey));
      if (dupToken >= 0) throw validation(`token_grants.${dupToken}`, 'duplicate');

      const wrongEpoch: ErrorDetail[] = [];
      input.versions.forEach((v, i) => {
        if (envelopeEpoch(v.value) !== to && wrongEpoch.length < LISTED_IDS)
          wrongEpoch.push({
            field: `versions.${i}.value`,
            issue: 'wrong_epoch',
            expected_epoch: to,
          });
      });
      for (const [name, list] of [
        ['grants', input.grants],
        ['token_grants', input.token_grants],
      ] as const) {
        list.forEach((g, i) => {
          if (g.epoch !== to && wrongEpoch.length < LISTED_IDS)
            wrongEpoch.push({
              field: `${name}.${i}.epoch`,
              issue: 'wrong_epoch',
              expected_epoch: to,
            });
        });
      }

      const at = clock.now();
      const summary = await kysely.transaction().execute(async (trx) => {
        requireMemberAdmin(
          await lockedProjectAccess(trx, db.dialect, actor.principal, projectId),
          're-key the vault',
        );
        const state = await repo.vaultState(trx, projectId);
        if (!state) throw new AppError('not_found', 'Project not found');
        if (state.vault_epoch === 0) {
          throw new AppError('version_conflict', 'The vault is not initialised yet', [
            { field: 'from_epoch', issue: 'not_initialized', current_epoch: 0 },
          ]);
        }
        if (state.vault_epoch !== input.from_epoch)
          throw staleEpoch('from_epoch', state.vault_epoch);
        if (wrongEpoch.length) {
          throw new AppError(
            'version_conflict',
            `Every new envelope and grant must carry epoch ${to}`,
            wrongEpoch,
          );
        }

        // Members awaiting a grant at the current epoch are not re-granted: they
        // stay pending until an admin vouches for their keys.
        const held = new Set(
          (await repo.projectKeyGrantsAt(trx, projectId, input.from_epoch)).map(
            (g) => g.recipient_id,
          ),
        );
        const members = (await repo.vaultMembers(trx, projectId)).filter((m) =>
          held.has(m.user_id),
        );
        const tokens = await repo.liveTokens(trx, projectId, at.toISOString());
        const stored = new Set(await repo.versionIds(trx, projectId));
        const introductions = await repo.introductionsOf(trx, projectId);
        const details = [
          ...compareSets('versions', stored, new Set(input.versions.map((v) => v.id))),
          ...compareSets(
            'grants',
            new Set(members.map((m) => m.user_id)),
            new Set(input.grants.map((g) => g.recipient_id)),
          ),
          ...compareSets(
            'token_grants',
            new Set(tokens.flatMap((t) => Object.keys(t.scopes).map((e) => `${t.id}/${e}`))),
            new Set(input.token_grants.map(tokenKey)),
          ),
          ...(input.introductions
            ? compareSets(
                'introductions',
                new Set(introductions.map((i) => i.member_id)),
                new Set(input.introductions.map((i) => i.member_id)),
              )
            : []),
        ];
        const resealedAt = (input.introductions ?? []).findIndex(
          (i) => Number(i.sealed_secret.split('.')[1]) !== to,
        );
        if (resealedAt >= 0) {
          details.push({
            field: `introductions.${resealedAt}.sealed_secret`,
            issue: 'wrong_epoch',
            expected_epoch: to,
          });
        }
        if (details.length) {
          throw new AppError(
            'version_conflict',
            'The re-key does not match the vault as stored (versions, members or tokens changed): fetch a new snapshot and retry',
            details,
          );
        }

        const memberById = new Map(members.map((m) => [m.user_id, m]));
        const tokenById = new Map(tokens.map((t) => [t.id, t]));
        const granter = memberById.get(granterId);
        if (!granter) throw new AppError('forbidden', 'Your account has no signing key');
        const where = (recipientId: string, recipientType: GrantRow['recipient_type']) => ({
          projectId,
          epoch: to,
          recipientType,
          recipientId,
          granterId,
          at: at.toISOString(),
        });
        const memberRows = input.grants.map((g) =>
          grantRow(
            { ...where(g.recipient_id, 'user'), kind: 'project_key', environmentId: null },
            g,
          ),
        );
        const tokenRows = input.token_grants.map((g) =>
          grantRow(
            {
              ...where(g.recipient_id, tokenById.get(g.recipient_id)!.type),
              kind: 'environment_key',
              environmentId: g.environment_id,
            },
            g,
          ),
        );
        const bad = [
          ...signatureFailures(
            'grants',
            memberRows,
            (r) => memberById.get(r.recipient_id)!.public_key!,
            granter.signing_public_key!,
          ),
          ...signatureFailures(
            'token_grants',
            tokenRows,
            (r) => tokenById.get(r.recipient_id)!.public_key,
            granter.signing_public_key!,
          ),
        ];
        if (bad.length) throw invalidSignatures(bad);

        await repo.updateVersionValues(trx, projectId, to, input.versions, db.dialect);
        await repo.syncCurrentValues(trx, projectId);
        if ((await repo.secretsNotAtEpoch(trx, projectId, to)) > 0) {
          // A secret whose current version is not among its versions: refuse rather than
          // leave a value under the old key.
          throw new AppError('internal_error', 'A secret has no stored current version');
        }
        if (input.introductions)
          await repo.resealIntroductions(trx, projectId, input.introductions);
        else await repo.clearIntroductionSeals(trx, projectId);
        await repo.deleteAllGrants(trx, projectId);
        await repo.insertGrants(trx, [...memberRows, ...tokenRows]);
        await repo.advanceEpoch(trx, projectId, to);
        await repo.bumpAllRevisions(trx, projectId);
        await audit(trx, { actor, projectId, at }, 'vault.rekeyed', null, {
          from_epoch: input.from_epoch,
          to_epoch: to,
          versions: input.versions.length,
          grants: memberRows.length,
          token_grants: tokenRows.length,
        });
        return {
          epoch: to,
          versions: input.versions.length,
          grants: memberRows.length,
          token_grants: tokenRows.length,
        };
      });
      deps.listingCache.invalidateProject(projectId);
      return summary;
    },
  };
}

export type VaultService = ReturnType<typeof vaultService>;
