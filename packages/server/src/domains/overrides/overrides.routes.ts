import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { SESSION_ONLY, SESSION_OR_BEARER } from '../../http/openapi.js';
import { listBody } from '../../http/pagination.js';
import { ProjectRefParams } from '../../http/params.js';
import { DataEnvelope, ListEnvelope, ok } from '../../http/schemas.js';
import { actorOf } from '../audit/audit.js';
import type { OverridesService } from './overrides.service.js';
import {
  MemberOverrideListQuery,
  MemberOverridesParams,
  Override,
  OverrideListQuery,
  OverrideName_,
  OverrideParams,
  PutOverrideBody,
} from './overrides.schemas.js';

const tags = ['overrides'];
const OWN =
  'Signed-in members only (API keys and CI tokens get `403 forbidden`: they never see overrides). An override is your own value for a secret name in one environment, encrypted by your client under a key derived from your own X25519 private key (CRYPTO.md): no other member, admin or token can read it, and neither can the server.';

/** `/v1/projects/{p}/overrides`, `…/environments/{env}/overrides/{name}`, `…/members/{m}/overrides`. */
export async function overridesRoutes(
  app: FastifyInstance,
  { overrides: service }: { overrides: OverridesService },
): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/projects/:project_id/overrides',
    {
      schema: {
        tags,
        summary: 'List your personal overrides',
        operationId: 'listOverrides',
        security: SESSION_ONLY,
        description: `${OWN} Yours in every environment of the project, or in \`environment\` (id or slug). Sort by \`created_at\` (default), \`updated_at\` or \`name\`.`,
        params: ProjectRefParams,
        querystring: OverrideListQuery,
        response: { 200: ListEnvelope(Override) },
      },
    },
    async (request) =>
      listBody(
        await service.listMine(actorOf(request), request.params.project_id, request.query),
        request.query,
      ),
  );

  r.put(
    '/projects/:project_id/environments/:env/overrides/:name',
    {
      schema: {
        tags,
        summary: 'Set your personal override of a name',
        operationId: 'putOverride',
        security: SESSION_ONLY,
        description: `${OWN} Admins and developers (viewers read no values, so they override none). The name need not exist in the environment. \`201\` when created, \`200\` when its value was replaced. Audited as \`override.set\` (the name, never the value).`,
        params: OverrideParams,
        body: PutOverrideBody,
        response: { 200: DataEnvelope(Override), 201: DataEnvelope(Override) },
      },
    },
    async (request, reply) => {
      const { override, created } = await service.set(
        actorOf(request),
        request.params.project_id,
        request.params.env,
        request.params.name,
        request.body.value,
      );
      return reply.code(created ? 201 : 200).send(ok(override));
    },
  );

  r.delete(
    '/projects/:project_id/environments/:env/overrides/:name',
    {
      schema: {
        tags,
        summary: 'Remove your personal override of a name',
        operationId: 'deleteOverride',
        security: SESSION_ONLY,
        description: `${OWN} \`404\` when you hold no override of that name there. Audited as \`override.removed\`.`,
        params: OverrideParams,
        response: { 204: Type.Null({ description: 'Removed' }) },
      },
    },
    async (request, reply) => {
      await service.remove(
        actorOf(request),
        request.params.project_id,
        request.params.env,
        request.params.name,
      );
      return reply.code(204).send(null);
    },
  );

  r.get(
    '/projects/:project_id/members/:member_id/overrides',
    {
      schema: {
        tags,
        summary: "A member's overrides: names only",
        operationId: 'listMemberOverrides',
        security: SESSION_OR_BEARER,
        description:
          'Admins (and the member themselves, signed in): which names a member overrides in which environments, never a value. Overrides are deleted with the membership.',
        params: MemberOverridesParams,
        querystring: MemberOverrideListQuery,
        response: { 200: ListEnvelope(OverrideName_) },
      },
    },
    async (request) =>
      listBody(
        await service.namesOfMember(
          actorOf(request),
          request.params.project_id,
          request.params.member_id,
          request.query,
        ),
        request.query,
      ),
  );
}
