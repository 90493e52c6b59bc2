import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { SESSION_OR_BEARER } from '../../http/openapi.js';
import { listBody } from '../../http/pagination.js';
import { ok } from '../../http/schemas.js';
import { actorOf } from '../audit/audit.js';
import { refuseBodyFields } from '../../http/no-body.js';
import { ProjectParams } from '../../http/params.js';
import {
  InviteBody,
  InvitedMemberResponse,
  ListMembersQuery,
  MemberListResponse,
  MemberParams,
  UpdateMemberBody,
  UpdatedMemberResponse,
} from './members.schemas.js';
import type { MembersService } from './members.service.js';

const tags = ['members'];

/** The four member operations of the spec (Form A): invite, list, change role, remove. */
export async function membersRoutes(
  app: FastifyInstance,
  { members }: { members: MembersService },
): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/projects/:project_id/members',
    {
      schema: {
        tags,
        summary: 'Invite a member',
        operationId: 'inviteMember',
        security: SESSION_OR_BEARER,
        description:
          'Admins only. Creates a `pending` member and e-mails the invitee a link with a one-time token (`/invite?token=…`), which only that mailbox receives: signing up with it, or accepting with it, proves the address (an unverified account cannot accept without it). An address without an account gets a user id right away (name = the part of the e-mail before "@" until they sign up). `409 already_member` if the user is already a pending or active member; a declined or expired (`revoked`) invitation can be renewed this way.',
        params: ProjectParams,
        body: InviteBody,
        response: { 201: InvitedMemberResponse },
      },
    },
    async (request, reply) => {
      reply.code(201);
      return ok(await members.invite(actorOf(request), request.params.project_id, request.body));
    },
  );

  r.get(
    '/projects/:project_id/members',
    {
      schema: {
        tags,
        summary: 'List members',
        operationId: 'listMembers',
        security: SESSION_OR_BEARER,
        description:
          'Any member and any API key of the project (CI tokens: 403). Filters `role`, `status`. `sort`: created_at (default), joined_at, invited_at, role, status, email, name (e-mail and name case-insensitive; missing dates last); ties break on member id in the same `order`. Active members carry `joined_at`, pending and revoked ones `invited_at`.',
        params: ProjectParams,
        querystring: ListMembersQuery,
        response: { 200: MemberListResponse },
      },
    },
    async (request) => {
      const page = await members.list(request.principal, request.params.project_id, request.query);
      return listBody(page, request.query);
    },
  );

  r.patch(
    '/projects/:project_id/members/:member_id',
    {
      schema: {
        tags,
        summary: 'Change a member’s role',
        operationId: 'updateMemberRole',
        security: SESSION_OR_BEARER,
        description:
          'Admins only. The last active admin cannot be demoted (`422 last_admin`). Demoting to viewer removes the member’s vault grants.',
        params: MemberParams,
        body: UpdateMemberBody,
        response: { 200: UpdatedMemberResponse },
      },
    },
    async (request) =>
      ok(
        await members.changeRole(
          actorOf(request),
          request.params.project_id,
          request.params.member_id,
          request.body.role,
        ),
      ),
  );

  r.delete(
    '/projects/:project_id/members/:member_id',
    {
      preValidation: refuseBodyFields,
      schema: {
        tags,
        summary: 'Remove a member',
        operationId: 'removeMember',
        security: SESSION_OR_BEARER,
        description:
          'Admins only; any status (withdraws a pending invitation). The last active admin cannot be removed (`422 last_admin`). Removing an admin or developer marks the vault `rekey_recommended`; the member’s grants go, and the API keys and CI tokens they created are revoked with their grants. A second DELETE is 404.',
        params: MemberParams,
        response: { 204: Type.Null({ description: 'Removed' }) },
      },
    },
    async (request, reply) => {
      await members.remove(actorOf(request), request.params.project_id, request.params.member_id);
      return reply.code(204).send(null);
    },
  );
}
