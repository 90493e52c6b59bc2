import { createHmac, randomBytes } from 'node:crypto';
import { DEFAULT_KDF_PARAMS } from '@coffer/sdk';
import type { Kysely } from 'kysely';
import type { SharedDeps } from '../../shared-deps.js';
import type { Database } from '../../db/schema.js';
import { AppError, notFound, validation, type ErrorDetail } from '../../errors.js';
import { driverErrorKind } from '../../db/driver-errors.js';
import { newId } from '../../ids.js';
import type { Principal } from '../../http/principal.js';
import { audit, type Actor } from '../audit/audit.js';
import { requireSession } from '../../access/project-access.js';
import { hashToken, matchesHash, type CredentialForgetting } from './credentials.js';
import { normalizeEmail } from './email.js';
import * as repo from './identity.repo.js';
import type {
  ChangePasswordBody,
  KdfParams,
  LoginBody,
  RecoveryKeysBody,
  RecoveryResetBody,
  Session,
  SessionListQuery,
  SignupBody,
  User,
} from './identity.schemas.js';

/** Sessions last 30 days from login (the cookie's Max-Age matches). */
export const SESSION_LIFETIME_MS = 30 * 24 * 60 * 60 * 1000;

const MAX_USER_AGENT_LENGTH = 512;
const PRELOGIN_SECRET = 'prelogin_salt_secret';
/** Claimed by the first user admitted without an invitation under `SIGNUP_POLICY=invite`. */
const FIRST_USER = 'first_user_without_invitation';
const inviteOnly = () =>
  new AppError(
    'forbidden',
    'Sign-up is by invitation only: use the link in your invitation e-mail',
  );

// Wrong password and unknown e-mail must look the same: same status, code and
// message, and the same work (a hash and a constant-time compare).
const BAD_LOGIN = () =>
  new AppError('unauthenticated', 'The e-mail address or password is incorrect');
const BAD_RECOVERY = () =>
  new AppError('unauthenticated', 'The e-mail address or recovery key is incorrect');
export interface Requester {
  ip: string | null;
  userAgent: string | null;
}

interface LoginResult {
  /** The raw session token for the cookie; the database only has its hash. */
  token: string;
  user: User;
  kdf_params: KdfParams;
  wrapped_private_keys: string;
  session: { id: string; expires_at: string };
}

function normalizeName(raw: string): string {
  const name = raw.trim();
  if (name.length === 0) throw validation('name', 'too_short', 'name must not be blank');
  return name;
}

function toUser(row: repo.UserRow): User {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    email_verified: row.email_verified === 1,
    public_key: row.public_key ?? '',
    signing_public_key: row.signing_public_key ?? '',
    created_at: row.created_at,
  };
}

function toSession(row: repo.SessionRow, currentId: string): Session {
  return {
    id: row.id,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    expires_at: row.expires_at,
    ip: row.ip,
    user_agent: row.user_agent,
    current: row.id === currentId,
  };
}

const isUniqueViolation = (error: unknown): boolean =>
  driverErrorKind(error) === 'unique_violation';

export type IdentityService = ReturnType<typeof identityService>;

export function identityService(
  ctx: Pick<SharedDeps, 'config' | 'db' | 'clock'> & { credentials: CredentialForgetting },
) {
  const db = ctx.db.kysely;
  const minimum = ctx.config.kdfMinimum;
  let preloginSecret: Buffer | undefined;

  /** Refuses KDF parameters weaker than this server's configured floor. */
  function checkKdfStrength(params: KdfParams): string {
    const details: ErrorDetail[] = [];
    if (params.ops_limit < minimum.opsLimit)
      details.push({ field: 'kdf_params.ops_limit', issue: 'minimum', minimum: minimum.opsLimit });
    if (params.mem_limit_kib < minimum.memLimitKib)
      details.push({
        field: 'kdf_params.mem_limit_kib',
        issue: 'minimum',
        minimum: minimum.memLimitKib,
      });
    if (details.length > 0)
      throw new AppError(
        'validation_error',
        `Argon2id parameters must be at least ops_limit ${minimum.opsLimit} and mem_limit_kib ${minimum.memLimitKib}`,
        details,
      );
    return JSON.stringify({
      algorithm: params.algorithm,
      ops_limit: params.ops_limit,
      mem_limit_kib: params.mem_limit_kib,
      salt: params.salt,
    });
  }

  /**
   * The instance-wide secret behind fake prelogin salts, created once in the
   * database so every instance and every restart gives the same fake answer.
   */
  async function fakeSaltSecret(): Promise<Buffer> {
    if (!preloginSecret) {
      const stored =
        (await repo.readSetting(db, PRELOGIN_SECRET)) ??
        (await repo.insertSettingIfAbsent(
          db,
          PRELOGIN_SECRET,
          randomBytes(32).toString('base64url'),
          ctx.clock.now().toISOString(),
        ));
      preloginSecret = Buffer.from(stored, 'base64url');
    }
    return preloginSecret;
  }

  async function fakeKdfParams(email: string): Promise<KdfParams> {
    const salt = createHmac('sha256', await fakeSaltSecret())
      .update(`coffer/prelogin-salt\0${email}`)
      .digest()
      .subarray(0, 16)
      .toString('base64url');
    return { ...DEFAULT_KDF_PARAMS, salt };
  }

  /** An active user whose stored hash matches `key`; the same work and error otherwise. */
  async function verifiedUser(
    email: string,
    key: string,
    column: 'auth_key_hash' | 'recovery_auth_key_hash',
    failure: () => AppError,
  ): Promise<repo.UserRow> {
    const user = await repo.findUserByEmail(db, email);
    const active = user?.status === 'active' ? user : undefined;
    if (!matchesHash(key, active?.[column]) || !active) throw failure();
    return active;
  }

  async function createSession(user: repo.UserRow, requester: Requester): Promise<LoginResult> {
    const now = ctx.clock.now();
    const token = randomBytes(32).toString('base64url');
    const session: repo.SessionRow = {
      id: newId('session'),
      user_id: user.id,
      token_hash: hashToken(token),
      ip: requester.ip,
      user_agent: requester.userAgent?.slice(0, MAX_USER_AGENT_LENGTH) ?? null,
      created_at: now.toISOString(),
      last_used_at: now.toISOString(),
      expires_at: new Date(now.getTime() + SESSION_LIFETIME_MS).toISOString(),
    };
    await repo.insertSession(db, session);
    return {
      token,
      user: toUser(user),
      kdf_params: JSON.parse(user.kdf_params!) as KdfParams,
      wrapped_private_keys: user.wrapped_private_keys!,
      session: { id: session.id, expires_at: session.expires_at },
    };
  }

  return {
    // For other domains, on their handle (their transaction or the database);
    // no access check: the caller made it.
    /** A user's public keys. */
    publicKeysOf: (handle: Kysely<Database>, userId: string) => repo.findUserKeys(handle, userId),
    /** A user's id, e-mail, name and status, by id. */
    userById: (handle: Kysely<Database>, userId: string) =>
      repo.findUserSummary(handle, 'id', userId),
    /** The same by normalized e-mail address. */
    userByEmail: (handle: Kysely<Database>, email: string) =>
      repo.findUserSummary(handle, 'email', email),
    /** The `invited` user an invitation to `email` points to: created unless it exists. */
    ensureInvitedUser: (
      handle: Kysely<Database>,
      user: { id: string; email: string; name: string; at: string },
    ) => repo.ensureInvitedUser(handle, user),
    /** The user proved their e-mail address (an invitation's token, at acceptance). */
    markEmailVerified: (handle: Kysely<Database>, userId: string, at: string) =>
      repo.markEmailVerified(handle, userId, at),

    /** The user's KDF parameters, or stable fake ones for an e-mail without an account. */
    async prelogin(rawEmail: string): Promise<{ kdf_params: KdfParams }> {
      const email = normalizeEmail(rawEmail);
      const user = await repo.findUserByEmail(db, email);
      if (user?.status === 'active' && user.kdf_params)
        return { kdf_params: JSON.parse(user.kdf_params) as KdfParams };
      return { kdf_params: await fakeKdfParams(email) };
    },

    /**
     * Creates the account (or completes the one an invitation created, keeping
     * its id). Under `SIGNUP_POLICY=invite` only a valid invitation token lets
     * someone in, except the first user of an empty instance.
     */
    async signUp(body: SignupBody, actor: Actor): Promise<{ user: User }> {
      const email = normalizeEmail(body.email);
      const name = normalizeName(body.name);
      const kdfParams = checkKdfStrength(body.kdf_params);
      const now = ctx.clock.now();
      const nowIso = now.toISOString();

      return db.transaction().execute(async (trx) => {
        const existing = await repo.findUserByEmail(trx, email);
        if (existing?.status === 'active')
          throw new AppError(
            'already_exists',
            'An account with this e-mail address already exists',
          );

        let emailVerified = 0;
        let firstUserOfInviteOnly = false;
        if (body.invitation_token !== undefined) {
          const invitation = existing
            ? await repo.findPendingInvitation(
                trx,
                hashToken(body.invitation_token),
                existing.id,
                nowIso,
              )
            : undefined;
          if (!invitation)
            throw new AppError(
              'forbidden',
              'The invitation token is invalid, expired or meant for another e-mail address',
            );
          emailVerified = 1;
        } else if (ctx.config.signupPolicy === 'invite') {
          if ((await repo.countActiveUsers(trx)) > 0) throw inviteOnly();
          firstUserOfInviteOnly = true;
        }

        const account: repo.AccountFields = {
          name,
          status: 'active',
          email_verified: emailVerified,
          kdf_params: kdfParams,
          auth_key_hash: hashToken(body.auth_key),
          recovery_auth_key_hash: hashToken(body.recovery_auth_key),
          public_key: body.public_key,
          signing_public_key: body.signing_public_key,
          wrapped_private_keys: body.wrapped_private_keys,
          recovery_wrapped_private_keys: body.recovery_wrapped_private_keys,
          updated_at: nowIso,
        };
        if (firstUserOfInviteOnly) {
          // Two first sign-ups racing on PostgreSQL both see no users; this
          // one-time row lets exactly one of them in.
          try {
            await repo.insertSetting(trx, FIRST_USER, email, nowIso);
          } catch (error) {
            if (isUniqueViolation(error)) throw inviteOnly();
            throw error;
          }
        }
        const alreadyExists = () =>
          new AppError('already_exists', 'An account with this e-mail address already exists');
        let id: string;
        if (existing) {
          if (!(await repo.activateInvitedUser(trx, existing.id, account))) throw alreadyExists();
          id = existing.id;
        } else {
          id = newId('user');
          try {
            await repo.insertUser(trx, { id, email, created_at: nowIso, ...account });
          } catch (error) {
            if (isUniqueViolation(error)) throw alreadyExists();
            throw error;
          }
        }
        await audit(trx, { actor, projectId: null, at: now }, 'user.signed_up', ['user', id], {
          email_verified: emailVerified === 1,
          had_invitation: existing !== undefined,
        });
        const created = (await repo.findUserById(trx, id))!;
        return { user: toUser(created) };
      });
    },

    /** Checks the auth key and starts a session. */
    async logIn(body: LoginBody, requester: Requester): Promise<LoginResult> {
      const user = await verifiedUser(
        normalizeEmail(body.email),
        body.auth_key,
        'auth_key_hash',
        BAD_LOGIN,
      );
      return createSession(user, requester);
    },

    /** Ends the caller's session if it has one; logging out twice is not an error. */
    async logOut(principal: Principal | null): Promise<void> {
      if (principal?.kind !== 'session') return;
      await repo.deleteSession(db, principal.sessionId);
      ctx.credentials.forgetCredential(principal.sessionId);
    },

    async me(principal: Principal | null): Promise<User> {
      const session = requireSession(principal);
      const user = await repo.findUserById(db, session.userId);
      if (!user) throw new AppError('unauthenticated', 'Authentication required');
      return toUser(user);
    },

    /** What a client needs to unlock its keys again (e.g. after a dashboard reload). */
    async myKeys(principal: Principal | null) {
      const session = requireSession(principal);
      const user = await repo.findUserById(db, session.userId);
      if (!user) throw new AppError('unauthenticated', 'Authentication required');
      return {
        kdf_params: JSON.parse(user.kdf_params!) as KdfParams,
        wrapped_private_keys: user.wrapped_private_keys!,
        public_key: user.public_key!,
        signing_public_key: user.signing_public_key!,
      };
    },

    async listSessions(principal: Principal | null, query: SessionListQuery) {
      const session = requireSession(principal);
      const { rows, total } = await repo.listSessionsOfUser(
        db,
        session.userId,
        ctx.clock.now().toISOString(),
        query,
      );
      return { items: rows.map((row) => toSession(row, session.sessionId)), total };
    },

    /** Ends one of the caller's sessions; another user's session is a 404. Returns whether it was the current one. */
    async revokeSession(principal: Principal | null, sessionId: string): Promise<boolean> {
      const session = requireSession(principal);
      // One transaction, so that a repeat under an idempotency key answers as the
      // first did (the session is gone by then).
      const targetId = await db.transaction().execute(async (trx) => {
        const target = await repo.findSessionOfUser(trx, session.userId, sessionId);
        if (!target) throw notFound('Session');
        await repo.deleteSession(trx, target.id);
        return target.id;
      });
      ctx.credentials.forgetCredential(targetId);
      return targetId === session.sessionId;
    },

    /**
     * Replaces the auth key and the password-wrapped keys after checking the
     * current auth key; ends every other session of the user.
     */
    async changePassword(
      principal: Principal | null,
      body: ChangePasswordBody,
      actor: Actor,
    ): Promise<void> {
      const session = requireSession(principal);
      const kdfParams = checkKdfStrength(body.kdf_params);
      const user = await repo.findUserById(db, session.userId);
      if (!user || !matchesHash(body.current_auth_key, user.auth_key_hash))
        throw new AppError('forbidden', 'The current password is incorrect');
      const now = ctx.clock.now();
      const ended = await db.transaction().execute(async (trx) => {
        const replaced = await repo.replacePassword(trx, user.id, user.auth_key_hash!, {
          kdf_params: kdfParams,
          auth_key_hash: hashToken(body.auth_key),
          wrapped_private_keys: body.wrapped_private_keys,
          updated_at: now.toISOString(),
        });
        // Another password change won the race: the current password is no longer this one.
        if (!replaced) throw new AppError('forbidden', 'The current password is incorrect');
        const endedIds = await repo.deleteSessionsOfUser(trx, user.id, session.sessionId);
        await audit(
          trx,
          { actor, projectId: null, at: now },
          'user.password_changed',
          ['user', user.id],
          { sessions_ended: endedIds.length },
        );
        return endedIds;
      });
      for (const id of ended) ctx.credentials.forgetCredential(id);
    },

    /** The recovery-wrapped private keys, for a caller who proves the recovery key. */
    async recoveryKeys(body: RecoveryKeysBody) {
      const user = await verifiedUser(
        normalizeEmail(body.email),
        body.recovery_auth_key,
        'recovery_auth_key_hash',
        BAD_RECOVERY,
      );
      return { recovery_wrapped_private_keys: user.recovery_wrapped_private_keys! };
    },

    /**
     * Sets a new password with the recovery key (a forgotten password). Ends
     * every session of the user and records it in the audit log.
     */
    async recoveryReset(body: RecoveryResetBody, actor: Actor): Promise<void> {
      const kdfParams = checkKdfStrength(body.kdf_params);
      const user = await verifiedUser(
        normalizeEmail(body.email),
        body.recovery_auth_key,
        'recovery_auth_key_hash',
        BAD_RECOVERY,
      );
      const now = ctx.clock.now();
      await db.transaction().execute(async (trx) => {
        const replaced = await repo.replacePassword(trx, user.id, user.auth_key_hash!, {
          kdf_params: kdfParams,
          auth_key_hash: hashToken(body.auth_key),
          wrapped_private_keys: body.wrapped_private_keys,
          updated_at: now.toISOString(),
        });
        if (!replaced)
          throw new AppError(
            'version_conflict',
            'The password changed while recovering; try the recovery again',
          );
        const endedIds = await repo.deleteSessionsOfUser(trx, user.id, null);
        await audit(
          trx,
          { actor, projectId: null, at: now },
          'user.password_recovered',
          ['user', user.id],
          { sessions_ended: endedIds.length },
        );
      });
      ctx.credentials.forgetSessionsOfUser(user.id);
    },
  };
}
