import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { SESSION_OR_BEARER } from '../../http/openapi.js';
import { listBody } from '../../http/pagination.js';
import { DataEnvelope, ListEnvelope, ok } from '../../http/schemas.js';
import { EnvironmentParams, ProjectRefParams } from '../../http/params.js';
import { actorOf } from '../audit/audit.js';
import type { EnvironmentsService } from './environments.service.js';
import {
  CreateEnvironmentBody,
  Environment,
  EnvironmentListQuery,
  UpdateEnvironmentBody,
} from './environments.schemas.js';

const tags = ['environments'];

/** `/v1/projects/{project_id}/environments[/{env}]`. */
export async function environmentsRoutes(
  app: FastifyInstance,
  { environments: service }: { environments: EnvironmentsService },
): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/projects/:project_id/environments',
    {
      schema: {
        tags,
        summary: 'List environments',
        operationId: 'listEnvironments',
        security: SESSION_OR_BEARER,
        description:
          'Every member and every token of the project sees every environment (names are metadata). Sort by `created_at` (default), `updated_at`, `name` or `slug`.',
        params: ProjectRefParams,
        querystring: EnvironmentListQuery,
        response: { 200: ListEnvelope(Environment) },
      },
    },
    async (request) =>
      listBody(
        await service.list(actorOf(request), request.params.project_id, request.query),
        request.query,
      ),
  );

  r.post(
    '/projects/:project_id/environments',
    {
      schema: {
        tags,
        summary: 'Create an environment',
        operationId: 'createEnvironment',
        security: SESSION_OR_BEARER,
        description:
          'Admins and developers (and API keys of those roles; CI tokens cannot). `slug` defaults to the name in lower case with hyphens; it must be unique in the project (`409 already_exists`).',
        params: ProjectRefParams,
        body: CreateEnvironmentBody,
        response: { 201: DataEnvelope(Environment) },
      },
    },
    async (request, reply) => {
      const environment = await service.create(
        actorOf(request),
        request.params.project_id,
        request.body,
      );
      return reply.code(201).send(ok(environment));
    },
  );

  r.get(
    '/projects/:project_id/environments/:env',
    {
      schema: {
        tags,
        summary: 'Get an environment',
        operationId: 'getEnvironment',
        security: SESSION_OR_BEARER,
        description: '`{env}` is the environment id or its slug.',
        params: EnvironmentParams,
        response: { 200: DataEnvelope(Environment) },
      },
    },
    async (request) =>
      ok(await service.get(actorOf(request), request.params.project_id, request.params.env)),
  );

  r.patch(
    '/projects/:project_id/environments/:env',
    {
      schema: {
        tags,
        summary: 'Rename an environment',
        operationId: 'updateEnvironment',
        security: SESSION_OR_BEARER,
        description:
          'Change `name` and/or `slug`. Admins and developers; an API key also needs `read_write` on the environment.',
        params: EnvironmentParams,
        body: UpdateEnvironmentBody,
        response: { 200: DataEnvelope(Environment) },
      },
    },
    async (request) =>
      ok(
        await service.update(
          actorOf(request),
          request.params.project_id,
          request.params.env,
          request.body,
        ),
      ),
  );

  r.delete(
    '/projects/:project_id/environments/:env',
    {
      schema: {
        tags,
        summary: 'Delete an environment and all its secrets',
        operationId: 'deleteEnvironment',
        security: SESSION_OR_BEARER,
        description:
          'Admins only (an admin API key also needs `read_write` on it). Permanently deletes the environment, **every secret in it with all their versions**, and the API-key and CI-token grants of its key. Cannot be undone.',
        params: EnvironmentParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      await service.remove(actorOf(request), request.params.project_id, request.params.env);
      return reply.code(204).send(null);
    },
  );
}
