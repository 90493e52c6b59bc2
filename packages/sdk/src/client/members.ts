import { apiPath, type CofferClient, type Page } from './http.js';
import type { ListQuery, Role } from './projects.js';

// Typed calls of the members domain (`/v1/projects/{p}/members`) and of the
// invited user's side (`/v1/invitations`). After an invitation is accepted, an
// admin grants the new member the project key (../vault/project.ts).

export type MemberStatus = 'active' | 'pending' | 'revoked';

export interface UserRef {
  id: string;
  email: string;
  /** For an invitee without an account: the part of the e-mail before "@". */
  name: string;
}

/** The answer to an invitation: always `pending`. */
export interface InvitedMember {
  id: string;
  project_id: string;
  user: UserRef;
  role: Role;
  status: MemberStatus;
  invited_at: string;
  /** The inviting user (for an API key: the admin who created it). */
  invited_by: string;
}

/** A list item: `joined_at` for active members, `invited_at` for pending and revoked ones. */
export interface MemberListItem {
  id: string;
  user: UserRef;
  role: Role;
  status: MemberStatus;
  joined_at?: string;
  invited_at?: string;
}

export interface UpdatedMember {
  id: string;
  project_id: string;
  user: UserRef;
  role: Role;
  status: MemberStatus;
  updated_at: string;
}

/** One of the signed-in user's pending invitations; `id` is the member id to answer. */
export interface Invitation {
  id: string;
  project: { id: string; name: string };
  role: Role;
  invited_at: string;
  invited_by: UserRef;
  expires_at: string;
  /** When the inviter stored an introduction: their keys and their proof under the link's secret. */
  introduction?: {
    inviter_proof: string;
    inviter_public_key: string;
    inviter_signing_public_key: string;
  };
}

export interface AcceptedMember {
  id: string;
  project_id: string;
  user: UserRef;
  role: Role;
  status: MemberStatus;
  joined_at: string;
}

export type MemberSort =
  'created_at' | 'joined_at' | 'invited_at' | 'role' | 'status' | 'email' | 'name';

export interface MemberQuery extends ListQuery<MemberSort> {
  role?: Role;
  status?: MemberStatus;
}

const membersPath = (projectId: string) => apiPath`/v1/projects/${projectId}/members`;
const memberPath = (projectId: string, memberId: string) =>
  apiPath`/v1/projects/${projectId}/members/${memberId}`;

export const listMembers = (
  client: CofferClient,
  projectId: string,
  query: MemberQuery = {},
): Promise<Page<MemberListItem>> =>
  client.requestPage<MemberListItem>('GET', membersPath(projectId), { query: { ...query } });

/** Admins. The invitee receives a link with a one-time token by e-mail (sign-up link for an address without an account). `409 already_member` if pending or active. */
export const inviteMember = (
  client: CofferClient,
  projectId: string,
  input: { email: string; role: Role },
): Promise<InvitedMember> =>
  client.request<InvitedMember>('POST', membersPath(projectId), { body: input });

/** Admins. `422 last_admin` when it would leave the project without an active admin. */
export const updateMemberRole = (
  client: CofferClient,
  projectId: string,
  memberId: string,
  role: Role,
): Promise<UpdatedMember> =>
  client.request<UpdatedMember>('PATCH', memberPath(projectId, memberId), { body: { role } });

/** Admins; any status (withdraws a pending invitation). `422 last_admin` for the last active admin. */
export const removeMember = (
  client: CofferClient,
  projectId: string,
  memberId: string,
): Promise<void> => client.request<void>('DELETE', memberPath(projectId, memberId));

export type InvitationSort = 'created_at' | 'invited_at' | 'expires_at';

/** The signed-in user's pending, unexpired invitations. */
export const listInvitations = (
  client: CofferClient,
  query: ListQuery<InvitationSort> = {},
): Promise<Page<Invitation>> =>
  client.requestPage<Invitation>('GET', '/v1/invitations', { query: { ...query } });

/**
 * Accepts an invitation. `token` is the one from the invitation e-mail's
 * `/invite?token=…` link: required while the user's e-mail address is
 * unverified (`403 forbidden`, details `token`/`required` without it), and it
 * then verifies the address; a verified user may leave it out.
 */
export const acceptInvitation = (
  client: CofferClient,
  memberId: string,
  token?: string,
  /** From `acceptWithIntroduction`: the proof over your keys under the introduction secret. */
  introductionProof?: string,
): Promise<AcceptedMember> =>
  client.request<AcceptedMember>(
    'POST',
    apiPath`/v1/invitations/${memberId}/accept`,
    token !== undefined || introductionProof !== undefined
      ? {
          body: {
            ...(token !== undefined ? { token } : {}),
            ...(introductionProof !== undefined ? { introduction_proof: introductionProof } : {}),
          },
        }
      : {},
  );

export const declineInvitation = (client: CofferClient, memberId: string): Promise<void> =>
  client.request<void>('POST', apiPath`/v1/invitations/${memberId}/decline`);
