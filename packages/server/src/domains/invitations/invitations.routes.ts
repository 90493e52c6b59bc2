import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../app.js';
import { ok } from '../../http/schemas.js';
import { actorOf } from '../audit/audit.js';
import { refuseBodyFields } from '../projects/no-body.js';
import { expireLapsedInvitations } from './expiry.js';
import {
  AcceptedMemberResponse,
  InvitationListResponse,
  InvitationParams,
  ListInvitationsQuery,
} from './invitations.schemas.js';
import { invitationsService } from './invitations.service.js';

const tags = ['invitations'];

/** Reads apply expiry lazily; the sweep keeps stored statuses honest for everything else. */
const SWEEP_INTERVAL_MS = 60_000;

/** `/v1/invitations`: the signed-in user's pending invitations, accept and decline. */
export async function invitationsRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const invitations = invitationsService(ctx);

  let sweep: NodeJS.Timeout | null = null;
  app.addHook('onReady', async () => {
    sweep = setInterval(() => {
      expireLapsedInvitations(ctx.db.kysely, {}, ctx.clock.now()).catch((err: unknown) =>
        app.log.error({ err }, 'invitation expiry sweep failed'),
      );
    }, SWEEP_INTERVAL_MS);
    sweep.unref();
  });
  app.addHook('onClose', async () => {
    if (sweep) clearInterval(sweep);
  });

  r.get(
    '/invitations',
    {
      schema: {
        tags,
        summary: 'Your pending invitations',
        description:
          'Signed-in users only. Invitations that are pending and not expired, with the project and the inviter. `sort`: created_at (default), invited_at, expires_at.',
        querystring: ListInvitationsQuery,
        response: { 200: InvitationListResponse },
      },
    },
    async (request) => {
      const { items, pagination } = await invitations.list(request.principal, request.query);
      return { data: items, pagination };
    },
  );

  r.post(
    '/invitations/:member_id/accept',
    {
      preValidation: refuseBodyFields,
      schema: {
        tags,
        summary: 'Accept an invitation',
        description:
          'Only the invited user, while the invitation is pending and unexpired (404 otherwise). The member becomes `active` with `joined_at` set; an admin then grants them the vault key.',
        params: InvitationParams,
        response: { 200: AcceptedMemberResponse },
      },
    },
    async (request) => ok(await invitations.accept(actorOf(request), request.params.member_id)),
  );

  r.post(
    '/invitations/:member_id/decline',
    {
      preValidation: refuseBodyFields,
      schema: {
        tags,
        summary: 'Decline an invitation',
        description:
          'Only the invited user, while the invitation is pending (404 otherwise). The member becomes `revoked`; an admin may invite the user again.',
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
