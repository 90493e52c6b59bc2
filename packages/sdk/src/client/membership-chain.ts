import type { MembershipStatement } from '../crypto/index.js';
import { apiPath, type CofferClient } from './http.js';

// Typed calls of `/v1/projects/{p}/membership-chain`. Verifying and signing
// statements is in `../vault/membership.ts`.

/** Every statement of the project's chain from the root; empty for a project without one. */
export const getMembershipChain = (client: CofferClient, projectId: string) =>
  client.request<{ statements: MembershipStatement[] }>(
    'GET',
    apiPath`/v1/projects/${projectId}/membership-chain`,
  );

/** Admins. `409 version_conflict` (`not_head`) when the chain grew meanwhile. */
export const appendMembershipStatements = (
  client: CofferClient,
  projectId: string,
  statements: MembershipStatement[],
) =>
  client.request<{ length: number; head: string; fingerprint: string }>(
    'POST',
    apiPath`/v1/projects/${projectId}/membership-chain`,
    { body: { statements } },
  );
