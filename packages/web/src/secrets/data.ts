import { allPages, listSecretEnvelopes, type Environment, type Secret } from '@coffer/sdk';
import { useQueries, type QueryClient } from '@tanstack/react-query';
import { client } from '../lib/client';
import { decryptEnvelope } from './crypto';
import { plaintext } from './plaintext';
import { secretsKey, secretsListingKey } from '../lib/queries';

/** A secret as the grid holds it: metadata only; its value (if readable) is in `plaintext`. */
export type SecretMeta = Omit<Secret, 'value'> & { readable: boolean };

/**
 * Every secret of an environment. Values the caller may read are decrypted
 * here, into the plaintext store; the query cache keeps metadata only.
 */
export async function loadSecrets(
  projectId: string,
  environmentId: string,
  decrypt: boolean,
): Promise<Map<string, SecretMeta>> {
  const out = new Map<string, SecretMeta>();
  const secrets = await allPages((page) =>
    listSecretEnvelopes(client, projectId, environmentId, {
      page,
      per_page: 100,
      sort: 'name',
      order: 'asc',
    }),
  );
  for (const { value, ...meta } of secrets) {
    const readable = decrypt && value !== undefined;
    if (readable && plaintext.get(environmentId, meta.name, meta.version) === undefined) {
      plaintext.set(
        environmentId,
        meta.name,
        meta.version,
        await decryptEnvelope(projectId, environmentId, meta.name, value),
      );
    }
    out.set(meta.name, { ...meta, readable });
  }
  return out;
}

export function useSecretsOf(
  projectId: string,
  environments: Environment[],
  decrypt: boolean,
  enabled: boolean,
) {
  return useQueries({
    queries: environments.map((environment) => ({
      enabled,
      queryKey: secretsListingKey(projectId, environment.id, decrypt),
      queryFn: () => loadSecrets(projectId, environment.id, decrypt),
    })),
  });
}

/** The environment's secrets as the server has them now (after a conflict), refreshing the grid too. */
export async function fetchCurrent(
  queryClient: QueryClient,
  projectId: string,
  environmentId: string,
  decrypt: boolean,
): Promise<Map<string, SecretMeta>> {
  await queryClient.invalidateQueries({ queryKey: secretsKey(projectId, environmentId) });
  return queryClient.fetchQuery({
    queryKey: secretsListingKey(projectId, environmentId, decrypt),
    queryFn: () => loadSecrets(projectId, environmentId, decrypt),
  });
}
