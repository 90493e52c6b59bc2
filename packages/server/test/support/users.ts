import { randomBytes } from 'node:crypto';
import {
  derivePasswordKeys,
  prepareSignUp,
  ready,
  type KdfParams,
  type UserKeys,
} from '@coffer/sdk';
import type { TestApp } from './app.js';

/** Cheap Argon2id for tests (the test app's KDF floor is lowered to allow it). */
export const TEST_KDF_COST = { ops_limit: 2, mem_limit_kib: 8192 } as const;

export interface TestUser {
  id: string;
  email: string;
  name: string;
  password: string;
  /** `coffer_session=…`, for the `cookie` header. */
  cookie: string;
  /** Headers for cookie-authenticated requests, unsafe ones included (`Origin` matches). */
  headers: { cookie: string; origin: string };
  sessionId: string;
  /** The unwrapped key pairs, as the SDK's crypto returns them (`publicKey` / `secretKey`). */
  keys: UserKeys;
  /** The recovery key as shown to the user (`CRK-…`). */
  recoveryKey: string;
}

export const uniqueEmail = (prefix = 'user') =>
  `${prefix}-${randomBytes(6).toString('hex')}@example.test`;

/** The Origin the test app accepts for cookie-authenticated unsafe requests. */
export const originOf = (t: TestApp) => new URL(t.config.publicUrl).origin;

/** The `coffer_session` cookie pair from a response's `Set-Cookie`, if any. */
export function sessionCookieOf(headers: Record<string, unknown>): string | undefined {
  const raw = headers['set-cookie'];
  const all = Array.isArray(raw) ? raw : raw === undefined ? [] : [String(raw)];
  for (const cookie of all as string[]) {
    const pair = cookie.split(';')[0]!;
    if (pair.startsWith('coffer_session=') && pair !== 'coffer_session=') return pair;
  }
  return undefined;
}

/**
 * Signs up and logs in through the real routes with the SDK's crypto, as a
 * client would: only public keys, wrapped private keys and auth keys are sent.
 * Throws with the response body when either step fails.
 *
 * `emailVerified` (default `true`) marks the address verified in the database
 * after the real sign-up: it stands for a user who has already proven their
 * address with an invitation link, so tests about other things can invite and
 * accept without a mailbox. Tests of the verification itself pass `false` or
 * sign up with `invitationToken`.
 */
export async function signUp(
  t: TestApp,
  opts: {
    email?: string;
    name?: string;
    password?: string;
    invitationToken?: string;
    emailVerified?: boolean;
  } = {},
): Promise<TestUser> {
  await ready();
  const email = opts.email ?? uniqueEmail();
  const name = opts.name ?? `Test ${email.split('@')[0]}`;
  const password = opts.password ?? `pw-${randomBytes(9).toString('base64url')}`;
  const { body, keys, recoveryKey } = prepareSignUp({
    email,
    name,
    password,
    kdfCost: TEST_KDF_COST,
    ...(opts.invitationToken !== undefined ? { invitationToken: opts.invitationToken } : {}),
  });

  const signup = await t.request({ method: 'POST', url: '/v1/auth/signup', body });
  if (signup.statusCode !== 201)
    throw new Error(`sign-up failed: ${signup.statusCode} ${signup.body}`);
  if (opts.emailVerified ?? true) {
    const { id } = (signup.data as { data: { user: { id: string } } }).data.user;
    await t.testDb.db.kysely
      .updateTable('users')
      .set({ email_verified: 1 })
      .where('id', '=', id)
      .execute();
  }
  const login = await t.request({
    method: 'POST',
    url: '/v1/auth/login',
    body: { email, auth_key: body.auth_key },
  });
  const cookie = sessionCookieOf(login.headers);
  if (login.statusCode !== 200 || !cookie)
    throw new Error(`login failed: ${login.statusCode} ${login.body}`);
  const data = (
    login.data as { data: { user: { id: string; email: string }; session: { id: string } } }
  ).data;
  return {
    id: data.user.id,
    email: data.user.email,
    name,
    password,
    cookie,
    headers: { cookie, origin: originOf(t) },
    sessionId: data.session.id,
    keys,
    recoveryKey,
  };
}

/**
 * Logs in as a client does (prelogin, Argon2id, only the auth key is sent).
 * Returns the raw response, and the session cookie and the password wrap key
 * when it succeeded.
 */
export async function logIn(t: TestApp, email: string, password: string) {
  await ready();
  const pre = await t.request({ method: 'POST', url: '/v1/auth/prelogin', body: { email } });
  const kdfParams = (pre.data as { data: { kdf_params: KdfParams } }).data.kdf_params;
  const { authKey, wrapKey } = derivePasswordKeys(password, kdfParams);
  const res = await t.request({
    method: 'POST',
    url: '/v1/auth/login',
    body: { email, auth_key: authKey },
  });
  const cookie = sessionCookieOf(res.headers);
  const session =
    res.statusCode === 200
      ? (res.data as { data: { session: { id: string } } }).data.session
      : null;
  return {
    res,
    wrapKey,
    cookie: cookie ?? null,
    sessionId: session?.id ?? null,
    headers: cookie ? { cookie, origin: originOf(t) } : null,
  };
}
