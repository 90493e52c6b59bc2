import type { KeyPinsDocument } from '../crypto/index.js';
import { apiPath, type CofferClient } from './http.js';

// Typed calls of the key-trust routes: introductions of invited members, the
// signed key pins of the signed-in user, and the public keys of a project's
// members. The crypto around them is in `../vault/trust.ts`.

export interface StoredKeyPins {
  /** 0 when nothing is stored yet. */
  version: number;
  document: KeyPinsDocument | null;
  signature: string | null;
}

export interface MemberKeys {
  member_id: string;
  user_id: string;
  email: string;
  name: string;
  role: 'admin' | 'developer';
  public_key: string;
  signing_public_key: string;
  fingerprint: string;
}

export const getKeyPins = (client: CofferClient) =>
  client.request<StoredKeyPins>('GET', '/v1/me/key-pins');

/** `409 version_conflict` unless `document.version` is above the stored one. */
export const putKeyPins = (
  client: CofferClient,
  signed: { document: KeyPinsDocument; signature: string },
) => client.request<StoredKeyPins>('PUT', '/v1/me/key-pins', { body: signed });

/** Admins, right after inviting: the sealed introduction secret and the inviter's proof. */
export const putMemberIntroduction = (
  client: CofferClient,
  projectId: string,
  memberId: string,
  body: { sealed_secret: string; inviter_proof: string },
) =>
  client.request<void>('PUT', apiPath`/v1/projects/${projectId}/members/${memberId}/introduction`, {
    body,
  });

/** The active admins and developers of a project with their public keys (the server's claims). */
export const getMemberKeys = (client: CofferClient, projectId: string) =>
  client.request<MemberKeys[]>('GET', apiPath`/v1/projects/${projectId}/vault/keys`);
