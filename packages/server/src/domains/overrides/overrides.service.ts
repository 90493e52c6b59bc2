import type { Kysely } from 'kysely';
import type { SharedDeps } from '../../shared-deps.js';
import type { Database } from '../../db/schema.js';
import { AppError, notFound } from '../../errors.js';
import type { ListParams } from '../../http/pagination.js';
import { projectAccess, requireRole, requireSession } from '../../access/project-access.js';
import { resolveEnvironment, type EnvironmentContext } from '../../access/environment-access.js';
import { newId } from '../../ids.js';
import { audit, type Actor } from '../audit/audit.js';
import * as repo from './overrides.repo.js';
import type { OverrideNameObject, OverrideObject, OverrideSort } from './overrides.schemas.js';

type Deps = Pick<SharedDeps, 'db' | 'clock'>;

const toOverride = (row: OverrideObject): OverrideObject => ({
  id: row.id,
  environment_id: row.environment_id,
  name: row.name,
  value: row.value,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/**
 * Personal overrides: a member's own value for a name in an environment,
 * sealed by their client to a key only they can derive. Only a signed-in
 * member reads and writes their own; tokens never see any. Admins may list
 * who overrides which names, never a value (the server holds none it could
 * show anyway).
 */
export function overridesService({ db: { kysely: db }, clock }: Deps) {
  /** The environment, for a member who may read its values (admins and developers). */
  async function ownEnvironment(actor: Actor, projectId: string, env: string) {
    requireSession(actor.principal, 'have personal overrides');
    const context = await resolveEnvironment(db, actor.principal, projectId, env);
    requireOverrider(context);
    return context;
  }

  return {
    /** The caller's own overrides in a project (or one environment), with their envelopes. */
    async listMine(
      actor: Actor,
      projectId: string,
      params: ListParams<OverrideSort> & { environment?: string },
    ) {
      const { userId } = requireSession(actor.principal, 'have personal overrides');
      const environmentId =
        params.environment === undefined
          ? (await projectAccess(db, actor.principal, projectId), null)
          : (await resolveEnvironment(db, actor.principal, projectId, params.environment))
              .environment.id;
      const { rows, total } = await repo.listForUser(db, projectId, userId, environmentId, params);
      return { items: rows.map(toOverride), total };
    },

    /** Sets the caller's override of `name`; `created` tells a new one from a replaced value. */
    async set(actor: Actor, projectId: string, env: string, name: string, value: string) {
      const context = await ownEnvironment(actor, projectId, env);
      const userId = context.access.userId;
      const environmentId = context.environment.id;
      const now = clock.now();
      const at = now.toISOString();
      return db.transaction().execute(async (trx) => {
        const before = await repo.findOne(trx, environmentId, userId, name);
        await repo.upsert(trx, {
          id: before?.id ?? newId('override'),
          project_id: projectId,
          environment_id: environmentId,
          user_id: userId,
          name,
          value,
          created_at: before?.created_at ?? at,
          updated_at: at,
        });
        const row = await repo.findOne(trx, environmentId, userId, name);
        await auditOverride(trx, actor, context, 'override.set', row!.id, name, now);
        return { override: toOverride(row!), created: before === undefined };
      });
    },

    /** Removes the caller's override of `name` (404 when there is none). */
    async remove(actor: Actor, projectId: string, env: string, name: string): Promise<void> {
      const context = await ownEnvironment(actor, projectId, env);
      const now = clock.now();
      await db.transaction().execute(async (trx) => {
        const row = await repo.findOne(trx, context.environment.id, context.access.userId, name);
        if (!row) throw notFound('Override');
        await repo.deleteOne(trx, row.id);
        await auditOverride(trx, actor, context, 'override.removed', row.id, name, now);
      });
    },

    /** Who overrides what: a member's override names, for admins (and the member). Never values. */
    async namesOfMember(
      actor: Actor,
      projectId: string,
      memberId: string,
      params: ListParams<OverrideSort>,
    ): Promise<{ items: OverrideNameObject[]; total: number }> {
      const access = await projectAccess(db, actor.principal, projectId);
      const member = await repo.findMemberUser(db, projectId, memberId);
      if (!member) throw notFound('Member');
      if (member.user_id !== access.userId || access.principal.kind !== 'session') {
        requireRole(access, 'admin', "list another member's overrides");
      }
      const { rows, total } = await repo.listForUser(db, projectId, member.user_id, null, params);
      return {
        items: rows.map((r) => ({
          environment_id: r.environment_id,
          environment_slug: r.environment_slug,
          name: r.name,
          updated_at: r.updated_at,
        })),
        total,
      };
    },

    /** For the members domain, in its removal's transaction; no access check: the caller made it. */
    deleteUserOverrides: (handle: Kysely<Database>, projectId: string, userId: string) =>
      repo.deleteForUser(handle, projectId, userId),
  };
}

/** Overriding is for members who read the values they override: admins and developers. */
function requireOverrider(context: EnvironmentContext): void {
  if (context.scope === null) {
    throw new AppError(
      'forbidden',
      'Viewers read no values, so they cannot override them; an admin can make you a developer',
    );
  }
}

async function auditOverride(
  trx: Kysely<Database>,
  actor: Actor,
  context: EnvironmentContext,
  action: string,
  id: string,
  name: string,
  at: Date,
): Promise<void> {
  await audit(trx, { actor, projectId: context.access.projectId, at }, action, ['override', id], {
    environment_id: context.environment.id,
    name,
  });
}

export type OverridesService = ReturnType<typeof overridesService>;
