import type { Grant } from '../crypto/index.js';
import { apiPath, type CofferClient } from './http.js';

// Typed calls of `/v1/projects/{p}/vault…`. The crypto around them (opening
// grants, sealing new ones, re-encrypting for a re-key) is in `../vault/`.

export type RecipientType = 'user' | 'api_key' | 'ci_token';

/** A stored grant as its recipient reads it, with the granter's Ed25519 key for `openGrant`. */
export interface StoredGrant extends Grant {
  id: string;
  recipient_type: RecipientType;
  granter_signing_public_key: string | null;
  /** A user granter's X25519 key and e-mail (null for an API key), to compare with pins. */
  granter_public_key?: string | null;
  granter_email?: string | null;
  created_at: string;
}

/** A member (or, in a snapshot, any member with vault access) and the keys to grant to. */
export interface VaultMember {
  user_id: string;
  email: string;
  name: string;
  role: 'admin' | 'developer';
  public_key: string;
  signing_public_key: string;
  /** Compare out of band before granting. */
  fingerprint: string;
}

export interface PendingGrant extends VaultMember {
  member_id: string;
  /** When the inviter stored an introduction: the secret sealed for admins and the invitee's proof (null if they accepted without the introduction link). */
  introduction?: { sealed_secret: string; proof: string | null };
}

export interface VaultStatus {
  project_id: string;
  /** 0 until the vault is initialised. */
  epoch: number;
  initialized: boolean;
  rekey_recommended: boolean;
  recipient: { type: RecipientType; id: string };
  /** A member's project-key grant, or a token's environment-key grants; empty for viewers. */
  grants: StoredGrant[];
  /** Admins only. */
  pending_grants?: PendingGrant[];
}

/** A grant as uploaded: sealed and signed by the caller's client. */
export interface GrantUpload {
  recipient_id: string;
  epoch: number;
  sealed_key: string;
  signature: string;
}

export interface EnvironmentGrantUpload {
  environment_id: string;
  epoch: number;
  sealed_key: string;
  signature: string;
}

/** A member of a snapshot, with the project-key grant they hold at the snapshot's epoch. */
export interface SnapshotMember extends VaultMember {
  /** Their grant at the current epoch and its granter's keys (absent from servers before this field). */
  grant?: {
    epoch: number;
    sealed_key: string;
    signature: string;
    granter_id: string;
    granter_signing_public_key: string | null;
    granter_public_key: string | null;
    granter_email: string | null;
  };
}

export interface VaultSnapshot {
  project_id: string;
  epoch: number;
  environments: { id: string; name: string; slug: string }[];
  versions: {
    id: string;
    secret_id: string;
    environment_id: string;
    name: string;
    version: number;
    epoch: number;
    value: string;
  }[];
  /** Members who hold the project key at the snapshot's epoch (those awaiting a grant are left out). */
  members: SnapshotMember[];
  /** Introduction secrets sealed under the current epoch: a re-key re-seals them. */
  introductions?: { member_id: string; user_id: string; sealed_secret: string }[];
  api_keys: {
    id: string;
    name: string;
    role: string;
    scopes: Record<string, 'read' | 'read_write'>;
    public_key: string;
    expires_at: string | null;
    /** Whose key signed its grants at creation (absent from servers before this field). */
    created_by?: string;
  }[];
  ci_tokens: {
    id: string;
    name: string;
    scopes: Record<string, 'read' | 'read_write'>;
    public_key: string;
    expires_at: string;
    /** Whose key signed its grants at creation: a user, or the API key that minted it. */
    created_by?: string;
  }[];
}

export interface RekeyUpload {
  from_epoch: number;
  versions: { id: string; value: string }[];
  grants: GrantUpload[];
  token_grants: (GrantUpload & { environment_id: string })[];
  introductions?: { member_id: string; sealed_secret: string }[];
}

export interface RekeyResult {
  epoch: number;
  versions: number;
  grants: number;
  token_grants: number;
}

export const getVault = (client: CofferClient, projectId: string) =>
  client.request<VaultStatus>('GET', apiPath`/v1/projects/${projectId}/vault`);

export const postVaultGrants = (client: CofferClient, projectId: string, grants: GrantUpload[]) =>
  client.request<{ epoch: number; grants: { id: string; recipient_id: string; epoch: number }[] }>(
    'POST',
    apiPath`/v1/projects/${projectId}/vault/grants`,
    { body: { grants } },
  );

export const getVaultSnapshot = (client: CofferClient, projectId: string) =>
  client.request<VaultSnapshot>('GET', apiPath`/v1/projects/${projectId}/vault/snapshot`);

export const postRekey = (client: CofferClient, projectId: string, upload: RekeyUpload) =>
  client.request<RekeyResult>('POST', apiPath`/v1/projects/${projectId}/vault/re-key`, {
    body: upload,
  });
