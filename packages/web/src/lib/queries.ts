import { getProject, getVault, allEnvironments, type Environment, type Project } from '@coffer/sdk';
import { useQuery } from '@tanstack/react-query';
import { client } from './client';
import { keyring } from './keyring';

export const projectKey = (projectId: string) => ['project', projectId] as const;
export const environmentsKey = (projectId: string) => ['environments', projectId] as const;
export const vaultKey = (projectId: string) => ['vault', projectId] as const;
export const chainKey = (projectId: string) => ['chain', projectId] as const;

export const useProject = (projectId: string) =>
  useQuery<Project>({
    queryKey: projectKey(projectId),
    queryFn: () => getProject(client, projectId),
  });

/** The usual promotion order; other environments sit between staging and production. */
const STAGES = ['local', 'development', 'dev', 'test', 'qa', 'staging', 'stage', 'preview'];
const LAST = ['production', 'prod'];
const stageOf = (slug: string) =>
  STAGES.includes(slug) ? STAGES.indexOf(slug) : LAST.includes(slug) ? 100 : STAGES.length;

/** Every environment, in promotion order (development → staging → production), then by creation. */
export const sortEnvironments = (list: Environment[]) =>
  [...list].sort(
    (a, b) =>
      stageOf(a.slug) - stageOf(b.slug) ||
      a.created_at.localeCompare(b.created_at) ||
      a.name.localeCompare(b.name),
  );

export const useEnvironments = (projectId: string) =>
  useQuery<Environment[]>({
    queryKey: environmentsKey(projectId),
    queryFn: async () => sortEnvironments(await allEnvironments(client, projectId)),
  });

/** Fetched again whenever a page needs it: grants and pending members change by others' hands. */
export const useVaultStatus = (projectId: string) =>
  useQuery({
    queryKey: vaultKey(projectId),
    queryFn: () => getVault(client, projectId),
    staleTime: 0,
  });

/**
 * The project's signed membership chain as the caller's vault session verified
 * it (against their pins): its fingerprint, or `unchained` for a project from
 * before chains. A refusal (`chain_invalid`, `chain_changed`…) is the error.
 */
export const useChain = (projectId: string, enabled = true) =>
  useQuery({
    queryKey: chainKey(projectId),
    queryFn: async () => {
      const vault = await keyring.vault(projectId);
      return { chain: vault.chain, unchained: vault.unchained };
    },
    enabled,
  });
