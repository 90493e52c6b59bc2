export type Role = 'admin' | 'developer' | 'viewer';
export type Scope = 'read' | 'read_write';
/** Per-environment scopes of a token: environment id → access. */
export type Scopes = Readonly<Record<string, Scope>>;

/**
 * Who is calling. Set on `request.principal` by the request pipeline before any
 * handler runs; `null` for anonymous requests. Services decide what it may do.
 */
export type Principal =
  | { readonly kind: 'session'; readonly userId: string; readonly sessionId: string }
  | {
      readonly kind: 'api_key';
      readonly id: string;
      readonly projectId: string;
      /** The admin who created the key; the key acts on their behalf, never beyond its role. */
      readonly userId: string;
      readonly role: Role;
      readonly scopes: Scopes;
    }
  | {
      readonly kind: 'ci_token';
      readonly id: string;
      readonly projectId: string;
      readonly userId: string;
      readonly scopes: Scopes;
    };

export type Resolution =
  | { readonly principal: Principal }
  | { readonly error: 'unauthenticated' | 'token_expired' | 'forbidden'; readonly message: string };

/**
 * Turns what a request presents into a principal. Implemented by the identity
 * domain; the pipeline only knows this interface.
 */
export interface CredentialResolver {
  /** A bearer token (`cek_…` / `ci_…`), already stripped of `Bearer `. */
  resolveBearer(bearer: string, now: Date): Promise<Resolution>;
  /**
   * The principal of a bearer token when `resolveBearer` would return it without
   * any work beyond the lookup (cached, unexpired, its last use recorded
   * recently); otherwise undefined, and the caller takes `resolveBearer`'s path.
   */
  cachedBearer(bearer: string, now: Date): Principal | undefined;
  /** The value of the session cookie. */
  resolveSession(token: string, now: Date): Promise<Resolution>;
}

export const SESSION_COOKIE = 'coffer_session';
