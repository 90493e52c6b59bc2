import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ready } from '@coffer/sdk';
import { ok } from '../../http/schemas.js';
import { actorOf } from '../audit/audit.js';
import type { MembersService } from '../members/members.service.js';
import { ProjectIdParams } from '../../http/params.js';
import {
  IntroductionBody,
  IntroductionParams,
  KeyPinsResponse,
  MemberKeysResponse,
  PutKeyPinsBody,
} from './key-trust.schemas.js';
import type { keyTrustService } from './key-trust.service.js';

// The same requirement sets as http/openapi.ts names SESSION_ONLY and SESSION_OR_BEARER.
const SESSION: Array<Record<string, string[]>> = [{ session: [] }];
const SESSION_OR_TOKEN: Array<Record<string, string[]>> = [{ bearer: [] }, { session: [] }];

/**
 * Key trust (no silent key substitution): introductions of invited members,
 * each user's signed key pins, and the public keys of a project's members.
 * The crypto is the SDK's; the server stores what clients signed or sealed.
 */
export async function keyTrustRoutes(
  app: FastifyInstance,
  {
    keyTrust: service,
    members,
  }: { keyTrust: ReturnType<typeof keyTrustService>; members: MembersService },
): Promise<void> {
  await ready(); // signature checks use libsodium
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.put(
    '/projects/:project_id/members/:member_id/introduction',
    {
      schema: {
        tags: ['members'],
        summary: 'Store the introduction of a pending invitation',
        operationId: 'putMemberIntroduction',
        security: SESSION,
        description:
          'Signed-in admins, right after inviting. `sealed_secret` is the introduction secret the inviter passes to the invitee out of band (the `#k=` of the introduction link), sealed for the project’s admins under a key derived from the current epoch’s project key; `inviter_proof` is a MAC under that secret over the inviter’s own keys, which the invitee checks. The server can open neither. Once per invitation, while it is pending: `409 version_conflict` (`not_pending`, `already_set`), or `stale_epoch` when the seal is not of the current epoch. The invitee’s proof arrives with `POST /v1/invitations/{member_id}/accept` (`introduction_proof`); admins see both in `GET /vault` (`pending_grants[].introduction`) and check them before granting.',
        params: IntroductionParams,
        body: IntroductionBody,
        response: { 204: Type.Null({ description: 'Stored' }) },
      },
    },
    async (request, reply) => {
      await members.setIntroduction(
        actorOf(request),
        request.params.project_id,
        request.params.member_id,
        request.body,
      );
      return reply.code(204).send(null);
    },
  );

  r.get(
    '/me/key-pins',
    {
      schema: {
        tags: ['me'],
        summary: 'Your signed key pins',
        operationId: 'getKeyPins',
        security: SESSION,
        description:
          'Needs a user session. The keys you accepted for the users you deal with, as the last document your client signed (`version` 0 and nulls when none is stored). Verify the signature with your own signing key and refuse a version below the highest you have seen: the server can withhold or roll back the document, not alter it.',
        response: { 200: KeyPinsResponse },
      },
    },
    async (request) => ok(await service.getPins(request.principal)),
  );

  r.put(
    '/me/key-pins',
    {
      schema: {
        tags: ['me'],
        summary: 'Replace your signed key pins',
        operationId: 'putKeyPins',
        security: SESSION,
        description:
          'Needs a user session. `document` is `{ user_id, version, pins: [{ user_id, email, public_key, signing_public_key, status: tofu|verified, at }] }` (pins sorted by user_id, one per user) and `signature` your Ed25519 signature over it (CRYPTO.md). `422 unprocessable` when the signature does not verify against your signing key or the document is not yours; `409 version_conflict` (`not_growing`, with `current_version`) when `version` is not above the stored one: fetch, merge, and send a higher version.',
        body: PutKeyPinsBody,
        response: { 200: KeyPinsResponse },
      },
    },
    async (request) => ok(await service.putPins(request.principal, request.body)),
  );

  r.get(
    '/projects/:project_id/vault/keys',
    {
      schema: {
        tags: ['vault'],
        summary: 'Public keys of the project’s members',
        operationId: 'getMemberKeys',
        security: SESSION_OR_TOKEN,
        description:
          'Any member or token of the project. The active admins and developers (those who hold or await the project key) with their X25519 and Ed25519 public keys and fingerprints, so a client can compare them with the keys it pinned. These are the server’s claims: compare fingerprints out of band before trusting a new one.',
        params: ProjectIdParams,
        response: { 200: MemberKeysResponse },
      },
    },
    async (request) => ok(await service.memberKeys(request.principal, request.params.project_id)),
  );
}
