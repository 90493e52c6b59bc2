import { allPages, apiPath, type CofferClient, type Page } from './http.js';

/** An environment of a project (development, staging, …). */
export interface Environment {
  id: string;
  project_id: string;
  name: string;
  /** Lower-case letters, digits and hyphens; unique in the project; usable wherever an id is. */
  slug: string;
  secret_count: number;
  created_at: string;
  updated_at: string;
}

export interface EnvironmentListQuery {
  page?: number;
  per_page?: number;
  sort?: 'created_at' | 'updated_at' | 'name' | 'slug';
  order?: 'asc' | 'desc';
}

const base = (projectId: string) => apiPath`/v1/projects/${projectId}/environments`;
const one = (projectId: string, env: string) =>
  apiPath`/v1/projects/${projectId}/environments/${env}`;

export const listEnvironments = (
  client: CofferClient,
  projectId: string,
  query: EnvironmentListQuery = {},
): Promise<Page<Environment>> =>
  client.requestPage<Environment>('GET', base(projectId), { query: { ...query } });

/** Every environment of the project, across pages. */
export async function allEnvironments(
  client: CofferClient,
  projectId: string,
): Promise<Environment[]> {
  return allPages((page) =>
    listEnvironments(client, projectId, { page, per_page: 100, sort: 'name', order: 'asc' }),
  );
}

/** `env` is an environment id (`env_…`) or its slug. */
export const getEnvironment = (client: CofferClient, projectId: string, env: string) =>
  client.request<Environment>('GET', one(projectId, env));

/** Admins and developers. `slug` defaults to the name in lower case with hyphens. */
export const createEnvironment = (
  client: CofferClient,
  projectId: string,
  input: { name: string; slug?: string },
) => client.request<Environment>('POST', base(projectId), { body: input });

export const updateEnvironment = (
  client: CofferClient,
  projectId: string,
  env: string,
  changes: { name?: string; slug?: string },
) => client.request<Environment>('PATCH', one(projectId, env), { body: changes });

/** Admins only. Deletes the environment with every secret in it and all their versions. */
export const deleteEnvironment = (client: CofferClient, projectId: string, env: string) =>
  client.request<void>('DELETE', one(projectId, env));

/** The id of an environment given by id or slug (ids pass through without a request). */
export async function environmentIdOf(
  client: CofferClient,
  projectId: string,
  env: string,
): Promise<string> {
  if (env.startsWith('env_')) return env;
  return (await getEnvironment(client, projectId, env)).id;
}
