import { randomBytes } from 'node:crypto';
import type { Role } from '../../src/http/principal.js';
import type { TestApp } from './app.js';
import { as, dataOf, type Caller } from './http.js';
import { signUp, type TestUser } from './users.js';

// Projects and their members, made through the real routes.

/** A new project of `admin`'s (with the three default environments, no vault yet). */
export async function createProject(
  t: TestApp,
  admin: Caller,
  name = `Project ${randomBytes(3).toString('hex')}`,
): Promise<{ id: string; name: string }> {
  return dataOf(await as(t, admin, 'POST', '/v1/projects', { name }), 201);
}

export async function invite(
  t: TestApp,
  admin: Caller,
  projectId: string,
  email: string,
  role: Role,
): Promise<{ id: string; user: { id: string; email: string; name: string } }> {
  return dataOf(
    await as(t, admin, 'POST', `/v1/projects/${projectId}/members`, { email, role }),
    201,
  );
}

/** A new user who is invited with `role` and accepts: an active member. */
export async function addMember(
  t: TestApp,
  admin: Caller,
  projectId: string,
  role: Role,
  name?: string,
): Promise<{ user: TestUser; memberId: string }> {
  const user = await signUp(t, name ? { name } : {});
  const { id } = await invite(t, admin, projectId, user.email, role);
  dataOf(await as(t, user, 'POST', `/v1/invitations/${id}/accept`), 200);
  return { user, memberId: id };
}
