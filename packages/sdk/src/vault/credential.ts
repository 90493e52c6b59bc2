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
 * exactly one) and opens its environment-key grants with the key part. A
 * credential whose key part names its creator's signing key (version 2, made
 * by this SDK's `createApiKey`/`createCiToken`) refuses a grant signed by any
 * other key (`untrusted_granter`).
 */
export async function fromCredential(
  baseUrl: string,
  credential: string,
  options: Omit<CofferClientOptions, 'baseUrl' | 'credential'> & OpenVaultOptions = {},
): Promise<FromCredentialResult> {
  await ready();
  const { bearer, keyPart, creatorSigningPublicKey, chainRoot } = parseCredential(credential);
  const { trustGranter, granterSigningPublicKey, chainRoot: givenRoot, ...clientOptions } = options;
  const client = new CofferClient({ ...clientOptions, baseUrl, credential: { bearer } });
  const projects = await client.requestPage<{ id: string }>('GET', '/v1/projects', {
    query: { per_page: 1 },
  });
  const projectId = projects.data[0]?.id;
  if (!projectId)
    throw new TypeError('This credential sees no project (was it revoked with its project?)');
  const vault = await openVault(client, projectId, tokenKeysFromKeyPart(keyPart), {
    ...(trustGranter ? { trustGranter } : {}),
    // A version 2 credential names its creator's signing key: only grants signed
    // with it are opened (version 1: the granter's key as the server shows it).
    granterSigningPublicKey: creatorSigningPublicKey ?? granterSigningPublicKey ?? null,
    // Version 3 also names the project's chain root: grants of its admins are accepted too.
    chainRoot: chainRoot ?? givenRoot ?? null,
  });
  return { client, projectId, vault };
}
