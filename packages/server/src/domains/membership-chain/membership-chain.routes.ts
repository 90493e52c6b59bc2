import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ready, type MembershipStatement } from '@coffer/sdk';
import { ok } from '../../http/schemas.js';
import { actorOf } from '../audit/audit.js';
import { ProjectIdParams } from '../../http/params.js';
import {
  AppendStatementsBody,
  AppendStatementsResponse,
  MembershipChainResponse,
} from './membership-chain.schemas.js';
import type { membershipChainService } from './membership-chain.service.js';

/** The signed membership chain of a project: read by every member and token, appended by admins. */
export async function membershipChainRoutes(
  app: FastifyInstance,
  { membershipChain: service }: { membershipChain: ReturnType<typeof membershipChainService> },
): Promise<void> {
  await ready(); // signature checks use libsodium
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/projects/:project_id/membership-chain',
    {
      schema: {
        tags: ['vault'],
        summary: 'The project’s signed membership chain',
        operationId: 'getMembershipChain',
        security: [{ bearer: [] }, { session: [] }],
        description:
          'Any member or token of the project. Every statement in order from the root (`seq` 0): who is a member with which keys and role, each signed by an admin of the chain. Empty for a project created before chains, until an admin’s client signs one. Clients replay and verify it themselves; the server can withhold its tail, not alter it.',
        params: ProjectIdParams,
        response: { 200: MembershipChainResponse },
      },
    },
    async (request) => ok(await service.chain(request.principal, request.params.project_id)),
  );

  r.post(
    '/projects/:project_id/membership-chain',
    {
      schema: {
        tags: ['vault'],
        summary: 'Append signed membership statements',
        operationId: 'appendMembershipStatements',
        security: [{ session: [] }],
        description:
          'Signed-in admins. `statements` continue the chain from its head, each signed by the caller (`signer_id`) with their account’s signing key. `409 version_conflict` (`not_head`, with `current_length`) when the first `seq` is not the chain’s length: fetch and sign again. `422 unprocessable` when the result does not verify (`invalid_chain`), a statement is not the caller’s (`not_yours`) or an `add` names keys other than the member’s account keys (`not_their_keys`).',
        params: ProjectIdParams,
        body: AppendStatementsBody,
        response: { 201: AppendStatementsResponse },
      },
    },
    async (request, reply) => {
      const result = await service.append(
        actorOf(request),
        request.params.project_id,
        request.body.statements as MembershipStatement[],
      );
      return reply.code(201).send(ok(result));
    },
  );
}
