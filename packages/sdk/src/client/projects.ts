import { apiPath, type CofferClient, type Page } from './http.js';

// Typed calls of `/v1/projects`. A new project has no vault yet; to create one
// ready for secrets use `createProjectWithVault` (../vault/project.ts).

export type Role = 'admin' | 'developer' | 'viewer';

/** A project as the API shows it, with the caller's effective role in it. */
export interface Project {
  id: string;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
  role: Role;
}

/** Pagination and order of list calls: `per_page` at most 100, `order` default `desc`. */
export interface ListQuery<S extends string = string> {
  page?: number;
  per_page?: number;
  sort?: S;
  order?: 'asc' | 'desc';
}

export type ProjectSort = 'created_at' | 'name' | 'updated_at';

/** The caller's projects (a token sees only its own). */
export const listProjects = (
  client: CofferClient,
  query: ListQuery<ProjectSort> = {},
): Promise<Page<Project>> =>
  client.requestPage<Project>('GET', '/v1/projects', { query: { ...query } });

export const getProject = (client: CofferClient, projectId: string): Promise<Project> =>
  client.request<Project>('GET', apiPath`/v1/projects/${projectId}`);

/** Signed-in users only; the caller becomes its admin. Environments development, staging, production come with it. */
export const createProject = (
  client: CofferClient,
  input: { name: string; description?: string },
): Promise<Project> => client.request<Project>('POST', '/v1/projects', { body: input });

/** Admins: change name and/or description. */
export const updateProject = (
  client: CofferClient,
  projectId: string,
  changes: { name?: string; description?: string },
): Promise<Project> =>
  client.request<Project>('PATCH', apiPath`/v1/projects/${projectId}`, { body: changes });

/** Signed-in admins: deletes the project and everything in it. */
export const deleteProject = (client: CofferClient, projectId: string): Promise<void> =>
  client.request<void>('DELETE', apiPath`/v1/projects/${projectId}`);
