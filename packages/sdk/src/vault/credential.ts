import { parseCredential, ready } from '../crypto/index.js';
import { tokenKeysFromKeyPart } from '../crypto/token-signing.js';
import { CofferClient, type CofferClientOptions } from '../client/http.js';
import { openVault, type OpenVaultOptions, type VaultSession } from './session.js';

export interface FromCredentialResult {
  client: CofferClient;
  projectId: string;
  vault: VaultSession;
}

/**
 * For pipelines with only `COFFER_TOKEN`: splits `<bearer>.<key part>`, builds a
 * client that sends only the bearer, finds the token's project (a token sees
 * exactly one) and opens its environment-key grants with the key part.
 */
export async function fromCredential(
  baseUrl: string,
  credential: string,
  options: Omit<CofferClientOptions, 'baseUrl' | 'credential'> & OpenVaultOptions = {},
): Promise<FromCredentialResult> {
  await ready();
  const { bearer, keyPart } = parseCredential(credential);
  const { trustGranter, ...clientOptions } = options;
  const client = new CofferClient({ ...clientOptions, baseUrl, credential: { bearer } });
  const projects = await client.requestPage<{ id: string }>('GET', '/v1/projects', {
    query: { per_page: 1 },
  });
  const projectId = projects.data[0]?.id;
  if (!projectId)
    throw new TypeError('This credential sees no project (was it revoked with its project?)');
  const vault = await openVault(client, projectId, tokenKeysFromKeyPart(keyPart), {
    ...(trustGranter ? { trustGranter } : {}),
  });
  return { client, projectId, vault };
}
