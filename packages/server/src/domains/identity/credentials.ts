import { hash as digest, randomBytes, timingSafeEqual } from 'node:crypto';
import { isWellFormedBearer, ready } from '@coffer/sdk';
import type { Redis } from 'ioredis';
import { SUBSCRIBER_OPTIONS } from '../../redis-options.js';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { CredentialResolver, Principal, Resolution, Scopes } from '../../http/principal.js';
import {
  apiKeyByHash,
  ciTokenByHash,
  recordLastUse,
  sessionByHash,
  type TokenRow,
} from './credentials.repo.js';

/** SHA-256 hex of a bearer or session token: what the database stores instead of the token. */
export const hashToken = (token: string): string => digest('sha256', token, 'hex');

/** Compared against when there is no stored hash, so a missing row costs the same work. */
const DUMMY_HASH = hashToken(randomBytes(32).toString('base64url'));

/**
 * Constant-time comparison of a presented key or token with a stored hash
 * (both SHA-256 hex); false when nothing is stored.
 */
export function matchesHash(presentedKey: string, storedHash: string | null | undefined): boolean {
  const presented = Buffer.from(hashToken(presentedKey), 'hex');
  const stored = Buffer.from(storedHash ?? DUMMY_HASH, 'hex');
  return (
    stored.length === presented.length && timingSafeEqual(presented, stored) && storedHash != null
  );
}

const INVALID: Resolution = {
  error: 'unauthenticated',
  message: 'The credential is missing, invalid or revoked',
};

const EXPIRED_MESSAGE: Record<Principal['kind'], string> = {
  session: 'The session has expired; log in again',
  api_key: 'The API key has expired',
  ci_token: 'The CI token has expired',
};

/**
 * How long a resolved credential is trusted without asking the database. A
 * revocation, logout or password change on this instance takes effect at once
 * (the service calls `forgetCredential` / `forgetSessionsOfUser`); on other
 * instances it takes effect within this TTL.
 */
export const CREDENTIAL_CACHE_TTL_MS = 5_000;
/** `last_used_at` is written at most this often per credential, not on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;
const MAX_CACHED_CREDENTIALS = 10_000;

/** A credential row as loaded from the database. */
interface LoadedCredential {
  principal: Principal;
  expiresAt: string | null;
  lastUsedAt: string | null;
}

/** Times as epoch milliseconds, so the hot path compares numbers. */
interface CachedCredential {
  principal: Principal;
  expiresAtMs: number | null;
  lastUsedMs: number | null;
  loadedAt: number;
}

const credentialIdOf = (p: Principal) => (p.kind === 'session' ? p.sessionId : p.id);

/** What another instance must drop from its cache; published over Redis when shared. */
type ForgetMessage = { credential: string } | { sessionsOf: string } | { all: true };

/**
 * Resolved credentials by token hash, one per app (the composition root builds
 * it; the resolver and the services that revoke share it). Only live
 * credentials are cached, never failures. A revocation, logout or password
 * change calls `forget…` here, which also tells the other instances when
 * `shareCredentialInvalidation` connected it to Redis.
 */
export class CredentialCache {
  /** Lookups answered here, and not (read by the metrics). */
  hits = 0;
  misses = 0;
  private readonly entries = new Map<string, CachedCredential>();
  /** Set by `shareCredentialInvalidation`: publishes what this instance forgets. */
  publish: ((message: ForgetMessage) => void) | null = null;

  get(hash: string, nowMs: number): CachedCredential | undefined {
    const entry = this.peek(hash, nowMs);
    if (entry) this.hits++;
    else this.misses++;
    return entry;
  }

  /** `get` without counting a hit or a miss: for a lookup whose caller may ask again with `get`. */
  peek(hash: string, nowMs: number): CachedCredential | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (nowMs - entry.loadedAt >= CREDENTIAL_CACHE_TTL_MS || nowMs < entry.loadedAt) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry;
  }

  set(hash: string, entry: CachedCredential): void {
    // Map keeps insertion order: dropping the first key evicts the oldest entry.
    if (this.entries.size >= MAX_CACHED_CREDENTIALS) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(hash, entry);
  }

  /** Call after revoking or deleting a session, API key or CI token (by its id). */
  forgetCredential(credentialId: string): void {
    this.forget({ credential: credentialId });
  }

  /** Call after ending a user's sessions (password change, recovery). */
  forgetSessionsOfUser(userId: string): void {
    this.forget({ sessionsOf: userId });
  }

  /** Drops what `message` names here only (a message from another instance). */
  forgetHere(message: ForgetMessage): void {
    const drop = (matches: (principal: Principal) => boolean) => {
      for (const [hash, entry] of this.entries)
        if (matches(entry.principal)) this.entries.delete(hash);
    };
    if ('credential' in message) drop((p) => credentialIdOf(p) === message.credential);
    else if ('sessionsOf' in message)
      drop((p) => p.kind === 'session' && p.userId === message.sessionsOf);
    else drop(() => true);
  }

  private forget(message: ForgetMessage): void {
    this.forgetHere(message);
    this.publish?.(message);
  }
}

/** What the services that end credentials call. */
export type CredentialForgetting = Pick<
  CredentialCache,
  'forgetCredential' | 'forgetSessionsOfUser'
>;

/**
 * With several instances, a revocation on one must end the credential on all
 * of them at once, not after the cache TTL: every `forget…` call is published
 * on `channel`, and a subscribing connection of its own drops the same entries
 * here. If Redis is unreachable the TTL still bounds how long a revoked
 * credential can live elsewhere.
 */
export function shareCredentialInvalidation(
  cache: CredentialCache,
  redis: Redis,
  channel: string,
  onError: (err: unknown) => void = () => undefined,
): { subscribed: Promise<void>; close(): Promise<void> } {
  const subscriber = redis.duplicate(SUBSCRIBER_OPTIONS);
  subscriber.on('error', () => undefined);
  subscriber.on('message', (from: string, payload: string) => {
    if (from !== channel) return;
    try {
      cache.forgetHere(JSON.parse(payload) as ForgetMessage);
    } catch (err) {
      onError(err);
    }
  });
  const subscribed = subscriber.subscribe(channel).then(() => undefined, onError);
  cache.publish = (message) => {
    redis.publish(channel, JSON.stringify(message)).catch(onError);
  };
  return {
    subscribed,
    async close() {
      cache.publish = null;
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}

/** Resolves session cookies, API keys and CI tokens, with a short-lived cache in front of the database. */
export function credentialResolver(
  db: Kysely<Database>,
  cache: CredentialCache,
): CredentialResolver {
  /** Turns a live credential into a resolution and records its use at most once a minute. */
  async function use(entry: CachedCredential, now: Date): Promise<Resolution> {
    const nowMs = now.getTime();
    if (entry.expiresAtMs !== null && entry.expiresAtMs <= nowMs) {
      return { error: 'token_expired', message: EXPIRED_MESSAGE[entry.principal.kind] };
    }
    const previous = entry.lastUsedMs;
    if (previous === null || nowMs - previous >= LAST_USED_RESOLUTION_MS) {
      // Set before the write so concurrent requests on this credential do not all write.
      entry.lastUsedMs = nowMs;
      try {
        await recordLastUse(
          db,
          entry.principal.kind,
          credentialIdOf(entry.principal),
          now.toISOString(),
        );
      } catch {
        // Bookkeeping never fails the request; the next one tries again.
        entry.lastUsedMs = previous;
      }
    }
    return { principal: entry.principal };
  }

  async function resolve(
    hash: string,
    now: Date,
    load: (hash: string) => Promise<LoadedCredential | null>,
  ): Promise<Resolution> {
    let entry = cache.get(hash, now.getTime());
    if (!entry) {
      const loaded = await load(hash);
      if (!loaded) return INVALID;
      entry = {
        principal: loaded.principal,
        expiresAtMs: loaded.expiresAt === null ? null : Date.parse(loaded.expiresAt),
        lastUsedMs: loaded.lastUsedAt === null ? null : Date.parse(loaded.lastUsedAt),
        loadedAt: now.getTime(),
      };
      cache.set(hash, entry);
    }
    return use(entry, now);
  }

  /**
   * An API key or CI token row as resolving reads it: the credential, or null
   * when there is none or it was revoked. `principal` adds what the kind
   * carries beyond the common fields (an API key's role).
   */
  function loadedToken<R extends TokenRow>(
    row: R | undefined,
    principal: (
      row: R,
      common: { id: string; projectId: string; userId: string; scopes: Scopes },
    ) => Principal,
  ): LoadedCredential | null {
    if (!row || row.revoked_at) return null;
    return {
      principal: principal(row, {
        id: row.id,
        projectId: row.project_id,
        userId: row.created_by,
        scopes: JSON.parse(row.scopes) as Scopes,
      }),
      expiresAt: row.expires_at,
      lastUsedAt: row.last_used_at,
    };
  }

  async function loadApiKey(hash: string): Promise<LoadedCredential | null> {
    const [key] = await apiKeyByHash(db, hash);
    return loadedToken(key, (row, common) => ({ kind: 'api_key', ...common, role: row.role }));
  }

  async function loadCiToken(hash: string): Promise<LoadedCredential | null> {
    const [token] = await ciTokenByHash(db, hash);
    return loadedToken(token, (_row, common) => ({ kind: 'ci_token', ...common }));
  }

  return {
    cachedBearer(bearer, now) {
      if (!bearer.startsWith('cek_') && !bearer.startsWith('ci_')) return undefined;
      const nowMs = now.getTime();
      const entry = cache.peek(hashToken(bearer), nowMs);
      if (!entry || (entry.expiresAtMs !== null && entry.expiresAtMs <= nowMs)) return undefined;
      const used = entry.lastUsedMs;
      if (used === null || nowMs - used >= LAST_USED_RESOLUTION_MS) return undefined;
      cache.hits++;
      return entry.principal;
    },

    resolveSession(token, now) {
      return resolve(hashToken(token), now, async (hash) => {
        const [row] = await sessionByHash(db, hash);
        if (!row) return null;
        return {
          principal: { kind: 'session', userId: row.user_id, sessionId: row.id },
          expiresAt: row.expires_at,
          lastUsedAt: row.last_used_at,
        };
      });
    },

    async resolveBearer(bearer, now) {
      const load = bearer.startsWith('cek_')
        ? loadApiKey
        : bearer.startsWith('ci_')
          ? loadCiToken
          : null;
      if (!load) return INVALID;
      return resolve(hashToken(bearer), now, async (hash) => {
        // Only a cache miss gets here (a cached credential passed when it was loaded):
        // the checksum rejects typos and random strings without a database lookup.
        await ready();
        return isWellFormedBearer(bearer) ? load(hash) : null;
      });
    },
  };
}
