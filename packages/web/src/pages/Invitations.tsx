import {
  acceptInvitation,
  acceptWithIntroduction,
  declineInvitation,
  isCofferApiError,
  listInvitations,
  type Invitation,
} from '@coffer/sdk';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { auth } from '../lib/auth';
import { client } from '../lib/client';
import { introduction } from '../lib/introduction';
import { keyring } from '../lib/keyring';
import { formatDate } from '../lib/format';
import { ErrorNote } from '../ui/ErrorNote';

/**
 * Accepts with the e-mail link's token when there is one. The token belongs to
 * one invitation; for another one a user whose address is already confirmed
 * needs none, so a refused token is retried without it.
 */
async function accept(invitation: Invitation, token: string | undefined) {
  // Opened with its introduction link: prove this browser's keys with the link's secret
  // (and check the inviter's keys against it) while accepting.
  const introduced = introduction.get();
  if (introduced?.memberId === invitation.id) {
    const state = auth.state;
    if (state.status !== 'signed-in') throw new Error('Sign in first');
    const result = await acceptWithIntroduction(
      client,
      { userId: state.user.id, keys: keyring.keys() },
      introduced.link,
      { ...(token !== undefined ? { token } : {}), pins: await keyring.pins() },
    );
    introduction.clear();
    return result.member;
  }
  if (token === undefined) return acceptInvitation(client, invitation.id);
  try {
    return await acceptInvitation(client, invitation.id, token);
  } catch (error) {
    const wrongToken =
      isCofferApiError(error) &&
      error.details.some((d) => d.field === 'token' && d.issue === 'invalid');
    if (!wrongToken) throw error;
    return acceptInvitation(client, invitation.id);
  }
}

/** The signed-in user's pending invitations, each with accept and decline. */
export function InvitationList({ token }: { token?: string }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const invitations = useQuery({
    queryKey: ['invitations'],
    queryFn: () => listInvitations(client, { per_page: 100 }),
    // New invitations arrive by others' hands: ask again whenever the list is shown.
    staleTime: 0,
  });
  const answer = useMutation({
    mutationFn: async (input: { invitation: Invitation; accept: boolean }) => {
      if (input.accept) await accept(input.invitation, token);
      else await declineInvitation(client, input.invitation.id);
      return input;
    },
    onSuccess: async (input) => {
      await queryClient.invalidateQueries({ queryKey: ['invitations'] });
      await queryClient.invalidateQueries({ queryKey: ['projects'] });
      if (input.accept) navigate(`/projects/${input.invitation.project.id}`);
    },
  });

  if (invitations.isPending) return <p className="muted">Loading invitations…</p>;
  if (invitations.isError)
    return <ErrorNote error={invitations.error} onRetry={() => void invitations.refetch()} />;
  const list = invitations.data.data;
  if (list.length === 0) {
    return (
      <div className="empty">
        <p>No pending invitations.</p>
        <p className="muted">
          When a project admin invites you, it appears here.{' '}
          <Link to="/projects">Go to your projects</Link>
        </p>
      </div>
    );
  }
  return (
    <div className="stack">
      <ErrorNote error={answer.error} />
      <ul className="cards">
        {list.map((invitation) => (
          <li key={invitation.id} className="card stack">
            <h2>{invitation.project.name}</h2>
            <p>
              <strong>{invitation.invited_by.name}</strong> ({invitation.invited_by.email}) invited
              you as <strong>{invitation.role}</strong> on {formatDate(invitation.invited_at)}.
            </p>
            <p className="muted small">Expires {formatDate(invitation.expires_at)}.</p>
            {introduction.get()?.memberId === invitation.id ? (
              <p className="notice small">
                You opened {invitation.invited_by.name}'s introduction link: accepting proves your
                keys to the project's admins and checks {invitation.invited_by.name}'s keys too.
              </p>
            ) : null}
            {invitation.role !== 'viewer' ? (
              <p className="muted small">
                After you accept, an admin grants you the project key; values become readable then.
              </p>
            ) : null}
            <div className="actions start">
              <button
                type="button"
                className="primary"
                disabled={answer.isPending}
                onClick={() => answer.mutate({ invitation, accept: true })}
              >
                Accept
              </button>
              <button
                type="button"
                disabled={answer.isPending}
                onClick={() => answer.mutate({ invitation, accept: false })}
              >
                Decline
              </button>
            </div>
          </li>
        ))}
      </ul>
    </div>
  );
}

export function InvitationsPage() {
  return (
    <section className="page stack">
      <h1>Invitations</h1>
      <InvitationList />
    </section>
  );
}
