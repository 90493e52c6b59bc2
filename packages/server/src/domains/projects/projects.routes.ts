import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { SESSION_ONLY, SESSION_OR_BEARER } from '../../http/openapi.js';
import { listBody } from '../../http/pagination.js';
import { ok } from '../../http/schemas.js';
import { actorOf } from '../audit/audit.js';
import { refuseBodyFields } from '../../http/no-body.js';
import { ProjectParams } from '../../http/params.js';
import {
  CreateProjectBody,
  ListProjectsQuery,
  ProjectListResponse,
  ProjectResponse,
  UpdateProjectBody,
} from './projects.schemas.js';
import type { ProjectsService } from './projects.service.js';

const tags = ['projects'];

/** `/v1/projects`: list, create, read, change, delete. */
export async function projectsRoutes(
  app: FastifyInstance,
  { projects }: { projects: ProjectsService },
): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/projects',
    {
      schema: {
        tags,
        summary: 'List your projects',
        operationId: 'listProjects',
        security: SESSION_OR_BEARER,
        description:
          'Projects where the caller is an active member. An API key or CI token sees only the project it belongs to. `sort`: created_at (default), name (case-insensitive), updated_at; ties break on id.',
        querystring: ListProjectsQuery,
        response: { 200: ProjectListResponse },
      },
    },
    async (request) => {
      return listBody(await projects.list(request.principal, request.query), request.query);
    },
  );

  r.post(
    '/projects',
    {
      schema: {
        tags,
        summary: 'Create a project',
        operationId: 'createProject',
        security: SESSION_ONLY,
        description:
          'Signed-in users only (not API keys or CI tokens). The creator becomes its first admin; the environments development, staging and production are created with it.',
        body: CreateProjectBody,
        response: { 201: ProjectResponse },
      },
    },
    async (request, reply) => {
      reply.code(201);
      return ok(await projects.create(actorOf(request), request.body));
    },
  );

  r.get(
    '/projects/:project_id',
    {
      schema: {
        tags,
        summary: 'Get a project',
        operationId: 'getProject',
        security: SESSION_OR_BEARER,
        description: 'Any member, API key or CI token of the project. Non-members get 404.',
        params: ProjectParams,
        response: { 200: ProjectResponse },
      },
    },
    async (request) => ok(await projects.get(request.principal, request.params.project_id)),
  );

  r.patch(
    '/projects/:project_id',
    {
      schema: {
        tags,
        summary: 'Change a project’s name or description',
        operationId: 'updateProject',
        security: SESSION_OR_BEARER,
        description: 'Admins (and admin API keys).',
        params: ProjectParams,
        body: UpdateProjectBody,
        response: { 200: ProjectResponse },
      },
    },
    async (request) =>
      ok(await projects.update(actorOf(request), request.params.project_id, request.body)),
  );

  r.delete(
    '/projects/:project_id',
    {
      preValidation: refuseBodyFields,
      schema: {
        tags,
        summary: 'Delete a project and everything in it',
        operationId: 'deleteProject',
        security: SESSION_ONLY,
        description:
          'Signed-in admins only: irreversible, so API keys cannot do it. Environments, secrets, members, grants, API keys and CI tokens go with the project; its audit events stay.',
        params: ProjectParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      await projects.remove(actorOf(request), request.params.project_id);
      return reply.code(204).send(null);
    },
  );
}
