import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { NO_CREDENTIAL, OPTIONAL_SESSION, SESSION_ONLY } from '../../http/openapi.js';
import { SESSION_COOKIE } from '../../http/principal.js';
import { listBody } from '../../http/pagination.js';
import { ok } from '../../http/schemas.js';
import { actorOf } from '../audit/audit.js';
import { SESSION_LIFETIME_MS, type IdentityService, type Requester } from './identity.service.js';
import {
  ChangePasswordBody,
  LoginBody,
  LoginResponse,
  MeResponse,
  MyKeysResponse,
  PreloginBody,
  PreloginResponse,
  RecoveryKeysBody,
  RecoveryKeysResponse,
  RecoveryResetBody,
  SessionList,
  SessionListQuery,
  SessionParams,
  SignupBody,
  SignupResponse,
} from './identity.schemas.js';

const COOKIE_ATTRIBUTES = 'HttpOnly; Secure; SameSite=Strict; Path=/';
const sessionCookie = (token: string) =>
  `${SESSION_COOKIE}=${token}; ${COOKIE_ATTRIBUTES}; Max-Age=${SESSION_LIFETIME_MS / 1000}`;
const clearedCookie = () => `${SESSION_COOKIE}=; ${COOKIE_ATTRIBUTES}; Max-Age=0`;

/** Auth routes share the per-IP auth budget, and a stale cookie never blocks them. */
const AUTH_ROUTE = { rateClass: 'auth', ignoreInvalidSession: true } as const;
const AUTH_TAGS = ['auth'];
const ME_TAGS = ['me'];
const NO_CONTENT = { 204: { type: 'null', description: 'No content' } };

const requesterOf = (request: FastifyRequest): Requester => ({
  ip: request.ip ?? null,
  userAgent: request.headers['user-agent'] ?? null,
});

const noContent = (reply: FastifyReply) => reply.code(204).send();

/** Sign-up, login and sessions, password change and recovery. The password never reaches this server. */
export async function identityRoutes(
  app: FastifyInstance,
  { identity }: { identity: IdentityService },
): Promise<void> {
  app.post(
    '/auth/prelogin',
    {
      config: AUTH_ROUTE,
      schema: {
        tags: AUTH_TAGS,
        summary: 'Key-derivation parameters for an e-mail address',
        operationId: 'prelogin',
        security: NO_CREDENTIAL,
        description:
          'Returns the Argon2id parameters and salt the client derives the master key with. An e-mail without an account gets fake parameters of the same shape, stable across calls and server instances, so this endpoint does not reveal who has an account.',
        body: PreloginBody,
        response: { 200: PreloginResponse },
      },
    },
    async (request) => ok(await identity.prelogin((request.body as PreloginBody).email)),
  );

  app.post(
    '/auth/signup',
    {
      config: AUTH_ROUTE,
      schema: {
        tags: AUTH_TAGS,
        summary: 'Create an account',
        operationId: 'signUp',
        security: NO_CREDENTIAL,
        description:
          'The client generates its X25519 and Ed25519 key pairs, KDF parameters and recovery key, and sends only public keys, the private keys wrapped twice (under the password wrap key and the recovery wrap key) and the two auth keys, which are stored hashed. Does not log in. `SIGNUP_POLICY=invite` requires `invitation_token` (403 `forbidden` without a valid one), except for the first user of an empty instance. 409 `already_exists` for an e-mail that has an account.',
        body: SignupBody,
        response: { 201: SignupResponse },
      },
    },
    async (request, reply) =>
      reply.code(201).send(ok(await identity.signUp(request.body as SignupBody, actorOf(request)))),
  );

  app.post(
    '/auth/login',
    {
      config: AUTH_ROUTE,
      schema: {
        tags: AUTH_TAGS,
        summary: 'Log in with the auth key; sets the session cookie',
        operationId: 'logIn',
        security: NO_CREDENTIAL,
        description:
          'Checks the auth key derived from the password and sets the `coffer_session` cookie (HttpOnly, Secure, SameSite=Strict, 30 days). Returns the password-wrapped private keys for the client to unwrap. A wrong password and an unknown e-mail give the same 401 `unauthenticated`.',
        body: LoginBody,
        response: { 200: LoginResponse },
      },
    },
    async (request, reply) => {
      const { token, ...result } = await identity.logIn(
        request.body as LoginBody,
        requesterOf(request),
      );
      reply.header('set-cookie', sessionCookie(token));
      return ok(result);
    },
  );

  app.post(
    '/auth/logout',
    {
      config: AUTH_ROUTE,
      schema: {
        tags: AUTH_TAGS,
        summary: 'End the current session and clear the cookie',
        operationId: 'logOut',
        security: OPTIONAL_SESSION,
        description:
          'Deletes the session server-side; the cookie no longer authenticates anywhere. Always 204, also without a (valid) session.',
        response: NO_CONTENT,
      },
    },
    async (request, reply) => {
      await identity.logOut(request.principal);
      reply.header('set-cookie', clearedCookie());
      return noContent(reply);
    },
  );

  app.post(
    '/auth/recovery/keys',
    {
      config: AUTH_ROUTE,
      schema: {
        tags: AUTH_TAGS,
        summary: 'Recovery-wrapped private keys, for a caller proving the recovery key',
        operationId: 'getRecoveryKeys',
        security: NO_CREDENTIAL,
        description:
          'For a forgotten password: the client derives the recovery auth key from the recovery key and gets back the private keys wrapped under the recovery wrap key, to unwrap and re-wrap under a new password (see `POST /v1/auth/recovery/reset`). A wrong recovery key and an unknown e-mail give the same 401 `unauthenticated`.',
        body: RecoveryKeysBody,
        response: { 200: RecoveryKeysResponse },
      },
    },
    async (request) => ok(await identity.recoveryKeys(request.body as RecoveryKeysBody)),
  );

  app.post(
    '/auth/recovery/reset',
    {
      config: AUTH_ROUTE,
      schema: {
        tags: AUTH_TAGS,
        summary: 'Set a new password with the recovery key',
        operationId: 'resetPassword',
        security: NO_CREDENTIAL,
        description:
          'Replaces the KDF parameters, auth key and password-wrapped private keys, proven by the recovery auth key. Ends every session of the user and records `user.password_recovered` in the audit log. The recovery key stays valid. Log in afterwards.',
        body: RecoveryResetBody,
        response: NO_CONTENT,
      },
    },
    async (request, reply) => {
      await identity.recoveryReset(request.body as RecoveryResetBody, actorOf(request));
      return noContent(reply);
    },
  );

  app.get(
    '/me',
    {
      schema: {
        tags: ME_TAGS,
        summary: 'The signed-in user',
        operationId: 'me',
        description: 'Needs a user session (403 `forbidden` for API keys and CI tokens).',
        security: SESSION_ONLY,
        response: { 200: MeResponse },
      },
    },
    async (request) => ok(await identity.me(request.principal)),
  );

  app.get(
    '/me/keys',
    {
      schema: {
        tags: ME_TAGS,
        summary: "The signed-in user's wrapped private keys and KDF parameters",
        operationId: 'getMyKeys',
        description:
          'What a client with a live session needs to unlock its keys again (e.g. the dashboard after a reload): derive the wrap key from the password with `kdf_params` and unwrap `wrapped_private_keys`.',
        security: SESSION_ONLY,
        response: { 200: MyKeysResponse },
      },
    },
    async (request) => ok(await identity.myKeys(request.principal)),
  );

  app.get(
    '/me/sessions',
    {
      schema: {
        tags: ME_TAGS,
        summary: "The signed-in user's live sessions",
        operationId: 'sessions',
        description:
          '`current` marks the session of this request. Sortable by created_at, last_used_at, expires_at. `last_used_at` is updated at most once a minute.',
        security: SESSION_ONLY,
        querystring: SessionListQuery,
        response: { 200: SessionList },
      },
    },
    async (request) => {
      const query = request.query as SessionListQuery;
      return listBody(await identity.listSessions(request.principal, query), query);
    },
  );

  app.delete(
    '/me/sessions/:session_id',
    {
      schema: {
        tags: ME_TAGS,
        summary: 'End one of your sessions',
        operationId: 'revokeSession',
        description:
          '204; 404 `not_found` for a session that is not yours. Ending the current session also clears its cookie.',
        security: SESSION_ONLY,
        params: SessionParams,
        response: NO_CONTENT,
      },
    },
    async (request, reply) => {
      const { session_id } = request.params as { session_id: string };
      if (await identity.revokeSession(request.principal, session_id))
        reply.header('set-cookie', clearedCookie());
      return noContent(reply);
    },
  );

  app.put(
    '/me/password',
    {
      config: { rateClass: 'auth' },
      schema: {
        tags: ME_TAGS,
        summary: 'Change the password',
        operationId: 'changePassword',
        description:
          'Proves the current password with `current_auth_key` (403 `forbidden` if wrong) and stores the new KDF parameters, auth key and private keys re-wrapped under the new password wrap key. Ends every other session of the user; the current one stays.',
        security: SESSION_ONLY,
        body: ChangePasswordBody,
        response: NO_CONTENT,
      },
    },
    async (request, reply) => {
      await identity.changePassword(
        request.principal,
        request.body as ChangePasswordBody,
        actorOf(request),
      );
      return noContent(reply);
    },
  );
}
