import type { Kysely } from 'kysely';
import type { SharedDeps } from '../../shared-deps.js';
import type { Database } from '../../db/schema.js';
import { toCount } from '../../db/database.js';
import { AppError, notFound, validation } from '../../errors.js';
import type { ListParams } from '../../http/pagination.js';
import {
  lockedProjectAccess,
  projectAccess,
  requireRole,
  type ProjectAccess,
} from '../../access/project-access.js';
import { audit, type Actor } from '../audit/audit.js';
import { newId } from '../../ids.js';
import type { VaultService } from '../vault/vault.service.js';
import * as repo from './environments.repo.js';
import type {
  CreateEnvironmentInput,
  EnvironmentObject,
  UpdateEnvironmentInput,
} from './environments.schemas.js';

const MAX_SLUG_LENGTH = 64;

/** `"Staging (EU)"` → `"staging-eu"`: what a slug defaults to when only a name is given. */
function slugFromName(name: string): string {
  return name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, MAX_SLUG_LENGTH)
    .replace(/-+$/, '');
}

const toEnvironment = (row: repo.EnvironmentWithCount): EnvironmentObject => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  slug: row.slug,
  secret_count: toCount(row.secret_count),
  created_at: row.created_at,
  updated_at: row.updated_at,
});

const slugTaken = (slug: string) =>
  new AppError('already_exists', `An environment with slug "${slug}" already exists`, [
    { field: 'slug', issue: 'taken' },
  ]);

/**
 * Creating and renaming environments: admins and developers; deleting: admins.
 * API keys act within their role and, for an existing environment, need
 * `read_write` on it. CI tokens never manage environments (least privilege:
 * a pipeline reads and writes secrets, it does not reshape the project).
 */
function requireManager(
  access: ProjectAccess,
  needed: 'admin' | 'developer',
  action: string,
  environmentId?: string,
): void {
  if (access.principal.kind === 'ci_token') {
    throw new AppError('forbidden', 'CI tokens cannot create, rename or delete environments');
  }
  requireRole(access, needed, action);
  if (environmentId && access.scopes && access.scopes[environmentId] !== 'read_write') {
    throw new AppError('forbidden', `This API key needs read_write access to ${action}`);
  }
}

type Deps = Pick<SharedDeps, 'db' | 'clock' | 'listingCache'> & {
  vault: Pick<VaultService, 'deleteEnvironmentGrants'>;
};

export function environmentsService(ctx: Deps) {
  const { vault } = ctx;
  const db = ctx.db.kysely;

  async function environmentOf(handle: Kysely<Database>, access: ProjectAccess, ref: string) {
    const row = await repo.findEnvironment(handle, access.projectId, ref);
    if (!row) throw notFound('Environment');
    return row;
  }

  return {
    async list(actor: Actor, projectId: string, params: ListParams<repo.EnvironmentSort>) {
      await projectAccess(db, actor.principal, projectId);
      const { rows, total } = await repo.listEnvironments(db, projectId, params);
      return { items: rows.map(toEnvironment), total };
    },

    async get(actor: Actor, projectId: string, ref: string): Promise<EnvironmentObject> {
      const access = await projectAccess(db, actor.principal, projectId);
      return toEnvironment(await environmentOf(db, access, ref));
    },

    async create(
      actor: Actor,
      projectId: string,
      input: CreateEnvironmentInput,
    ): Promise<EnvironmentObject> {
      const name = input.name.trim();
      if (!name) throw validation('name', 'required', 'name must not be blank');
      const slug = input.slug ?? slugFromName(name);
      if (!slug) {
        throw validation('slug', 'required', 'The name has no letters or digits; give a slug');
      }
      const now = ctx.clock.now().toISOString();
      const row: repo.EnvironmentRow = {
        id: newId('environment'),
        project_id: projectId,
        name,
        slug,
        revision: 1,
        created_at: now,
        updated_at: now,
      };
      await db.transaction().execute(async (trx) => {
        const access = await lockedProjectAccess(trx, ctx.db.dialect, actor.principal, projectId);
        requireManager(access, 'developer', 'create environments');
        if (await repo.slugTaken(trx, projectId, slug)) throw slugTaken(slug);
        await repo.insertEnvironment(trx, row);
        await audit(
          trx,
          { actor, projectId, at: ctx.clock.now() },
          'environment.created',
          ['environment', row.id],
          { name, slug },
        );
      });
      return toEnvironment({ ...row, secret_count: 0 });
    },

    async update(
      actor: Actor,
      projectId: string,
      ref: string,
      input: UpdateEnvironmentInput,
    ): Promise<EnvironmentObject> {
      const name = input.name?.trim();
      if (name === '') throw validation('name', 'required', 'name must not be blank');
      const updated = await db.transaction().execute(async (trx) => {
        const access = await lockedProjectAccess(trx, ctx.db.dialect, actor.principal, projectId);
        const before = await environmentOf(trx, access, ref);
        requireManager(access, 'developer', 'edit this environment', before.id);
        const slug = input.slug;
        if (slug !== undefined && (await repo.slugTaken(trx, projectId, slug, before.id))) {
          throw slugTaken(slug);
        }
        const now = ctx.clock.now();
        const patch = {
          ...(name !== undefined ? { name } : {}),
          ...(slug !== undefined ? { slug } : {}),
          updated_at: now.toISOString(),
        };
        await repo.updateEnvironment(trx, before.id, patch);
        await audit(
          trx,
          { actor, projectId, at: now },
          'environment.updated',
          ['environment', before.id],
          {
            before: { name: before.name, slug: before.slug },
            after: { name: patch.name ?? before.name, slug: patch.slug ?? before.slug },
          },
        );
        return { ...before, ...patch };
      });
      ctx.listingCache.invalidateEnvironments([updated.id]);
      return toEnvironment(updated);
    },

    /** Deletes the environment, its secrets with all their versions, and token grants of its key. */
    async remove(actor: Actor, projectId: string, ref: string): Promise<void> {
      const removed = await db.transaction().execute(async (trx) => {
        const access = await lockedProjectAccess(trx, ctx.db.dialect, actor.principal, projectId);
        const environment = await environmentOf(trx, access, ref);
        requireManager(access, 'admin', 'delete this environment', environment.id);
        await vault.deleteEnvironmentGrants(trx, projectId, environment.id);
        await repo.deleteEnvironment(trx, environment.id);
        await audit(
          trx,
          { actor, projectId, at: ctx.clock.now() },
          'environment.deleted',
          ['environment', environment.id],
          {
            name: environment.name,
            slug: environment.slug,
            secret_count: toCount(environment.secret_count),
          },
        );
        return environment;
      });
      ctx.listingCache.invalidateEnvironments([removed.id]);
    },
  };
}

export type EnvironmentsService = ReturnType<typeof environmentsService>;
