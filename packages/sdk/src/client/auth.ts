import {
  MIN_KDF_PARAMS,
  assertKdfParamsStrength,
  derivePasswordKeys,
  deriveRecoveryKeys,
  generateKdfParams,
  generateRecoveryKey,
  generateUserKeys,
  parseRecoveryKey,
  ready,
  toBase64url,
  unwrapPrivateKeys,
  wrapPrivateKeys,
  type KdfParams,
  type UserKeys,
} from '../crypto/index.js';
import { apiPath, type CofferClient, type Page } from './http.js';

// The password never leaves this file: the server gets an auth key derived from
// it (HKDF of the Argon2id master key) and private keys wrapped under another
// key derived from it. See CRYPTO.md.

export interface User {
  id: string;
  email: string;
  name: string;
  email_verified: boolean;
  /** X25519, base64url */
  public_key: string;
  /** Ed25519, base64url */
  signing_public_key: string;
  created_at: string;
}

export interface Session {
  id: string;
  created_at: string;
  last_used_at: string;
  expires_at: string;
  ip: string | null;
  user_agent: string | null;
  /** The session this client is using. */
  current: boolean;
}

/** Argon2id cost chosen for new or changed passwords (defaults: DEFAULT_KDF_PARAMS). */
export type KdfCost = Partial<Pick<KdfParams, 'ops_limit' | 'mem_limit_kib'>>;

/** The weakest KDF parameters the client accepts from a server (default: OWASP's floor). */
export type KdfMinimum = { ops_limit: number; mem_limit_kib: number };

export interface LoggedIn {
  user: User;
  /** The unwrapped private keys: keep them in memory or a 0600 file, never send them anywhere. */
  keys: UserKeys;
  session: { id: string; expires_at: string };
}

/** What the server stores for a new password: parameters, auth key, wrapped keys. */
interface PasswordMaterial {
  kdf_params: KdfParams;
  auth_key: string;
  wrapped_private_keys: string;
}

function passwordMaterial(keys: UserKeys, password: string, cost: KdfCost = {}): PasswordMaterial {
  const kdfParams = generateKdfParams(cost);
  const { authKey, wrapKey } = derivePasswordKeys(password, kdfParams);
  return {
    kdf_params: kdfParams,
    auth_key: authKey,
    wrapped_private_keys: wrapPrivateKeys(keys, wrapKey, 'password'),
  };
}

export interface SignUpInput {
  email: string;
  name: string;
  password: string;
  /** The token from an invitation e-mail (required on invite-only servers). */
  invitationToken?: string;
  kdfCost?: KdfCost;
}

export interface SignUpRequest extends PasswordMaterial {
  email: string;
  name: string;
  recovery_auth_key: string;
  recovery_wrapped_private_keys: string;
  public_key: string;
  signing_public_key: string;
  invitation_token?: string;
}

/**
 * The client side of sign-up, without the network: fresh key pairs, KDF
 * parameters, the recovery key and the request body. Call `ready()` first.
 */
export function prepareSignUp(input: SignUpInput): {
  body: SignUpRequest;
  keys: UserKeys;
  recoveryKey: string;
} {
  const keys = generateUserKeys();
  const recovery = generateRecoveryKey();
  const recoveryKeys = deriveRecoveryKeys(recovery.bytes);
  const body: SignUpRequest = {
    email: input.email,
    name: input.name,
    ...passwordMaterial(keys, input.password, input.kdfCost),
    recovery_auth_key: recoveryKeys.authKey,
    recovery_wrapped_private_keys: wrapPrivateKeys(keys, recoveryKeys.wrapKey, 'recovery'),
    public_key: toBase64url(keys.encryption.publicKey),
    signing_public_key: toBase64url(keys.signing.publicKey),
    ...(input.invitationToken !== undefined ? { invitation_token: input.invitationToken } : {}),
  };
  return { body, keys, recoveryKey: recovery.text };
}

interface LoginResponse {
  user: User;
  kdf_params: KdfParams;
  wrapped_private_keys: string;
  session: { id: string; expires_at: string };
}

/**
 * Creates the account and logs in. `recoveryKey` must be shown to the user once
 * (it restores access after a forgotten password); it is not stored anywhere.
 */
export async function signUp(
  client: CofferClient,
  input: SignUpInput,
): Promise<LoggedIn & { recoveryKey: string }> {
  await ready();
  const { body, keys, recoveryKey } = prepareSignUp(input);
  await client.request<{ user: User }>('POST', '/v1/auth/signup', { body });
  const login = await client.request<LoginResponse>('POST', '/v1/auth/login', {
    body: { email: input.email, auth_key: body.auth_key },
  });
  return { user: login.user, keys, session: login.session, recoveryKey };
}

export async function prelogin(client: CofferClient, email: string): Promise<KdfParams> {
  const data = await client.request<{ kdf_params: KdfParams }>('POST', '/v1/auth/prelogin', {
    body: { email },
  });
  return data.kdf_params;
}

/**
 * Logs in and unwraps the private keys. Refuses KDF parameters weaker than
 * `minimumKdf`, so a hostile server cannot make the auth key cheap to crack.
 */
export async function logIn(
  client: CofferClient,
  input: { email: string; password: string; minimumKdf?: KdfMinimum },
): Promise<LoggedIn> {
  await ready();
  const kdfParams = await prelogin(client, input.email);
  assertKdfParamsStrength(kdfParams, input.minimumKdf ?? MIN_KDF_PARAMS);
  const { authKey, wrapKey } = derivePasswordKeys(input.password, kdfParams);
  const login = await client.request<LoginResponse>('POST', '/v1/auth/login', {
    body: { email: input.email, auth_key: authKey },
  });
  const keys = unwrapPrivateKeys(login.wrapped_private_keys, wrapKey, 'password');
  return { user: login.user, keys, session: login.session };
}

/** Ends the session on the server and forgets it locally. */
export async function logOut(client: CofferClient): Promise<void> {
  await client.request<void>('POST', '/v1/auth/logout');
  client.setSession(null);
}

export const me = (client: CofferClient) => client.request<User>('GET', '/v1/me');

interface MyKeys {
  kdf_params: KdfParams;
  wrapped_private_keys: string;
  /** X25519, base64url: the public halves of the wrapped keys. */
  public_key: string;
  /** Ed25519, base64url */
  signing_public_key: string;
}

/**
 * Unwraps the private keys again with the password, for a client that still has
 * a session but lost its keys (a reloaded dashboard). Throws CryptoError
 * `decryption_failed` for a wrong password.
 */
export async function unlockKeys(
  client: CofferClient,
  input: { password: string; minimumKdf?: KdfMinimum },
): Promise<UserKeys> {
  await ready();
  const mine = await client.request<MyKeys>('GET', '/v1/me/keys');
  assertKdfParamsStrength(mine.kdf_params, input.minimumKdf ?? MIN_KDF_PARAMS);
  const { wrapKey } = derivePasswordKeys(input.password, mine.kdf_params);
  return unwrapPrivateKeys(mine.wrapped_private_keys, wrapKey, 'password');
}

export const sessions = (
  client: CofferClient,
  query: {
    page?: number;
    per_page?: number;
    sort?: 'created_at' | 'last_used_at' | 'expires_at';
    order?: 'asc' | 'desc';
  } = {},
): Promise<Page<Session>> => client.requestPage<Session>('GET', '/v1/me/sessions', { query });

export async function revokeSession(client: CofferClient, sessionId: string): Promise<void> {
  await client.request<void>('DELETE', apiPath`/v1/me/sessions/${sessionId}`);
}

/**
 * Re-wraps the private keys under a new password. The server ends every other
 * session. Throws CryptoError `decryption_failed` when `currentPassword` is
 * wrong (checked locally before anything is sent).
 */
export async function changePassword(
  client: CofferClient,
  input: {
    currentPassword: string;
    newPassword: string;
    kdfCost?: KdfCost;
    minimumKdf?: KdfMinimum;
  },
): Promise<UserKeys> {
  await ready();
  const mine = await client.request<MyKeys>('GET', '/v1/me/keys');
  assertKdfParamsStrength(mine.kdf_params, input.minimumKdf ?? MIN_KDF_PARAMS);
  const current = derivePasswordKeys(input.currentPassword, mine.kdf_params);
  const keys = unwrapPrivateKeys(mine.wrapped_private_keys, current.wrapKey, 'password');
  await client.request<void>('PUT', '/v1/me/password', {
    body: {
      current_auth_key: current.authKey,
      ...passwordMaterial(keys, input.newPassword, input.kdfCost),
    },
  });
  return keys;
}

/**
 * A forgotten password: proves the recovery key, unwraps the private keys with
 * it, sets a new password (the server ends every session) and logs in.
 */
export async function recoverAccount(
  client: CofferClient,
  input: { email: string; recoveryKey: string; newPassword: string; kdfCost?: KdfCost },
): Promise<LoggedIn> {
  await ready();
  const recovery = deriveRecoveryKeys(parseRecoveryKey(input.recoveryKey));
  const { recovery_wrapped_private_keys } = await client.request<{
    recovery_wrapped_private_keys: string;
  }>('POST', '/v1/auth/recovery/keys', {
    body: { email: input.email, recovery_auth_key: recovery.authKey },
  });
  const keys = unwrapPrivateKeys(recovery_wrapped_private_keys, recovery.wrapKey, 'recovery');
  const material = passwordMaterial(keys, input.newPassword, input.kdfCost);
  await client.request<void>('POST', '/v1/auth/recovery/reset', {
    body: { email: input.email, recovery_auth_key: recovery.authKey, ...material },
  });
  const login = await client.request<LoginResponse>('POST', '/v1/auth/login', {
    body: { email: input.email, auth_key: material.auth_key },
  });
  return { user: login.user, keys, session: login.session };
}
