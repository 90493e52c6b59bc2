import { createHash } from 'node:crypto';
import type { AppContext } from '../../app.js';
import type { CredentialResolver, Resolution, Scopes } from '../../http/principal.js';

/** SHA-256 hex of a bearer or session token: what the database stores instead of the token. */
export const hashToken = (token: string): string =>
  createHash('sha256').update(token).digest('hex');

const INVALID: Resolution = {
  error: 'unauthenticated',
  message: 'The credential is missing, invalid or revoked',
};

/** Resolves session cookies, API keys and CI tokens against the database. */
export function credentialResolver(ctx: AppContext): CredentialResolver {
  const db = ctx.db.kysely;
  return {
    async resolveSession(token, now) {
      const row = await db
        .selectFrom('sessions')
        .select(['id', 'user_id', 'expires_at'])
        .where('token_hash', '=', hashToken(token))
        .executeTakeFirst();
      if (!row) return INVALID;
      if (row.expires_at <= now.toISOString())
        return { error: 'token_expired', message: 'The session has expired; log in again' };
      return { principal: { kind: 'session', userId: row.user_id, sessionId: row.id } };
    },

    async resolveBearer(bearer, now) {
      const hash = hashToken(bearer);
      if (bearer.startsWith('cek_')) {
        const key = await db
          .selectFrom('api_keys')
          .select(['id', 'project_id', 'created_by', 'role', 'scopes', 'expires_at', 'revoked_at'])
          .where('token_hash', '=', hash)
          .executeTakeFirst();
        if (!key || key.revoked_at) return INVALID;
        if (key.expires_at && key.expires_at <= now.toISOString()) {
          return { error: 'token_expired', message: 'The API key has expired' };
        }
        return {
          principal: {
            kind: 'api_key',
            id: key.id,
            projectId: key.project_id,
            userId: key.created_by,
            role: key.role,
            scopes: JSON.parse(key.scopes) as Scopes,
          },
        };
      }
      if (bearer.startsWith('ci_')) {
        const token = await db
          .selectFrom('ci_tokens')
          .select(['id', 'project_id', 'created_by', 'scopes', 'expires_at', 'revoked_at'])
          .where('token_hash', '=', hash)
          .executeTakeFirst();
        if (!token || token.revoked_at) return INVALID;
        if (token.expires_at <= now.toISOString())
          return { error: 'token_expired', message: 'The CI token has expired' };
        return {
          principal: {
            kind: 'ci_token',
            id: token.id,
            projectId: token.project_id,
            userId: token.created_by,
            scopes: JSON.parse(token.scopes) as Scopes,
          },
        };
      }
      return INVALID;
    },
  };
}
