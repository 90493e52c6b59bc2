import { Type, type Static } from 'typebox';
import { INTRODUCTION_PROOF_PATTERN } from '@coffer/sdk';
import { listQuerySchema } from '../../../http/pagination.js';
import { DataEnvelope, ListEnvelope, Timestamp } from '../../../http/schemas.js';
import { StatusSchema, UserRefSchema } from '../members.schemas.js';
import { roleSchema } from '../../projects/projects.schemas.js';
import { INVITATION_SORTS } from './invitations.repo.js';

/** One of the signed-in user's open invitations. `id` is the member id to accept or decline. */
const InvitationSchema = Type.Object(
  {
    id: Type.String({ description: 'Member id, `mbr_…`' }),
    project: Type.Object(
      { id: Type.String(), name: Type.String() },
      { additionalProperties: false },
    ),
    role: roleSchema(),
    invited_at: Timestamp,
    invited_by: UserRefSchema,
    expires_at: Timestamp,
    introduction: Type.Optional(
      Type.Object(
        {
          inviter_proof: Type.String(),
          inviter_public_key: Type.String(),
          inviter_signing_public_key: Type.String(),
        },
        {
          additionalProperties: false,
          description:
            'Only when the inviter’s client stored an introduction: a MAC under the secret of the introduction link over the inviter’s keys shown here; a client holding that secret checks it before trusting them',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

/** The member an accepted invitation became. */
const AcceptedMemberSchema = Type.Object(
  {
    id: Type.String({ description: 'Member id, `mbr_…`' }),
    project_id: Type.String(),
    user: UserRefSchema,
    role: roleSchema(),
    status: StatusSchema,
    joined_at: Timestamp,
  },
  { additionalProperties: false },
);

export const InvitationParams = Type.Object(
  { member_id: Type.String({ description: 'Member id of the invitation, `mbr_…`' }) },
  { additionalProperties: false },
);

/** Optional: a POST without a body is the same as `{}`. */
export const AcceptInvitationBody = Type.Object(
  {
    token: Type.Optional(
      Type.String({
        minLength: 16,
        maxLength: 200,
        description:
          'The one-time token from the invitation e-mail (the `token` of its `/invite?token=…` link). Required while your e-mail address is unverified; proves it.',
      }),
    ),
    introduction_proof: Type.Optional(
      Type.String({
        pattern: INTRODUCTION_PROOF_PATTERN.source,
        description:
          'With an introduction link (`/invite?member=…#k=…`): HMAC-SHA-256 under HKDF(k) over your member id, user id and public keys (CRYPTO.md), base64url. Stored for the project’s admins, whose clients check it against the keys the server shows before granting you the vault key.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type AcceptInvitationBody = Static<typeof AcceptInvitationBody>;

export const ListInvitationsQuery = listQuerySchema(INVITATION_SORTS, {});

export const InvitationListResponse = ListEnvelope(InvitationSchema);
export const AcceptedMemberResponse = DataEnvelope(AcceptedMemberSchema);
