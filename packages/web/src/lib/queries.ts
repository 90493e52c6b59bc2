import {
  getProject,
  getVault,
  listEnvironments,
  type Environment,
  type Project,
} from '@coffer/sdk';
import { useQuery } from '@tanstack/react-query';
import { client } from './client';

export const projectKey = (projectId: string) => ['project', projectId] as const;
export const environmentsKey = (projectId: string) => ['environments', projectId] as const;
export const vaultKey = (projectId: string) => ['vault', projectId] as const;

export const useProject = (projectId: string) =>
  useQuery<Project>({
    queryKey: projectKey(projectId),
    queryFn: () => getProject(client, projectId),
  });

/** Every environment, in the order they were created (development, staging, production first). */
export const useEnvironments = (projectId: string) =>
  useQuery<Environment[]>({
    queryKey: environmentsKey(projectId),
    queryFn: async () => {
      const out: Environment[] = [];
      for (let page = 1; ; page++) {
        const res = await listEnvironments(client, projectId, {
          page,
          per_page: 100,
          sort: 'created_at',
          order: 'asc',
        });
        out.push(...res.data);
        if (page >= res.pagination.total_pages) return out;
      }
    },
  });

export const useVaultStatus = (projectId: string) =>
  useQuery({ queryKey: vaultKey(projectId), queryFn: () => getVault(client, projectId) });
