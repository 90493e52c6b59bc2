import type { Principal, Role, Scopes } from '../../http/principal.js';

/**
 * The change feed's events (docs/events.md). They are DERIVED from the audit
 * log, never stored a second time: an event is one audit row (or, for a secret
 * write, the rows one request wrote in one environment), and its `id` is the
 * position of its last row in the project's audit hash chain (`chain_seq`),
 * which grows by one per audited event of the project, in commit order. So the
 * ids of a project's feed increase monotonically (with gaps where the chain
 * holds events the feed does not carry, such as token reads), and replaying
 * "everything after id N" is a range scan of the chain's index.
 *
 * An event carries what changed and where, never a value, a ciphertext or key
 * material: a client fetches and decrypts what it needs itself.
 */

/** Who caused an event; null for the server's own doing (an invitation that lapsed). */
export interface FeedActor {
  /** `user` for a signed-in person, else the kind of token used. */
  kind: 'user' | 'api_key' | 'ci_token';
  /** The accountable user (a token's creator); null when the caller may not see members. */
  user_id: string | null;
  /** That user's display name, when known and visible. */
  name: string | null;
}

export interface FeedEnvironmentRef {
  id: string;
  /** The environment's slug now (or when it was deleted). */
  slug: string;
}

interface EventBase {
  /** Position in the project's audit chain: monotonically increasing per project. */
  id: number;
  project_id: string;
  /** When the change committed (ISO 8601). */
  at: string;
  actor: FeedActor | null;
}

export type SecretChangeKind = 'created' | 'updated' | 'deleted' | 'rolled_back';

export interface SecretsChangedEvent extends EventBase {
  type: 'secrets.changed';
  environment: FeedEnvironmentRef;
  /**
   * The environment's revision when the event was read; a listing at this
   * revision or later contains the change. Null when the environment is gone.
   */
  revision: number | null;
  /** The names written or deleted, sorted. */
  names: string[];
  changes: { name: string; change: SecretChangeKind; version: number }[];
}

export interface EnvironmentCreatedEvent extends EventBase {
  type: 'environment.created';
  environment: FeedEnvironmentRef & { name: string };
}

export interface EnvironmentRenamedEvent extends EventBase {
  type: 'environment.renamed';
  environment: FeedEnvironmentRef & { name: string };
  before: { slug: string; name: string };
}

export interface EnvironmentDeletedEvent extends EventBase {
  type: 'environment.deleted';
  environment: FeedEnvironmentRef & { name: string };
}

export interface VaultRekeyedEvent extends EventBase {
  type: 'vault.rekeyed';
  /** The new key epoch: values must be read again (and written under it). */
  epoch: number;
}

export interface MemberRef {
  /** The membership (`mbr_…`). */
  id: string;
  user_id: string;
}

export interface MemberAddedEvent extends EventBase {
  type: 'member.added';
  /** `invited` when invited; `active` when the invitation is accepted. */
  member: MemberRef & { role: Role; status: 'invited' | 'active' };
}

export interface MemberRoleChangedEvent extends EventBase {
  type: 'member.role_changed';
  member: MemberRef & { role: Role };
  before: { role: Role };
}

export interface MemberRemovedEvent extends EventBase {
  type: 'member.removed';
  /** `removed` by an admin; an invitation `declined` or `expired`. */
  reason: 'removed' | 'declined' | 'expired';
  member: MemberRef;
  /** API keys and CI tokens revoked with the membership (their ids). */
  revoked_tokens: string[];
}

export interface TokenRevokedEvent extends EventBase {
  type: 'token.revoked';
  token: { kind: 'api_key' | 'ci_token'; id: string };
  /** CI tokens revoked with an API key (minted by it). */
  also_revoked: string[];
}

export interface ProjectDeletedEvent extends EventBase {
  type: 'project.deleted';
}

/** An event of the project's history, as stored (derived from the audit log). */
export type FeedEvent =
  | SecretsChangedEvent
  | EnvironmentCreatedEvent
  | EnvironmentRenamedEvent
  | EnvironmentDeletedEvent
  | VaultRekeyedEvent
  | MemberAddedEvent
  | MemberRoleChangedEvent
  | MemberRemovedEvent
  | TokenRevokedEvent
  | ProjectDeletedEvent;

export type FeedEventType = FeedEvent['type'];

export const FEED_EVENT_TYPES: readonly FeedEventType[] = [
  'secrets.changed',
  'environment.created',
  'environment.renamed',
  'environment.deleted',
  'vault.rekeyed',
  'member.added',
  'member.role_changed',
  'member.removed',
  'token.revoked',
  'project.deleted',
];

/** The audit actions the feed is made of; every other action (reads, sign-ups…) is not in it. */
export const FEED_ACTIONS = [
  'secret.created',
  'secret.updated',
  'secret.deleted',
  'secret.rolled_back',
  'environment.created',
  'environment.updated',
  'environment.deleted',
  'vault.rekeyed',
  'member.invited',
  'invitation.accepted',
  'invitation.declined',
  'invitation.expired',
  'member.role_changed',
  'member.removed',
  'api_key.revoked',
  'ci_token.revoked',
  'project.deleted',
] as const;

/** The fields of an audit row the feed reads (never `ip`, never the hash). */
export interface FeedSourceRow {
  chain_seq: number;
  project_id: string;
  action: string;
  actor_id: string | null;
  credential_kind: string | null;
  request_id: string | null;
  target_id: string | null;
  data: string;
  created_at: string;
}

/** What the derivation needs besides the rows: environments' current slugs and revisions, users' names. */
export interface FeedLookup {
  environment(id: string): { slug: string; name: string; revision: number | null } | undefined;
  userName(id: string): string | null;
}

type Data = Record<string, unknown>;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v ?? 0));
const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
const sub = (v: unknown): Data => (v && typeof v === 'object' ? (v as Data) : {});

const SECRET_CHANGE: Record<string, SecretChangeKind> = {
  'secret.created': 'created',
  'secret.updated': 'updated',
  'secret.deleted': 'deleted',
  'secret.rolled_back': 'rolled_back',
};

function actorOf(row: FeedSourceRow, lookup: FeedLookup): FeedActor | null {
  if (row.actor_id === null) return null;
  const kind =
    row.credential_kind === 'api_key' || row.credential_kind === 'ci_token'
      ? row.credential_kind
      : 'user';
  return { kind, user_id: row.actor_id, name: lookup.userName(row.actor_id) };
}

/** The environment ids an audit row of the feed concerns (for the scope filter and lookups). */
export function environmentOfRow(row: Pick<FeedSourceRow, 'action' | 'data' | 'target_id'>) {
  if (row.action in SECRET_CHANGE) return str(sub(JSON.parse(row.data)).environment_id) || null;
  if (row.action.startsWith('environment.')) return row.target_id;
  return null;
}

/**
 * Turns audit rows of one project (in chain order, feed actions only) into
 * events. The secret rows one request wrote in one environment (a batch, or a
 * single write) become ONE `secrets.changed` whose id is the last row's
 * position; the caller passes whole groups (see `events.repo.ts`).
 */
export function deriveEvents(rows: readonly FeedSourceRow[], lookup: FeedLookup): FeedEvent[] {
  const events: FeedEvent[] = [];
  let open: SecretsChangedEvent | null = null;
  let openKey = '';
  for (const row of rows) {
    const data = sub(JSON.parse(row.data));
    const base = {
      id: Number(row.chain_seq),
      project_id: row.project_id,
      at: row.created_at,
      actor: actorOf(row, lookup),
    };
    const change = SECRET_CHANGE[row.action];
    if (change) {
      const environmentId = str(data.environment_id);
      const key = `${row.request_id ?? `#${row.chain_seq}`}|${environmentId}`;
      const name = str(data.name);
      const entry = { name, change, version: num(data.version) };
      if (open && openKey === key && open.id === base.id - 1) {
        open.id = base.id;
        open.changes.push(entry);
        continue;
      }
      const env = lookup.environment(environmentId);
      open = {
        ...base,
        type: 'secrets.changed',
        environment: { id: environmentId, slug: env?.slug ?? '' },
        revision: env?.revision ?? null,
        names: [],
        changes: [entry],
      };
      openKey = key;
      events.push(open);
      continue;
    }
    open = null;
    const event = deriveOne(row, data, base);
    if (event) events.push(event);
  }
  for (const event of events) {
    if (event.type === 'secrets.changed') {
      event.names = [...new Set(event.changes.map((c) => c.name))].sort();
    }
  }
  return events;
}

function deriveOne(row: FeedSourceRow, data: Data, base: EventBase): FeedEvent | null {
  const target = row.target_id ?? '';
  const member = (): MemberRef => ({ id: target, user_id: str(data.user_id) });
  switch (row.action) {
    case 'environment.created':
    case 'environment.deleted':
      return {
        ...base,
        type: row.action,
        environment: { id: target, slug: str(data.slug), name: str(data.name) },
      };
    case 'environment.updated': {
      const before = sub(data.before);
      const after = sub(data.after);
      return {
        ...base,
        type: 'environment.renamed',
        environment: { id: target, slug: str(after.slug), name: str(after.name) },
        before: { slug: str(before.slug), name: str(before.name) },
      };
    }
    case 'vault.rekeyed':
      return { ...base, type: 'vault.rekeyed', epoch: num(data.to_epoch) };
    case 'member.invited':
      return {
        ...base,
        type: 'member.added',
        member: { ...member(), role: str(sub(data.after).role) as Role, status: 'invited' },
      };
    case 'invitation.accepted':
      return {
        ...base,
        type: 'member.added',
        member: { ...member(), role: str(data.role) as Role, status: 'active' },
      };
    case 'member.role_changed':
      return {
        ...base,
        type: 'member.role_changed',
        member: { ...member(), role: str(sub(data.after).role) as Role },
        before: { role: str(sub(data.before).role) as Role },
      };
    case 'member.removed':
    case 'invitation.declined':
    case 'invitation.expired':
      return {
        ...base,
        type: 'member.removed',
        reason:
          row.action === 'member.removed'
            ? 'removed'
            : row.action === 'invitation.declined'
              ? 'declined'
              : 'expired',
        member: member(),
        revoked_tokens: strings(data.revoked_credentials),
      };
    case 'api_key.revoked':
    case 'ci_token.revoked':
      return {
        ...base,
        type: 'token.revoked',
        token: { kind: row.action === 'api_key.revoked' ? 'api_key' : 'ci_token', id: target },
        also_revoked: strings(data.ci_tokens_revoked),
      };
    case 'project.deleted':
      return { ...base, type: 'project.deleted' };
    default:
      return null;
  }
}

/** What a stream's credential may see of the feed, resolved when the stream opens. */
export interface FeedViewer {
  principal: Principal;
  /** The effective role in the project (a token's capped by its creator's). */
  role: Role;
  /** A token's environment scopes; null for a member's session (every environment). */
  scopes: Scopes | null;
}

/** The credential id a stream runs on (a session's id, a token's id). */
export const credentialIdOf = (p: Principal): string => (p.kind === 'session' ? p.sessionId : p.id);

/** Whether the event ends this credential: its own revocation, or its creator's removal. */
export function endsCredential(event: FeedEvent, viewer: FeedViewer): boolean {
  const id = credentialIdOf(viewer.principal);
  switch (event.type) {
    case 'token.revoked':
      return event.token.id === id || event.also_revoked.includes(id);
    case 'member.removed':
      return event.member.user_id === viewer.principal.userId || event.revoked_tokens.includes(id);
    case 'project.deleted':
      return true;
    default:
      return false;
  }
}

/**
 * The visibility filter: what of `event` this viewer may see, or null. As in
 * the listings: a token sees only the environments in its scopes; a viewer sees
 * names (never values, which no event carries anyway); a CI token sees no
 * members (its actor's user is not named either); token revocations are seen
 * by those who may list such tokens (admins for API keys, developers for CI
 * tokens) and by the revoked credential itself.
 */
export function visibleTo(event: FeedEvent, viewer: FeedViewer): FeedEvent | null {
  const isCi = viewer.principal.kind === 'ci_token';
  const visible = (() => {
    switch (event.type) {
      case 'secrets.changed':
      case 'environment.created':
      case 'environment.renamed':
      case 'environment.deleted':
        return viewer.scopes === null || viewer.scopes[event.environment.id] !== undefined;
      case 'member.added':
      case 'member.role_changed':
        return !isCi;
      case 'member.removed':
        return !isCi || endsCredential(event, viewer);
      case 'token.revoked': {
        if (endsCredential(event, viewer)) return true;
        if (isCi) return false;
        const needed = event.token.kind === 'api_key' ? 'admin' : 'developer';
        return viewer.role === 'admin' || (needed === 'developer' && viewer.role === 'developer');
      }
      case 'vault.rekeyed':
      case 'project.deleted':
        return true;
    }
  })();
  if (!visible) return null;
  if (isCi && event.actor)
    return { ...event, actor: { ...event.actor, user_id: null, name: null } };
  return event;
}

/** Events that are not history but about the stream itself (never stored, never replayed). */
export type StreamNotice =
  /** The stream is open and live after any replay; it continues from `last_id`. */
  | { type: 'ready'; last_id: number }
  /** The requested id is older than the log keeps (or unknown): read everything again. */
  | { type: 'reset'; reason: 'too_old' | 'unknown_id'; last_id: number }
  /** The stream ends; `reconnect` says whether a new one with the same credential may succeed. */
  | {
      type: 'end';
      reason:
        | 'credential_revoked'
        | 'credential_expired'
        | 'access_lost'
        | 'access_changed'
        | 'project_deleted'
        | 'shutdown';
      reconnect: boolean;
    };
