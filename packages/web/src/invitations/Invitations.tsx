import {
  acceptInvitation,
  declineInvitation,
  isCofferApiError,
  listInvitations,
  loadMembershipChain,
  type Invitation,
} from '@coffer/sdk';
import { acceptWithIntroduction } from '@coffer/sdk/vault/introduction';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { auth } from '../lib/auth';
import { client } from '../lib/client';
import { introduction } from '../lib/introduction';
import { openedIntroduction } from './introduction-link';
import { keyring } from '../lib/keyring';
import { formatDate } from '../lib/format';
import { ErrorNote } from '../ui/ErrorNote';
import { useTitle } from '../lib/title';
import { invitationsKey, projectsKey } from '../lib/queries';

interface Joined {
  /** The project's fingerprint (its chain's root); null for a project without a chain yet. */
  fingerprint: string | null;
  /** The introduction link named that root: the project's identity came from the inviter. */
  verified: boolean;
}

/**
 * Accepts, then reads the project's membership chain: its root is pinned at
 * join (this browser refuses the project if the server later shows another
 * one) and its fingerprint returned, for the invitee to compare with the inviter.
 */
async function accept(invitation: Invitation, token: string | undefined): Promise<Joined> {
  const introduced = await acceptOnly(invitation, token);
  if (introduced) return introduced;
  const pins = await keyring.pins();
  const chain = await loadMembershipChain(client, invitation.project.id, { pins });
  return { fingerprint: chain?.fingerprint ?? null, verified: false };
}

/**
 * Accepts with the e-mail link's token when there is one. The token belongs to
 * one invitation; for another one a user whose address is already confirmed
 * needs none, so a refused token is retried without it. With the introduction
 * link, the SDK pins the chain too (checked against the root the link names).
 */
async function acceptOnly(
  invitation: Invitation,
  token: string | undefined,
): Promise<Joined | undefined> {
  // Opened with its introduction link: prove this browser's keys with the link's secret
  // (and check the inviter's keys against it) while accepting.
  const introduced = openedIntroduction();
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
    return { fingerprint: result.projectFingerprint, verified: result.projectVerified };
  }
  if (token === undefined) return void (await acceptInvitation(client, invitation.id));
  try {
    await acceptInvitation(client, invitation.id, token);
  } catch (error) {
    const wrongToken =
      isCofferApiError(error) &&
      error.details.some((d) => d.field === 'token' && d.issue === 'invalid');
    if (!wrongToken) throw error;
    await acceptInvitation(client, invitation.id);
  }
}

/** The signed-in user's pending invitations, each with accept and decline. */
export function InvitationList({ token }: { token?: string }) {
  const queryClient = useQueryClient();
  const [joined, setJoined] = useState<Joined & { invitation: Invitation }>();
  const invitations = useQuery({
    queryKey: invitationsKey(),
    queryFn: () => listInvitations(client, { per_page: 100 }),
    // New invitations arrive by others' hands: ask again whenever the list is shown.
    staleTime: 0,
  });
  const answer = useMutation({
    mutationFn: async (input: { invitation: Invitation; accept: boolean }) => {
      if (!input.accept) return void (await declineInvitation(client, input.invitation.id));
      setJoined({ invitation: input.invitation, ...(await accept(input.invitation, token)) });
    },
    onSettled: async () => {
      await queryClient.invalidateQueries({ queryKey: invitationsKey() });
      await queryClient.invalidateQueries({ queryKey: projectsKey() });
    },
  });
  const done = joined ? <JoinedCard {...joined} /> : null;

  if (invitations.isPending) return <p className="muted">Loading invitations…</p>;
  if (invitations.isError)
    return <ErrorNote error={invitations.error} onRetry={() => void invitations.refetch()} />;
  const list = invitations.data.data;
  if (list.length === 0) {
    return (
      done ?? (
        <div className="empty">
          <p>No pending invitations.</p>
          <p className="muted">
            When a project admin invites you, it appears here.{' '}
            <Link to="/projects">Go to your projects</Link>
          </p>
        </div>
      )
    );
  }
  return (
    <div className="stack">
      {done}
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
            {openedIntroduction()?.memberId === invitation.id ? (
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

/** After accepting: the project's fingerprint, to compare with the inviter if they wish. */
function JoinedCard({ invitation, fingerprint, verified }: Joined & { invitation: Invitation }) {
  const inviter = invitation.invited_by.name;
  return (
    <div className="card stack" role="status">
      <h2>You joined {invitation.project.name}</h2>
      {fingerprint ? (
        <>
          <p>The project's fingerprint:</p>
          <output className="mono fingerprint-big" aria-label="Project fingerprint">
            {fingerprint}
          </output>
          <p className="small">
            Your browser has remembered it and refuses the project if the server ever shows another.{' '}
            {verified
              ? `It matches the one in ${inviter}'s introduction link: this is the very project ${inviter} invited you to.`
              : `You may compare it with ${inviter}, who sees it on the project's Access page: the same fingerprint means you joined the very project ${inviter} invited you to.`}
          </p>
        </>
      ) : (
        <p className="small muted">
          This project has no signed membership chain yet, so it has no fingerprint to compare.
        </p>
      )}
      <div>
        <Link className="button primary" to={`/projects/${invitation.project.id}`}>
          Open {invitation.project.name}
        </Link>
      </div>
    </div>
  );
}

export function InvitationsPage() {
  useTitle('Invitations');
  return (
    <section className="page stack">
      <h1>Invitations</h1>
      <InvitationList />
    </section>
  );
}
