import { getProject, getVault, allEnvironments, type Environment, type Project } from '@coffer/sdk';
import { useQuery } from '@tanstack/react-query';
import { client } from './client';
import { keyring } from './keyring';

// Every query key of the dashboard comes from the factories below (none is
// written inline). A key starts with its kind, then the project: a shorter key
// is the prefix that invalidates or removes every longer one of its kind.

export const projectsKey = () => ['projects'] as const;
export const projectKey = (projectId: string) => ['project', projectId] as const;
export const environmentsKey = (projectId: string) => ['environments', projectId] as const;
export const vaultKey = (projectId: string) => ['vault', projectId] as const;
export const chainKey = (projectId: string) => ['chain', projectId] as const;
/** The chain's statements as the Access page lists them. */
export const chainStatementsKey = (projectId: string) =>
  [...chainKey(projectId), 'statements'] as const;
/** What vouches for a member's keys (an introduction, a pin), for exactly those keys. */
export const vouchKey = (
  projectId: string,
  member: { user_id: string; public_key: string; signing_public_key: string },
) => ['vouch', projectId, member.user_id, member.public_key, member.signing_public_key] as const;

/** Secret listings (metadata; values are in the plaintext store): all of them, dropped at a lock. */
export const allSecretsKey = () => ['secrets'] as const;
export const projectSecretsKey = (projectId: string) => [...allSecretsKey(), projectId] as const;
export const secretsKey = (projectId: string, environmentId: string) =>
  [...projectSecretsKey(projectId), environmentId] as const;
/** One environment's listing as loaded: with its values decrypted, or metadata only. */
export const secretsListingKey = (projectId: string, environmentId: string, decrypt: boolean) =>
  [...secretsKey(projectId, environmentId), decrypt] as const;
/** A secret's versions (History): all of them, dropped at a lock. */
export const allVersionsKey = () => ['versions'] as const;
export const versionsKey = (projectId: string, environmentId: string, name: string) =>
  [...allVersionsKey(), projectId, environmentId, name] as const;

export const membersKey = (projectId: string) => ['members', projectId] as const;
export const membersPageKey = (projectId: string, query: object) =>
  [...membersKey(projectId), query] as const;
export const memberDirectoryKey = (projectId: string) =>
  [...membersKey(projectId), 'directory'] as const;
/** The API keys and CI tokens a member created (revoked with them). */
export const projectOverridesKey = (projectId: string) => ['member-overrides', projectId] as const;
export const memberOverridesKey = (projectId: string, memberId: string) =>
  [...projectOverridesKey(projectId), memberId] as const;
export const memberTokensKey = (projectId: string, userId: string) =>
  ['tokens-of-member', projectId, userId] as const;

export type TokenKind = 'api-key' | 'ci-token';
export const tokensKey = (projectId: string, kind: TokenKind) =>
  ['tokens', projectId, kind] as const;
export const tokensPageKey = (projectId: string, kind: TokenKind, page: number) =>
  [...tokensKey(projectId, kind), page] as const;
/** Every API key's and CI token's name (revoked ones too), for the audit log. */
export const tokenNamesKey = (projectId: string) => ['tokens', projectId, 'names'] as const;

export const webhooksKey = (projectId: string) => ['webhooks', projectId] as const;
export const webhooksPageKey = (projectId: string, page: number) =>
  [...webhooksKey(projectId), page] as const;
export const deliveriesKey = (projectId: string, webhookId: string) =>
  [...webhooksKey(projectId), webhookId, 'deliveries'] as const;

export const auditKey = (projectId: string, query: object) => ['audit', projectId, query] as const;
export const invitationsKey = () => ['invitations'] as const;
export const sessionsKey = () => ['sessions'] as const;

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
