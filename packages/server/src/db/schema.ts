/**
 * Row types of every table. Timestamps are ISO 8601 UTC strings with millisecond
 * precision (`2026-11-22T07:30:00.000Z`) in both dialects, so they compare and
 * sort the same on SQLite and PostgreSQL. Booleans are 0/1 integers for the same
 * reason. JSON columns hold text.
 */
export interface Database {
  users: UserTable;
  sessions: SessionTable;
  projects: ProjectTable;
  members: MemberTable;
  environments: EnvironmentTable;
  secrets: SecretTable;
  secret_versions: SecretVersionTable;
  vault_grants: VaultGrantTable;
  api_keys: ApiKeyTable;
  ci_tokens: CiTokenTable;
  audit_events: AuditEventTable;
  audit_chain_heads: AuditChainHeadTable;
  outbox: OutboxTable;
  server_settings: ServerSettingTable;
  key_pins: KeyPinsTable;
  membership_statements: MembershipStatementTable;
  webhooks: WebhookTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_attempts: WebhookAttemptTable;
  idempotency_keys: IdempotencyKeyTable;
  personal_overrides: PersonalOverrideTable;
}

export interface UserTable {
  id: string;
  /** Lower-cased; e-mail addresses compare case-insensitively. */
  email: string;
  name: string;
  /** `invited`: created by an invitation, no credentials yet. `active`: signed up. */
  status: 'invited' | 'active';
  email_verified: number;
  kdf_params: string | null;
  auth_key_hash: string | null;
  recovery_auth_key_hash: string | null;
  public_key: string | null;
  signing_public_key: string | null;
  wrapped_private_keys: string | null;
  recovery_wrapped_private_keys: string | null;
  created_at: string;
  updated_at: string;
}

export interface SessionTable {
  id: string;
  user_id: string;
  token_hash: string;
  ip: string | null;
  user_agent: string | null;
  created_at: string;
  last_used_at: string;
  expires_at: string;
}

export interface ProjectTable {
  id: string;
  name: string;
  description: string;
  created_by: string;
  created_at: string;
  updated_at: string;
  /** Current key epoch of the vault; 0 until the vault is initialised. */
  vault_epoch: number;
  rekey_recommended: number;
}

export interface MemberTable {
  id: string;
  project_id: string;
  user_id: string;
  role: 'admin' | 'developer' | 'viewer';
  status: 'pending' | 'active' | 'revoked';
  invited_at: string | null;
  invited_by: string | null;
  invitation_token_hash: string | null;
  invitation_expires_at: string | null;
  joined_at: string | null;
  created_at: string;
  updated_at: string;
  /** The introduction secret sealed for admins (`v1.<epoch>.…`), set by the inviter's client. */
  introduction_sealed_secret?: string | null;
  /** The inviter's MAC under the introduction secret over the inviter's own keys. */
  introduction_inviter_proof?: string | null;
  /** The invitee's MAC under the introduction secret over its keys, sent with the acceptance. */
  introduction_proof?: string | null;
}

/** A user's signed key pins document (the SDK's `SignedKeyPins`), latest version only. */
interface KeyPinsTable {
  user_id: string;
  version: number;
  /** JSON of the document exactly as signed. */
  document: string;
  signature: string;
  updated_at: string;
}

export interface EnvironmentTable {
  id: string;
  project_id: string;
  name: string;
  slug: string;
  /** Bumped on every change to the environment or its secrets; the listing cache key. */
  revision: number;
  created_at: string;
  updated_at: string;
}

export interface SecretTable {
  id: string;
  project_id: string;
  environment_id: string;
  name: string;
  version: number;
  value: string;
  epoch: number;
  comment: string;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
}

export interface SecretVersionTable {
  id: string;
  secret_id: string;
  project_id: string;
  environment_id: string;
  version: number;
  value: string;
  epoch: number;
  created_at: string;
  created_by: string | null;
}

export interface VaultGrantTable {
  id: string;
  project_id: string;
  epoch: number;
  kind: 'project_key' | 'environment_key';
  recipient_type: 'user' | 'api_key' | 'ci_token';
  recipient_id: string;
  environment_id: string | null;
  sealed_key: string;
  granter_id: string;
  signature: string;
  created_at: string;
}

export interface ApiKeyTable {
  id: string;
  project_id: string;
  name: string;
  token_hash: string;
  role: 'admin' | 'developer' | 'viewer';
  /** JSON: `{ [environment_id]: 'read' | 'read_write' }`. */
  scopes: string;
  public_key: string;
  /** Ed25519, from the key part; signs the grants of the CI tokens this key mints. */
  signing_public_key: string | null;
  created_by: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface CiTokenTable {
  id: string;
  project_id: string;
  name: string;
  token_hash: string;
  scopes: string;
  public_key: string;
  signing_public_key: string | null;
  /** The user accountable for the token: its minter, or the admin behind the minting API key. */
  created_by: string;
  created_by_api_key: string | null;
  created_at: string;
  expires_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface AuditEventTable {
  id: string;
  project_id: string | null;
  action: string;
  actor_id: string | null;
  credential_kind: string | null;
  credential_id: string | null;
  ip: string | null;
  request_id: string | null;
  target_type: string | null;
  target_id: string | null;
  /** JSON object with before/after values; never secret values. */
  data: string;
  created_at: string;
  /** Position in its project's hash chain (1, 2, …); see `domains/audit/chain.ts`. */
  chain_seq: number | null;
  /** The hash of the chain's previous event (64 zeros for the first). */
  prev_hash: string | null;
  /** SHA-256 (hex) of this event's canonical encoding, `prev_hash` included. */
  hash: string | null;
}

/** The last link of each audit chain: a project's id, or '' for events without a project. */
interface AuditChainHeadTable {
  chain: string;
  /** Events in the chain (the last one's `chain_seq`). */
  seq: number;
  /** The last event's hash. */
  hash: string;
}

export interface OutboxTable {
  id: string;
  kind: string;
  payload: string;
  status: 'pending' | 'sent' | 'failed';
  attempts: number;
  next_attempt_at: string;
  locked_until: string | null;
  last_error: string | null;
  created_at: string;
  sent_at: string | null;
}

/** A write committed under an idempotency key (migration 015, domains/idempotency). */
export interface IdempotencyKeyTable {
  /**
   * SHA-256 of the credential and the client's key, after the key's time (6
   * bytes) if it starts with one (`keyLookup`, which gives it in hex). Bytes:
   * a Buffer, or from `node:sqlite` a Uint8Array.
   */
  lookup: Uint8Array;
  /** The first 16 bytes of SHA-256 of the method, the URL and the body. */
  fingerprint: Uint8Array;
  /**
   * What the write's transaction returned, the request body's long strings left
   * out: encrypted under the client's key (base64), or for routes whose result
   * holds nothing the database does not hold in clear, `~` and JSON with the
   * request's own strings marked (a dot and base64 for a result JSON cannot
   * hold, and in rows written before that format; `resultCodec`); null if it
   * cannot be kept.
   */
  result: string | null;
  /** When the write committed; the key is kept 24 h from then (`IDEMPOTENCY_KEY_TTL_MS`). */
  created_at: string;
}

/** Instance-wide settings shared by every server instance (migration 002). */
export interface ServerSettingTable {
  name: string;
  value: string;
  created_at: string;
}

interface MembershipStatementTable {
  project_id: string;
  seq: number;
  /** JSON of the statement exactly as signed (see the SDK's CRYPTO.md, "Membership chain"). */
  statement: string;
  created_at: string;
}

/** A project's webhook endpoint (see `domains/webhooks`). */
export interface WebhookTable {
  id: string;
  project_id: string;
  url: string;
  description: string;
  /** JSON array of environment ids; empty: every environment. */
  environments: string;
  /** JSON array of event kinds; empty: every kind. */
  event_kinds: string;
  enabled: number;
  /** Why it is off: `failing` (disabled by the server after sustained failure) or `admin`. */
  disabled_reason: 'failing' | 'admin' | null;
  disabled_at: string | null;
  /** The signing secret as stored (`domains/webhooks/secret-box.ts`). */
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  /** The last change-feed event id turned into deliveries. */
  event_cursor: string | null;
  /** The last `seq` given to one of its deliveries. */
  delivery_seq: number;
  /** When the current run of failed attempts began; null after a success. */
  failing_since: string | null;
  /** Lease of the worker delivering its queue. */
  locked_until: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

/** One event to deliver to one webhook, in order of `seq`; its id is the `webhook-id` header. */
export interface WebhookDeliveryTable {
  id: string;
  webhook_id: string;
  seq: number;
  event_id: string | null;
  event_kind: string;
  payload: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: string;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  finished_at: string | null;
}

/** One attempt at a delivery: what the receiver answered, never more than a short excerpt. */
export interface WebhookAttemptTable {
  id: string;
  delivery_id: string;
  attempt: number;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  outcome: 'delivered' | 'failed';
  error: string | null;
  response_excerpt: string | null;
}

/** A member's own value for a name in an environment: an envelope only that member can open. */
export interface PersonalOverrideTable {
  id: string;
  project_id: string;
  environment_id: string;
  user_id: string;
  name: string;
  /** `v1.ov.<nonce>.<ciphertext>`, sealed by the member's client (CRYPTO.md). */
  value: string;
  created_at: string;
  updated_at: string;
}
