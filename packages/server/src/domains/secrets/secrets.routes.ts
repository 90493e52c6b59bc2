import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { matchesIfNoneMatch } from '../../http/etag.js';
import { SESSION_OR_BEARER } from '../../http/openapi.js';
import { listBody } from '../../http/pagination.js';
import { DataEnvelope, ListEnvelope, ok } from '../../http/schemas.js';
import { actorOf } from '../audit/audit.js';
import { EnvironmentParams } from '../../http/params.js';
import { PUT_RESULT_SHAPE, REMOVE_RESULT_SHAPE, type SecretsService } from './secrets.service.js';
import {
  BatchBody,
  BatchResult,
  IfNoneMatchHeaders,
  PutSecretBody,
  RollbackBody,
  Secret,
  SecretListQuery,
  SecretParams,
  SecretVersion,
  VersionListQuery,
} from './secrets.schemas.js';

const tags = ['secrets'];
const JSON_TYPE = 'application/json; charset=utf-8';

const READERS =
  'Values are included for callers who may read them: admins and developers, API keys and CI tokens with `read` or `read_write` on the environment. Viewers and tokens without a scope on it get names and metadata only.';
const WRITE_ROLES =
  'Admins and developers; API keys (role developer or admin) and CI tokens with `read_write` on the environment.';
const WRITERS = `${WRITE_ROLES} Values must be encrypted under the vault’s current key epoch, otherwise \`409 version_conflict\` with \`details[0].issue = "stale_epoch"\` and \`current_epoch\`.`;

/** `/v1/projects/{project_id}/environments/{env}/secrets…` */
export async function secretsRoutes(
  app: FastifyInstance,
  { secrets: service }: { secrets: SecretsService },
): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/projects/:project_id/environments/:env/secrets';

  r.get(
    base,
    {
      schema: {
        tags,
        summary: 'List secrets',
        operationId: 'listSecretEnvelopes',
        security: SESSION_OR_BEARER,
        description: `${READERS} Sort by \`created_at\` (default), \`updated_at\` or \`name\`. Responses carry a strong \`ETag\`; send it back in \`If-None-Match\` to get \`304 Not Modified\` while nothing in the environment changed. Listings by tokens are audited (\`secrets.listed\`, names only).`,
        params: EnvironmentParams,
        querystring: SecretListQuery,
        headers: IfNoneMatchHeaders,
        response: {
          200: ListEnvelope(Secret),
          304: Type.Null({ description: 'Not Modified: the listing is unchanged since that ETag' }),
        },
      },
    },
    async (request, reply) => {
      const { listing, countRead } = await service.list(
        actorOf(request),
        request.params.project_id,
        request.params.env,
        request.query,
        (page) => String(reply.serialize(listBody(page, request.query))),
      );
      reply.header('etag', listing.etag);
      if (matchesIfNoneMatch(request.headers['if-none-match'], listing.etag)) {
        return (reply as FastifyReply).code(304).send(); // no body, no Content-Length
      }
      countRead(); // a 304 sends no value: only full listings count as reads
      // Already serialized through this route's response schema when it was cached.
      return (reply as FastifyReply).type(JSON_TYPE).send(listing.body);
    },
  );

  r.post(
    `${base}/batch`,
    {
      // One environment write: a repeat is recognised at its commit, and its result (the
      // body's value aside, which is not stored) is the secret's metadata: stored unsealed.
      config: { idempotencyAtCommit: true, idempotencyResultInClear: true },
      schema: {
        tags,
        summary: 'Write and delete many secrets at once',
        operationId: 'batchSecretEnvelopes',
        security: SESSION_OR_BEARER,
        description: `All or nothing, in one transaction (e.g. a \`.env\` import): at most 1,000 items in \`secrets\` and \`delete\` together. Any invalid item, stale \`expected_version\` or stale epoch rejects the whole batch and names the item (\`secrets.3.value\`, \`delete.0\`). ${WRITERS}`,
        params: EnvironmentParams,
        body: BatchBody,
        response: { 200: DataEnvelope(BatchResult) },
      },
    },
    async (request) =>
      ok(
        await service.batch(
          actorOf(request),
          request.params.project_id,
          request.params.env,
          request.body,
        ),
      ),
  );

  r.get(
    `${base}/:name`,
    {
      schema: {
        tags,
        summary: 'Get a secret with its value',
        operationId: 'getSecretEnvelope',
        security: SESSION_OR_BEARER,
        description:
          'Readers only (`403` for viewers and tokens without a scope on the environment). Reads by tokens are audited (`secret.read`).',
        params: SecretParams,
        response: { 200: DataEnvelope(Secret) },
      },
    },
    async (request, reply) => {
      const { project_id, env, name } = request.params;
      const body = await service.get(actorOf(request), project_id, env, name, (secret) =>
        String(reply.serialize(ok(secret))),
      );
      // Already serialized through this route's response schema (once per cached read).
      return (reply as FastifyReply).type(JSON_TYPE).send(body);
    },
  );

  r.put(
    `${base}/:name`,
    {
      // One environment write: a repeat is recognised at its commit, and its result (the
      // body's value aside, which is not stored) is the secret's metadata: stored unsealed,
      // by position.
      config: { idempotencyAtCommit: true, idempotencyResultShape: PUT_RESULT_SHAPE },
      schema: {
        tags,
        summary: 'Create or update a secret',
        operationId: 'putSecretEnvelope',
        security: SESSION_OR_BEARER,
        description: `\`201\` when created, \`200\` when updated (a new version). \`expected_version\` guards against lost updates (\`0\`: must not exist yet). An omitted \`comment\` keeps the current one. ${WRITERS}`,
        params: SecretParams,
        body: PutSecretBody,
        response: { 200: DataEnvelope(Secret), 201: DataEnvelope(Secret) },
      },
    },
    async (request, reply) => {
      const { project_id, env, name } = request.params;
      const { secret, created } = await service.put(
        actorOf(request),
        project_id,
        env,
        name,
        request.body,
      );
      return reply.code(created ? 201 : 200).send(ok(secret));
    },
  );

  r.delete(
    `${base}/:name`,
    {
      // One environment write: a repeat is recognised at its commit, and its result (the
      // body's value aside, which is not stored) is the secret's metadata: stored unsealed.
      config: { idempotencyAtCommit: true, idempotencyResultShape: REMOVE_RESULT_SHAPE },
      schema: {
        tags,
        summary: 'Delete a secret and all its versions',
        operationId: 'deleteSecret',
        security: SESSION_OR_BEARER,
        description: WRITE_ROLES,
        params: SecretParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const { project_id, env, name } = request.params;
      await service.remove(actorOf(request), project_id, env, name);
      return reply.code(204).send(null);
    },
  );

  r.get(
    `${base}/:name/versions`,
    {
      schema: {
        tags,
        summary: 'List the versions of a secret',
        operationId: 'listSecretVersions',
        security: SESSION_OR_BEARER,
        description: `Every version the secret has had, newest first by default (sort \`created_at\` or \`version\`). ${READERS}`,
        params: SecretParams,
        querystring: VersionListQuery,
        response: { 200: ListEnvelope(SecretVersion) },
      },
    },
    async (request) => {
      const { project_id, env, name } = request.params;
      const page = await service.versions(actorOf(request), project_id, env, name, request.query);
      return listBody(page, request.query);
    },
  );

  r.post(
    `${base}/:name/rollback`,
    {
      // One environment write: a repeat is recognised at its commit (http/idempotency.ts).
      // Its result holds an earlier version's ciphertext, which the body does not: sealed.
      config: { idempotencyAtCommit: true },
      schema: {
        tags,
        summary: 'Roll a secret back to an earlier version',
        operationId: 'rollbackSecretEnvelope',
        security: SESSION_OR_BEARER,
        description: `Writes the value of \`version\` again as a new version. Only versions encrypted under the current key epoch can be restored (\`409 version_conflict\`, issue \`stale_epoch\`, otherwise: after a re-key every version is re-encrypted, so this only affects versions written during a race). ${WRITE_ROLES}`,
        params: SecretParams,
        body: RollbackBody,
        response: { 200: DataEnvelope(Secret) },
      },
    },
    async (request) => {
      const { project_id, env, name } = request.params;
      return ok(await service.rollback(actorOf(request), project_id, env, name, request.body));
    },
  );
}
