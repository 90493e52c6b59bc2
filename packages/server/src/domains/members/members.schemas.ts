import { Type } from 'typebox';
import { listQuerySchema } from '../../http/pagination.js';
import { DataEnvelope, ListEnvelope, Timestamp } from '../../http/schemas.js';
import { roleSchema } from '../projects/projects.schemas.js';
import { MEMBER_SORTS } from './members.repo.js';

export const StatusSchema = Type.Union(
  [Type.Literal('active'), Type.Literal('pending'), Type.Literal('revoked')],
  { description: 'pending: invited; active: accepted; revoked: declined or expired invitation' },
);

export const UserRefSchema = Type.Object(
  {
    id: Type.String({ description: '`usr_…`' }),
    email: Type.String(),
    name: Type.String({
      description: 'For an invitee without an account: the part of the e-mail before "@"',
    }),
  },
  { additionalProperties: false },
);

const id = Type.String({ description: 'Member id, `mbr_…`' });
const projectId = Type.String({ description: 'Project id, `proj_…`' });

/** The invite response (spec 4.1): exactly these fields. */
const InvitedMemberSchema = Type.Object(
  {
    id,
    project_id: projectId,
    user: UserRefSchema,
    role: roleSchema(),
    status: StatusSchema,
    invited_at: Timestamp,
    invited_by: Type.String({
      description: 'User id of the inviter (for an API key: the admin who created the key)',
    }),
  },
  { additionalProperties: false },
);

/** A list item (spec 4.2): `joined_at` for active members, `invited_at` for pending and revoked ones. */
const MemberListItemSchema = Type.Object(
  {
    id,
    user: UserRefSchema,
    role: roleSchema(),
    status: StatusSchema,
    joined_at: Type.Optional(Timestamp),
    invited_at: Type.Optional(Timestamp),
  },
  { additionalProperties: false },
);

/** The role-update response (spec 4.3): exactly these fields. */
const UpdatedMemberSchema = Type.Object(
  {
    id,
    project_id: projectId,
    user: UserRefSchema,
    role: roleSchema(),
    status: StatusSchema,
    updated_at: Timestamp,
  },
  { additionalProperties: false },
);

export const MemberParams = Type.Object(
  { project_id: projectId, member_id: id },
  { additionalProperties: false },
);

export const InviteBody = Type.Object(
  {
    email: Type.String({
      format: 'email',
      maxLength: 254,
      description: 'Compared case-insensitively',
    }),
    role: roleSchema(),
  },
  { additionalProperties: false },
);

export const UpdateMemberBody = Type.Object(
  { role: roleSchema() },
  { additionalProperties: false },
);

export const ListMembersQuery = listQuerySchema(MEMBER_SORTS, {
  role: Type.Optional(roleSchema('Only members with this role')),
  status: Type.Optional(StatusSchema),
});

export const InvitedMemberResponse = DataEnvelope(InvitedMemberSchema);
export const MemberListResponse = ListEnvelope(MemberListItemSchema);
export const UpdatedMemberResponse = DataEnvelope(UpdatedMemberSchema);
