import type { Kysely } from 'kysely';
import { lockProject, type DialectName } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { AppError } from '../errors.js';
import type { Principal, Role, Scope, Scopes } from '../http/principal.js';
import { findActiveMembership } from './access.repo.js';

/** What a principal may do in one project, resolved once per request. */
export interface ProjectAccess {
  readonly projectId: string;
  /** The effective role: a member's role, or an API key's role capped by its creator's current role. CI tokens act as `developer` within their scopes. */
  readonly role: Role;
  /** The accountable user: the member, or the creator of the key or token. */
  readonly userId: string;
  readonly principal: Principal;
  /** Per-environment scopes for tokens; `null` for members (all environments). */
  readonly scopes: Scopes | null;
}

const RANK: Record<Role, number> = { viewer: 0, developer: 1, admin: 2 };
export const minRole = (a: Role, b: Role): Role => (RANK[a] <= RANK[b] ? a : b);
export const roleAtLeast = (role: Role, needed: Role) => RANK[role] >= RANK[needed];

/**
 * Resolves the caller's access to a project. A caller who is not an active
 * member (or a token of another project, or whose creator has left) gets
 * `404 not_found`: the project's existence is not revealed.
 */
export async function projectAccess(
  db: Kysely<Database>,
  principal: Principal | null,
  projectId: string,
): Promise<ProjectAccess> {
  if (!principal) throw new AppError('unauthenticated', 'Authentication required');
  // Built only when thrown: an Error captures its stack, which costs on every request.
  const notFound = () => new AppError('not_found', 'Project not found');
  if (principal.kind !== 'session' && principal.projectId !== projectId) throw notFound();

  const member = await findActiveMembership(db, projectId, principal.userId);
  if (!member) throw notFound();

  return {
    projectId,
    role: effectiveRole(principal, member.role),
    userId: principal.userId,
    principal,
    scopes: principal.kind === 'session' ? null : principal.scopes,
  };
}

/** What a principal may do given the role of the member behind it: tokens never exceed their creator. */
export function effectiveRole(principal: Principal, memberRole: Role): Role {
  switch (principal.kind) {
    case 'session':
      return memberRole;
    case 'api_key':
      return minRole(principal.role, memberRole);
    case 'ci_token':
      return minRole('developer', memberRole);
  }
}

/**
 * For read-then-write rules (last admin, vault epoch): inside a transaction,
 * locks the project row first and only then resolves the caller's access, so
 * a caller demoted or removed by a concurrent request is judged on the
 * committed state. A missing project is `404` like a non-member.
 */
export async function lockedProjectAccess(
  trx: Kysely<Database>,
  dialect: DialectName,
  principal: Principal | null,
  projectId: string,
): Promise<ProjectAccess> {
  if (!principal) throw new AppError('unauthenticated', 'Authentication required');
  if (!(await lockProject(trx, dialect, projectId)))
    throw new AppError('not_found', 'Project not found');
  return projectAccess(trx, principal, projectId);
}

/**
 * Operations reserved to a signed-in person (creating projects, answering
 * invitations, the account's own routes). `action` names what a token was
 * refused; without it the refusal says a user session is needed.
 */
export function requireSession(
  principal: Principal | null,
  action?: string,
): Extract<Principal, { kind: 'session' }> {
  if (!principal) throw new AppError('unauthenticated', 'Authentication required');
  if (principal.kind !== 'session') {
    throw new AppError(
      'forbidden',
      action === undefined
        ? 'This operation needs a user session; log in'
        : `API keys and CI tokens cannot ${action}; sign in as a user to do it`,
    );
  }
  return principal;
}

/** Throws `403 forbidden` unless the caller's effective role is at least `needed`. */
export function requireRole(access: ProjectAccess, needed: Role, action = 'do this'): void {
  if (!roleAtLeast(access.role, needed)) {
    throw new AppError(
      'forbidden',
      `Your role (${access.role}) does not allow you to ${action}; it needs ${needed}`,
    );
  }
}

/** Whether the caller may use an environment with `needed` access (members: by role; tokens: by scope too). */
export function environmentAccess(access: ProjectAccess, environmentId: string): Scope | null {
  if (access.role === 'viewer') return null;
  if (access.scopes === null) return 'read_write';
  return access.scopes[environmentId] ?? null;
}
