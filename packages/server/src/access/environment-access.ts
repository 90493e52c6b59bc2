import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { AppError, notFound } from '../errors.js';
import type { Principal, Role, Scope } from '../http/principal.js';
import {
  environmentAccess,
  effectiveRole,
  projectAccess,
  type ProjectAccess,
} from './project-access.js';
import { findEnvironmentWithMembership, type EnvironmentWithMembership } from './access.repo.js';
import type { EnvironmentRow } from '../domains/environments/environments.repo.js';

/** An environment together with what the caller may do in it. */
export interface EnvironmentContext {
  readonly environment: EnvironmentRow;
  readonly access: ProjectAccess;
  /** `read`/`read_write` for callers who may see values; `null` for viewers and out-of-scope tokens. */
  readonly scope: Scope | null;
}

/**
 * Resolves `{env}` (id or slug) and the caller's access with one query on the
 * hot path. The role rules are those of `projectAccess` (non-members get 404,
 * API keys are capped by their creator's role, CI tokens act as developers),
 * applied to the membership row fetched together with the environment.
 */
export async function resolveEnvironment(
  db: Kysely<Database>,
  principal: Principal | null,
  projectId: string,
  ref: string,
): Promise<EnvironmentContext> {
  const { context } = await resolveEnvironmentWith(db, principal, projectId, (userId) =>
    findEnvironmentWithMembership(db, projectId, ref, userId),
  );
  return context;
}

/**
 * `resolveEnvironment` for a query that fetches more in the same round trip
 * (e.g. the secret being read): `find` returns the environment row with
 * `member_role` and anything else, which comes back as `row`.
 */
export async function resolveEnvironmentWith<R extends EnvironmentWithMembership>(
  db: Kysely<Database>,
  principal: Principal | null,
  projectId: string,
  find: (userId: string) => Promise<R | undefined>,
): Promise<{ context: EnvironmentContext; row: R }> {
  const caller = callerIn(principal, projectId);
  const row = await find(caller.userId);
  if (!row) {
    // Tell a non-member "no such project" before telling a member "no such environment".
    await projectAccess(db, caller, projectId);
    throw notFound('Environment');
  }
  if (row.member_role === null) throw notFound('Project');
  return { context: contextOf(caller, projectId, row, row.member_role), row };
}

/** The caller's context in an environment, from the row fetched with its membership. */
export function contextOf(
  caller: Principal,
  projectId: string,
  row: EnvironmentWithMembership,
  memberRole: Role,
): EnvironmentContext {
  const environment: EnvironmentRow = {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    slug: row.slug,
    revision: row.revision,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
  const access = accessOf(caller, projectId, memberRole);
  return { environment, access, scope: environmentAccess(access, environment.id) };
}

/**
 * The checks that need no query: a caller is authenticated, and a token only
 * ever reaches its own project (404 otherwise). Writers run it before locking.
 */
export function callerIn(principal: Principal | null, projectId: string): Principal {
  if (!principal) throw new AppError('unauthenticated', 'Authentication required');
  if (principal.kind !== 'session' && principal.projectId !== projectId) {
    throw notFound('Project');
  }
  return principal;
}

/** The same access `projectAccess` would resolve, from a membership row fetched with other data. */
function accessOf(principal: Principal, projectId: string, memberRole: Role): ProjectAccess {
  return {
    projectId,
    role: effectiveRole(principal, memberRole),
    userId: principal.userId,
    principal,
    scopes: principal.kind === 'session' ? null : principal.scopes,
  };
}

/** Reading values needs `read` or `read_write` on the environment (admins and developers; tokens by scope). */
export function requireReader(context: EnvironmentContext): void {
  if (context.scope === null) {
    throw new AppError(
      'forbidden',
      context.access.role === 'viewer'
        ? 'Viewers see secret names, never values'
        : 'This credential has no access to the values of this environment',
    );
  }
}

/** Writing secrets needs `read_write` on the environment (admins and developers; tokens with that scope). */
export function requireWriter(context: EnvironmentContext): void {
  if (context.scope !== 'read_write') {
    throw new AppError(
      'forbidden',
      context.access.role === 'viewer'
        ? 'Viewers cannot change secrets'
        : 'This credential cannot write secrets in this environment; it needs read_write access',
    );
  }
}
