import { allPages, apiPath, type CofferClient, type QueryValue } from './http.js';
import type { EnvironmentGrantUpload } from './vault.js';

// Typed calls of `/v1/projects/{p}/api-keys` and `/ci-tokens`. Creating a usable
// token needs its key part and grants: use `createApiKey` / `createCiToken` from
// `../vault/`, which call `postApiKey` / `postCiToken` below.

export type Scope = 'read' | 'read_write';

export interface ApiKey {
  id: string;
  name: string;
  role: 'admin' | 'developer' | 'viewer';
  /** Environment id → scope. */
  scopes: Record<string, Scope>;
  created_by: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface CiToken {
  id: string;
  name: string;
  scopes: Record<string, Scope>;
  created_by: string;
  created_by_api_key: string | null;
  created_at: string;
  expires_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** What the server returns once at creation: the bearer, never shown again. */
export type WithBearer<T> = T & { bearer: string };

interface TokenUpload {
  /** Chosen by the client: the grants are signed for it before the token exists. */
  id: string;
  /** Environment id or slug → scope. */
  scopes: Record<string, Scope>;
  public_key: string;
  signing_public_key: string;
  grants: EnvironmentGrantUpload[];
}

export interface ApiKeyUpload extends TokenUpload {
  name: string;
  role: ApiKey['role'];
  expires_at?: string;
}

export interface CiTokenUpload extends TokenUpload {
  name?: string;
  ttl_seconds?: number;
}

export interface TokenListQuery {
  page?: number;
  per_page?: number;
  sort?: string;
  order?: 'asc' | 'desc';
  [name: string]: QueryValue;
}

export const listApiKeys = (client: CofferClient, projectId: string, query: TokenListQuery = {}) =>
  client.requestPage<ApiKey>('GET', apiPath`/v1/projects/${projectId}/api-keys`, { query });

export const postApiKey = (client: CofferClient, projectId: string, upload: ApiKeyUpload) =>
  client.request<WithBearer<ApiKey>>('POST', apiPath`/v1/projects/${projectId}/api-keys`, {
    body: upload,
  });

export const revokeApiKey = (client: CofferClient, projectId: string, id: string) =>
  client.request<void>('DELETE', apiPath`/v1/projects/${projectId}/api-keys/${id}`);

export const listCiTokens = (client: CofferClient, projectId: string, query: TokenListQuery = {}) =>
  client.requestPage<CiToken>('GET', apiPath`/v1/projects/${projectId}/ci-tokens`, { query });

/** The API keys and CI tokens a member created that still work: what removing the member revokes. */
export interface TokensOfMember {
  apiKeys: ApiKey[];
  ciTokens: CiToken[];
}

/**
 * The live (neither revoked nor expired) API keys and CI tokens `userId`
 * created in a project: removing that member revokes them all, so whatever
 * runs with them stops. Admins list every token; others only their own.
 */
export async function liveTokensCreatedBy(
  client: CofferClient,
  projectId: string,
  userId: string,
  now: Date = new Date(),
): Promise<TokensOfMember> {
  const live = (token: ApiKey | CiToken) =>
    token.created_by === userId &&
    token.revoked_at === null &&
    (token.expires_at === null || new Date(token.expires_at).getTime() > now.getTime());
  const [apiKeys, ciTokens] = await Promise.all([
    allPages((page) => listApiKeys(client, projectId, { page, per_page: 100 })),
    allPages((page) => listCiTokens(client, projectId, { page, per_page: 100 })),
  ]);
  return { apiKeys: apiKeys.filter(live), ciTokens: ciTokens.filter(live) };
}

export const postCiToken = (client: CofferClient, projectId: string, upload: CiTokenUpload) =>
  client.request<WithBearer<CiToken>>('POST', apiPath`/v1/projects/${projectId}/ci-tokens`, {
    body: upload,
  });

export const revokeCiToken = (client: CofferClient, projectId: string, id: string) =>
  client.request<void>('DELETE', apiPath`/v1/projects/${projectId}/ci-tokens/${id}`);
