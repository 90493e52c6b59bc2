import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { SESSION_ONLY } from '../../../http/openapi.js';
import { listBody } from '../../../http/pagination.js';
import { ok } from '../../../http/schemas.js';
import { actorOf } from '../../audit/audit.js';
import { absentBodyIsEmpty, refuseBodyFields } from '../../../http/no-body.js';
import {
  AcceptInvitationBody,
  AcceptedMemberResponse,
  InvitationListResponse,
  InvitationParams,
  ListInvitationsQuery,
} from './invitations.schemas.js';
import type { invitationsService } from './invitations.service.js';

const tags = ['invitations'];

/** `/v1/invitations`: the signed-in user's pending invitations, accept and decline. */
export async function invitationsRoutes(
  app: FastifyInstance,
  { invitations }: { invitations: ReturnType<typeof invitationsService> },
): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/invitations',
    {
      schema: {
        tags,
        summary: 'Your pending invitations',
        operationId: 'listInvitations',
        security: SESSION_ONLY,
        description:
          'Signed-in users only. Invitations that are pending and not expired, with the project and the inviter. `sort`: created_at (default), invited_at, expires_at.',
        querystring: ListInvitationsQuery,
        response: { 200: InvitationListResponse },
      },
    },
    async (request) => {
      return listBody(await invitations.list(request.principal, request.query), request.query);
    },
  );

  r.post(
    '/invitations/:member_id/accept',
    {
      preValidation: absentBodyIsEmpty,
      schema: {
        tags,
        summary: 'Accept an invitation',
        operationId: 'acceptInvitation',
        security: SESSION_ONLY,
        description:
          'Only the invited user, while the invitation is pending and unexpired (404 otherwise). The member becomes `active` with `joined_at` set; an admin then grants them the vault key. The body is optional: `{ "token": "…" }`, the token of the invitation e-mail\'s `/invite?token=…` link. While your e-mail address is unverified (`email_verified: false` in `GET /v1/me`: signed up without an invitation link), the token is required and proves the address: without it `403 forbidden` with details `token`/`required`, a token of another invitation `403 forbidden` `token`/`invalid`; a valid one marks the address verified. A verified user may omit it; a token that is sent must still match.',
        params: InvitationParams,
        body: AcceptInvitationBody,
        'x-optional-body': true,
        response: { 200: AcceptedMemberResponse },
      },
    },
    async (request) =>
      ok(
        await invitations.accept(
          actorOf(request),
          request.params.member_id,
          request.body.token,
          request.body.introduction_proof,
        ),
      ),
  );

  r.post(
    '/invitations/:member_id/decline',
    {
      preValidation: refuseBodyFields,
      schema: {
        tags,
        summary: 'Decline an invitation',
        operationId: 'declineInvitation',
        security: SESSION_ONLY,
        description:
          'Only the invited user, while the invitation is pending (404 otherwise). No body and no token: declining harms no one. The member becomes `revoked`; an admin may invite the user again.',
        params: InvitationParams,
        response: { 204: Type.Null({ description: 'Declined' }) },
      },
    },
    async (request, reply) => {
      await invitations.decline(actorOf(request), request.params.member_id);
      return reply.code(204).send(null);
    },
  );
}
