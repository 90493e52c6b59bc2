import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { AppError } from '../../errors.js';
import type { Principal, Role, Scope, Scopes } from '../../http/principal.js';

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
  const notFound = new AppError('not_found', 'Project not found');
  if (principal.kind !== 'session' && principal.projectId !== projectId) throw notFound;

  const member = await db
    .selectFrom('members')
    .select(['role'])
    .where('project_id', '=', projectId)
    .where('user_id', '=', principal.userId)
    .where('status', '=', 'active')
    .executeTakeFirst();
  if (!member) throw notFound;

  switch (principal.kind) {
    case 'session':
      return { projectId, role: member.role, userId: principal.userId, principal, scopes: null };
    case 'api_key':
      return {
        projectId,
        role: minRole(principal.role, member.role),
        userId: principal.userId,
        principal,
        scopes: principal.scopes,
      };
    case 'ci_token':
      return {
        projectId,
        role: minRole('developer', member.role),
        userId: principal.userId,
        principal,
        scopes: principal.scopes,
      };
  }
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
