import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ready } from '@coffer/sdk';
import { SESSION_OR_BEARER } from '../../http/openapi.js';
import { listBody } from '../../http/pagination.js';
import { ok } from '../../http/schemas.js';
import { actorOf } from '../audit/audit.js';
import { ProjectIdParams } from '../../http/params.js';
import {
  ApiKeyList,
  ApiKeyListQuery,
  CiTokenList,
  CiTokenListQuery,
  CreateApiKeyBody,
  CreateCiTokenBody,
  CreatedApiKey,
  CreatedCiToken,
  TokenParams,
} from './tokens.schemas.js';
import type { TokensService } from './tokens.service.js';

const KEY_PART_NOTE =
  'The client generates the key part (a 32-byte seed that never reaches the server), derives the token’s X25519 and Ed25519 public keys from it, and seals each scoped environment’s key to the X25519 key. The server returns the bearer once; the credential to copy is `<bearer>.<key part>`.';

/** `/projects/{project_id}/api-keys` and `/projects/{project_id}/ci-tokens`. */
export async function tokensRoutes(
  app: FastifyInstance,
  { tokens: service }: { tokens: TokensService },
): Promise<void> {
  await ready(); // bearer generation and grant signature checks use libsodium
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/projects/:project_id/api-keys',
    {
      schema: {
        tags: ['api-keys'],
        summary: 'List API keys',
        operationId: 'listApiKeys',
        security: SESSION_OR_BEARER,
        description:
          'Admins. Revoked and expired keys are listed too (see `revoked_at`, `expires_at`). The bearer and its hash are never returned.',
        params: ProjectIdParams,
        querystring: ApiKeyListQuery,
        response: { 200: ApiKeyList },
      },
    },
    async (request) =>
      listBody(
        await service.listApiKeys(request.principal, request.params.project_id, request.query),
        request.query,
      ),
  );

  r.post(
    '/projects/:project_id/api-keys',
    {
      schema: {
        tags: ['api-keys'],
        summary: 'Create an API key',
        operationId: 'postApiKey',
        security: SESSION_OR_BEARER,
        description: `Admins (a signed-in admin, or an admin API key within its own scopes). The key's role is at most the creator's; a viewer key has no scopes. Scopes map environment ids or slugs to \`read\` or \`read_write\`; \`grants\` must hold exactly one environment-key grant per scoped environment at the current epoch, signed by the creator (422 otherwise, 409 \`stale_epoch\` after a re-key). ${KEY_PART_NOTE}`,
        params: ProjectIdParams,
        body: CreateApiKeyBody,
        response: { 201: CreatedApiKey },
      },
    },
    async (request, reply) => {
      const key = await service.createApiKey(
        actorOf(request),
        request.params.project_id,
        request.body,
      );
      return reply.code(201).send(ok(key));
    },
  );

  r.delete(
    '/projects/:project_id/api-keys/:id',
    {
      schema: {
        tags: ['api-keys'],
        summary: 'Revoke an API key',
        operationId: 'revokeApiKey',
        security: SESSION_OR_BEARER,
        description:
          'Admins. Takes effect immediately: the key is refused (401) from the next request, its environment-key grants are deleted, and the CI tokens it minted are revoked with it. Revoking a revoked key is a no-op (204).',
        params: TokenParams('apiKey'),
        response: { 204: Type.Null({ description: 'Revoked' }) },
      },
    },
    async (request, reply) => {
      await service.revokeApiKey(actorOf(request), request.params.project_id, request.params.id);
      return reply.code(204).send(null);
    },
  );

  r.get(
    '/projects/:project_id/ci-tokens',
    {
      schema: {
        tags: ['ci-tokens'],
        summary: 'List CI tokens',
        operationId: 'listCiTokens',
        security: SESSION_OR_BEARER,
        description:
          'Admins see every CI token of the project; developers and API keys see the tokens they minted.',
        params: ProjectIdParams,
        querystring: CiTokenListQuery,
        response: { 200: CiTokenList },
      },
    },
    async (request) =>
      listBody(
        await service.listCiTokens(request.principal, request.params.project_id, request.query),
        request.query,
      ),
  );

  r.post(
    '/projects/:project_id/ci-tokens',
    {
      schema: {
        tags: ['ci-tokens'],
        summary: 'Mint a CI token',
        operationId: 'postCiToken',
        security: SESSION_OR_BEARER,
        description: `Admins, developers and API keys with role developer or above. A CI token lives 1 hour, or \`ttl_seconds\` (60–3600), never longer, and never beyond its minting API key's expiry; it acts as a developer within its scopes. An API key can only mint within its own scopes, \`read_write\` only where it has \`read_write\`, and signs the grants with its own signing key. ${KEY_PART_NOTE}`,
        params: ProjectIdParams,
        body: CreateCiTokenBody,
        response: { 201: CreatedCiToken },
      },
    },
    async (request, reply) => {
      const token = await service.createCiToken(
        actorOf(request),
        request.params.project_id,
        request.body,
      );
      return reply.code(201).send(ok(token));
    },
  );

  r.delete(
    '/projects/:project_id/ci-tokens/:id',
    {
      schema: {
        tags: ['ci-tokens'],
        summary: 'Revoke a CI token',
        operationId: 'revokeCiToken',
        security: SESSION_OR_BEARER,
        description:
          'Admins revoke any CI token, developers and API keys those they minted, and a CI token itself. Takes effect immediately (401 from the next request).',
        params: TokenParams('ciToken'),
        response: { 204: Type.Null({ description: 'Revoked' }) },
      },
    },
    async (request, reply) => {
      await service.revokeCiToken(actorOf(request), request.params.project_id, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
