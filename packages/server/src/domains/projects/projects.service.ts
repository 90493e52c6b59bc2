import type { Kysely } from 'kysely';
import type { SharedDeps } from '../../shared-deps.js';
import type { Database } from '../../db/schema.js';
import { AppError } from '../../errors.js';
import { newId } from '../../ids.js';
import type { ListParams } from '../../http/pagination.js';
import type { Principal, Role } from '../../http/principal.js';
import { audit, type Actor } from '../audit/audit.js';
import {
  effectiveRole,
  lockedProjectAccess,
  projectAccess,
  requireRole,
  requireSession,
} from '../../access/project-access.js';
import {
  countVisibleProjects,
  deleteProject,
  findProject,
  insertEnvironments,
  insertFirstAdmin,
  insertProject,
  listVisibleProjects,
  markRekeyRecommended,
  updateProject,
  type ProjectRow,
  type Visibility,
} from './projects.repo.js';
import type { PROJECT_SORTS } from './projects.schemas.js';

/** Every new project starts with these environments (name = slug). */
const DEFAULT_ENVIRONMENTS = ['development', 'staging', 'production'] as const;

interface Project {
  id: string;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
  role: Role;
}

const toProject = (row: ProjectRow, role: Role): Project => ({
  id: row.id,
  name: row.name,
  description: row.description,
  created_at: row.created_at,
  updated_at: row.updated_at,
  role,
});

type Deps = Pick<SharedDeps, 'db' | 'clock'>;

export function projectsService({ db: { kysely: db, dialect }, clock }: Deps) {
  return {
    // For other domains, on their handle (their transaction or the database);
    // no access check: the caller made it.
    findById: (handle: Kysely<Database>, projectId: string) => findProject(handle, projectId),
    /** Flags the project for a re-key (someone who held its keys lost access). */
    markRekeyRecommended: (handle: Kysely<Database>, projectId: string) =>
      markRekeyRecommended(handle, projectId),

    /** The caller's projects: where they are an active member; a token sees only its own project. */
    async list(principal: Principal | null, params: ListParams<(typeof PROJECT_SORTS)[number]>) {
      if (!principal) throw new AppError('unauthenticated', 'Authentication required');
      const visibility: Visibility =
        principal.kind === 'session'
          ? { userId: principal.userId }
          : { userId: principal.userId, onlyProjectId: principal.projectId };
      const rows = await listVisibleProjects(db, dialect, visibility, params);
      const total = await countVisibleProjects(db, visibility);
      return {
        items: rows.map((row) => toProject(row, effectiveRole(principal, row.role))),
        total,
      };
    },

    /** The creator becomes the first admin; the default environments come with it. */
    async create(actor: Actor, input: { name: string; description?: string }): Promise<Project> {
      const principal = requireSession(actor.principal, 'create projects');
      const now = clock.now();
      const at = now.toISOString();
      const project = {
        id: newId('project'),
        name: input.name.trim(),
        description: input.description ?? '',
        created_at: at,
        updated_at: at,
      };
      await db.transaction().execute(async (trx) => {
        await insertProject(trx, {
          ...project,
          created_by: principal.userId,
          vault_epoch: 0,
          rekey_recommended: 0,
        });
        await insertFirstAdmin(trx, {
          id: newId('member'),
          project_id: project.id,
          user_id: principal.userId,
          role: 'admin',
          status: 'active',
          joined_at: at,
          created_at: at,
          updated_at: at,
        });
        await insertEnvironments(
          trx,
          DEFAULT_ENVIRONMENTS.map((name) => ({
            id: newId('environment'),
            project_id: project.id,
            name,
            slug: name,
            revision: 1,
            created_at: at,
            updated_at: at,
          })),
        );
        await audit(
          trx,
          { actor, projectId: project.id, at: now },
          'project.created',
          ['project', project.id],
          { name: project.name, environments: [...DEFAULT_ENVIRONMENTS] },
        );
      });
      return toProject(project, 'admin');
    },

    async get(principal: Principal | null, projectId: string): Promise<Project> {
      const access = await projectAccess(db, principal, projectId);
      const row = await findProject(db, projectId);
      if (!row) throw new AppError('not_found', 'Project not found');
      return toProject(row, access.role);
    },

    async update(
      actor: Actor,
      projectId: string,
      patch: { name?: string; description?: string },
    ): Promise<Project> {
      return db.transaction().execute(async (trx) => {
        const access = await lockedProjectAccess(trx, dialect, actor.principal, projectId);
        requireRole(access, 'admin', 'change the project');
        const before = await findProject(trx, projectId);
        if (!before) throw new AppError('not_found', 'Project not found');
        const changes = {
          ...(patch.name !== undefined ? { name: patch.name.trim() } : {}),
          ...(patch.description !== undefined ? { description: patch.description } : {}),
        };
        const now = clock.now();
        const at = now.toISOString();
        await updateProject(trx, projectId, { ...changes, updated_at: at });
        await audit(trx, { actor, projectId, at: now }, 'project.updated', ['project', projectId], {
          before: Object.fromEntries(
            Object.keys(changes).map((k) => [k, before[k as keyof typeof changes]]),
          ),
          after: changes,
        });
        return toProject({ ...before, ...changes, updated_at: at }, access.role);
      });
    },

    /**
     * Deletes the project and everything in it. Irreversible, so it takes a
     * signed-in admin: an API key cannot delete the project it belongs to.
     */
    async remove(actor: Actor, projectId: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const access = await lockedProjectAccess(trx, dialect, actor.principal, projectId);
        requireRole(access, 'admin', 'delete the project');
        requireSession(actor.principal, 'delete a project');
        const project = await findProject(trx, projectId);
        await audit(
          trx,
          { actor, projectId, at: clock.now() },
          'project.deleted',
          ['project', projectId],
          { name: project?.name },
        );
        await deleteProject(trx, projectId);
      });
    },
  };
}

export type ProjectsService = ReturnType<typeof projectsService>;
