import { randomBytes } from 'node:crypto';
import type { Kysely, Updateable } from 'kysely';
import type { SharedDeps } from '../../shared-deps.js';
import type { Database, MemberTable } from '../../db/schema.js';
import { AppError, staleEpoch } from '../../errors.js';
import { newId } from '../../ids.js';
import type { ListParams } from '../../http/pagination.js';
import type { Principal, Role } from '../../http/principal.js';
import { audit, type Actor } from '../audit/audit.js';
import { hashToken, type CredentialForgetting } from '../identity/credentials.js';
import { normalizeEmail } from '../identity/email.js';
import type { IdentityService } from '../identity/identity.service.js';
import {
  hasLapsed,
  expireLapsedInvitations,
  revokeLapsed,
} from './invitations/invitation-expiry.js';
import { invitationMail } from './invitations/invitation-mail.js';
import { enqueueEmail } from '../mail/outbox.js';
import {
  lockedProjectAccess,
  projectAccess,
  requireRole,
  requireSession,
} from '../../access/project-access.js';
import type { ProjectsService } from '../projects/projects.service.js';
import type { TokensService } from '../tokens/tokens.service.js';
import type { VaultService } from '../vault/vault.service.js';
import type { OverridesService } from '../overrides/overrides.service.js';
import {
  countActiveAdmins,
  countMembers,
  deleteMember,
  findMember,
  findMemberByUser,
  findMemberOfUser,
  insertMember,
  listMembers,
  updateMember,
  type MemberFilters,
  type MemberListRow,
  type MemberSort,
  type MemberWithUser,
} from './members.repo.js';

export type { MemberWithUser };

interface UserRef {
  id: string;
  email: string;
  name: string;
}

export const userRef = (row: { user_id: string; email: string; name: string }): UserRef => ({
  id: row.user_id,
  email: row.email,
  name: row.name,
});

type Deps = Pick<SharedDeps, 'db' | 'clock' | 'config'> & {
  /** Called after a commit that wrote an outbox message. */
  wakeOutbox: () => void;
  credentials: CredentialForgetting;
  identity: Pick<IdentityService, 'userById' | 'userByEmail' | 'ensureInvitedUser'>;
  projects: Pick<ProjectsService, 'findById' | 'markRekeyRecommended'>;
  tokens: Pick<TokensService, 'revokeAccountableTo'>;
  vault: Pick<VaultService, 'stateOf' | 'deleteUserGrants'>;
  overrides: Pick<OverridesService, 'deleteUserOverrides'>;
};

export function membersService(ctx: Deps) {
  const {
    db: { kysely: db, dialect },
    clock,
    config,
    wakeOutbox,
    overrides,
    identity,
    projects,
    tokens,
    vault,
  } = ctx;
  /** A project must keep an active admin: refuses to demote or remove the last one. */
  async function requireAnotherAdmin(trx: Kysely<Database>, projectId: string, what: string) {
    if ((await countActiveAdmins(trx, projectId)) <= 1) {
      throw new AppError(
        'last_admin',
        `Cannot ${what} the last admin of the project; make another member admin first`,
      );
    }
  }

  /** The member addressed by the path, in this project only, with a lapsed invitation shown as revoked. */
  async function memberInProject(trx: Kysely<Database>, projectId: string, memberId: string) {
    const member = await findMember(trx, projectId, memberId);
    if (!member) throw new AppError('not_found', 'Member not found');
    const now = clock.now();
    if (hasLapsed(member, now)) {
      await revokeLapsed(trx, [member], now);
      member.status = 'revoked';
    }
    return member;
  }

  return {
    // For the invitations domain, on its transaction; no access check: the caller made it.
    /** A membership of the user (an invitation addressed to them, or their own membership). */
    memberOfUser: (handle: Kysely<Database>, memberId: string, userId: string) =>
      findMemberOfUser(handle, memberId, userId),
    updateMember: (handle: Kysely<Database>, memberId: string, patch: Updateable<MemberTable>) =>
      updateMember(handle, memberId, patch),

    /**
     * Invites an e-mail address. An address without an account gets an
     * `invited` user (a real `usr_` id, kept at sign-up). Every invitation
     * gets a one-time token, sent only in the e-mail (through the outbox,
     * written in the same transaction): it proves the address at sign-up, or
     * at acceptance for an account whose address is not yet proven.
     */
    async invite(actor: Actor, projectId: string, input: { email: string; role: Role }) {
      const email = normalizeEmail(input.email);
      const now = clock.now();
      const at = now.toISOString();
      const expiresAt = new Date(now.getTime() + config.invitationTtlDays * 86_400_000);
      const result = await db.transaction().execute(async (trx) => {
        const access = await lockedProjectAccess(trx, dialect, actor.principal, projectId);
        requireRole(access, 'admin', 'invite members');
        const user =
          (await identity.userByEmail(trx, email)) ??
          (await identity.ensureInvitedUser(trx, {
            id: newId('user'),
            email,
            name: email.slice(0, email.lastIndexOf('@')),
            at,
          }));

        const existing = await findMemberByUser(trx, projectId, user.id);
        if (existing) {
          if (hasLapsed(existing, now)) await revokeLapsed(trx, [existing], now);
          else if (existing.status !== 'revoked') {
            throw new AppError(
              'already_member',
              existing.status === 'pending'
                ? `${email} is already invited (pending)`
                : `${email} is already a member of this project (${existing.status})`,
              [{ field: 'email', issue: 'already_member' }],
            );
          }
          // A declined or expired invitation gives way to a fresh one.
          await deleteMember(trx, existing.id);
        }

        const newAccount = user.status === 'invited';
        const token = randomBytes(32).toString('base64url');
        const member = {
          id: newId('member'),
          project_id: projectId,
          user_id: user.id,
          role: input.role,
          status: 'pending' as const,
          invited_at: at,
          invited_by: access.userId,
          invitation_token_hash: hashToken(token),
          invitation_expires_at: expiresAt.toISOString(),
          joined_at: null,
          created_at: at,
          updated_at: at,
        };
        await insertMember(trx, member);

        const project = await projects.findById(trx, projectId);
        const inviter = await identity.userById(trx, access.userId);
        await enqueueEmail(
          trx,
          invitationMail({
            to: user.email,
            memberId: member.id,
            projectName: project?.name ?? projectId,
            inviterName: inviter?.name ?? 'A Coffer admin',
            role: input.role,
            expiresAt: member.invitation_expires_at,
            publicUrl: config.publicUrl,
            token,
            newAccount,
          }),
          now,
        );
        await audit(trx, { actor, projectId, at: now }, 'member.invited', ['member', member.id], {
          user_id: user.id,
          email: user.email,
          new_account: newAccount,
          before: existing ? { role: existing.role, status: 'revoked' } : null,
          after: { role: member.role, status: member.status },
        });
        return { member, user };
      });
      wakeOutbox();
      const { member, user } = result;
      return {
        id: member.id,
        project_id: member.project_id,
        user: { id: user.id, email: user.email, name: user.name },
        role: member.role,
        status: member.status,
        invited_at: member.invited_at,
        invited_by: member.invited_by,
      };
    },

    /**
     * Stores the introduction secret of a pending invitation, sealed by the
     * inviting admin's client for the project's admins (under the current
     * epoch's project key), and the inviter's proof over their own keys. The
     * server cannot open either; it keeps them for the admins' clients, which
     * check the invitee's proof before granting. Set once, while pending and
     * before the invitee has answered.
     */
    async setIntroduction(
      actor: Actor,
      projectId: string,
      memberId: string,
      input: { sealed_secret: string; inviter_proof: string },
    ): Promise<void> {
      const principal = requireSession(actor.principal, 'introduce members');
      await db.transaction().execute(async (trx) => {
        const access = await lockedProjectAccess(trx, dialect, principal, projectId);
        requireRole(access, 'admin', 'introduce members');
        const member = await memberInProject(trx, projectId, memberId);
        if (member.status !== 'pending') {
          throw new AppError('version_conflict', 'The invitation is no longer pending', [
            { field: 'member_id', issue: 'not_pending' },
          ]);
        }
        if (member.introduction_sealed_secret) {
          throw new AppError('version_conflict', 'This invitation already has an introduction', [
            { field: 'sealed_secret', issue: 'already_set' },
          ]);
        }
        const state = await vault.stateOf(trx, projectId);
        const epoch = Number(/^v1\.(\d+)\./.exec(input.sealed_secret)?.[1]);
        if (!state || state.vault_epoch === 0 || epoch !== state.vault_epoch) {
          throw staleEpoch('sealed_secret', state?.vault_epoch ?? 0);
        }
        const now = clock.now();
        await updateMember(trx, member.id, {
          introduction_sealed_secret: input.sealed_secret,
          introduction_inviter_proof: input.inviter_proof,
          updated_at: now.toISOString(),
        });
        await audit(
          trx,
          { actor, projectId, at: now },
          'member.introduced',
          ['member', member.id],
          { user_id: member.user_id, inviter_id: principal.userId, epoch },
        );
      });
    },

    /** Any member or API key of the project; CI tokens are for pipelines and see no members. */
    async list(
      principal: Principal | null,
      projectId: string,
      query: ListParams<MemberSort> & MemberFilters,
    ) {
      const access = await projectAccess(db, principal, projectId);
      if (access.principal.kind === 'ci_token') {
        throw new AppError('forbidden', 'CI tokens cannot list project members');
      }
      await expireLapsedInvitations(db, { projectId }, clock.now());
      const filters: MemberFilters = { role: query.role, status: query.status };
      const rows = await listMembers(db, dialect, projectId, filters, query);
      const total = await countMembers(db, projectId, filters);
      return { items: rows.map(toListItem), total };
    },

    async changeRole(actor: Actor, projectId: string, memberId: string, role: Role) {
      return db.transaction().execute(async (trx) => {
        const access = await lockedProjectAccess(trx, dialect, actor.principal, projectId);
        requireRole(access, 'admin', 'change member roles');
        const member = await memberInProject(trx, projectId, memberId);
        if (member.role === role) return toUpdated(member);
        if (member.role === 'admin' && member.status === 'active') {
          await requireAnotherAdmin(trx, projectId, 'demote');
        }
        const now = clock.now();
        const updated = { ...member, role, updated_at: now.toISOString() };
        await updateMember(trx, member.id, { role, updated_at: updated.updated_at });
        // A viewer holds no key to the vault.
        if (role === 'viewer') await vault.deleteUserGrants(trx, projectId, member.user_id);
        await audit(
          trx,
          { actor, projectId, at: now },
          'member.role_changed',
          ['member', member.id],
          {
            user_id: member.user_id,
            status: member.status,
            before: { role: member.role },
            after: { role },
          },
        );
        return toUpdated(updated);
      });
    },

    /**
     * Removes a member whatever its status (withdrawing a pending invitation).
     * One who could read secrets leaves the vault `rekey_recommended`; their
     * grants go, and the API keys and CI tokens they created are revoked with
     * their grants.
     */
    async remove(actor: Actor, projectId: string, memberId: string): Promise<void> {
      const revokedTokens = await db.transaction().execute(async (trx) => {
        const access = await lockedProjectAccess(trx, dialect, actor.principal, projectId);
        requireRole(access, 'admin', 'remove members');
        const member = await memberInProject(trx, projectId, memberId);
        if (member.role === 'admin' && member.status === 'active') {
          await requireAnotherAdmin(trx, projectId, 'remove');
        }
        const now = clock.now();
        await deleteMember(trx, member.id);
        await vault.deleteUserGrants(trx, projectId, member.user_id);
        await overrides.deleteUserOverrides(trx, projectId, member.user_id);
        const revoked = await tokens.revokeAccountableTo(
          trx,
          projectId,
          member.user_id,
          now.toISOString(),
        );
        const hadSecretAccess = member.status !== 'revoked' && member.role !== 'viewer';
        if (hadSecretAccess) await projects.markRekeyRecommended(trx, projectId);
        await audit(trx, { actor, projectId, at: now }, 'member.removed', ['member', member.id], {
          user_id: member.user_id,
          email: member.email,
          before: { role: member.role, status: member.status },
          after: null,
          rekey_recommended: hadSecretAccess,
          revoked_credentials: revoked,
        });
        return revoked;
      });
      for (const id of revokedTokens) ctx.credentials.forgetCredential(id);
    },
  };
}

export type MembersService = ReturnType<typeof membersService>;

function toListItem(row: MemberListRow) {
  const base = { id: row.id, user: userRef(row), role: row.role, status: row.status };
  return row.status === 'active'
    ? { ...base, joined_at: row.joined_at ?? row.created_at }
    : { ...base, invited_at: row.invited_at ?? row.created_at };
}

function toUpdated(row: MemberWithUser) {
  return {
    id: row.id,
    project_id: row.project_id,
    user: userRef(row),
    role: row.role,
    status: row.status,
    updated_at: row.updated_at,
  };
}
