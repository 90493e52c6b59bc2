import {
  inviteMember,
  isVaultError,
  listMembers,
  removeMember,
  updateMemberRole,
  type MemberListItem,
  type ChainMember,
  type MemberQuery,
  type Role,
  type VaultSession,
} from '@coffer/sdk';
import { liveTokensCreatedBy } from '@coffer/sdk/client/tokens';
import { inviteWithIntroduction } from '@coffer/sdk/vault/introduction';
import { changeMemberRole, removeMemberSigned } from '@coffer/sdk/vault/membership';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useAuth } from '../lib/auth';
import { client } from '../lib/client';
import { copyText } from '../lib/clipboard';
import { keyring } from '../lib/keyring';
import { toProblem } from '../lib/errors';
import { ago, formatDate } from '../lib/format';
import { membersKey, useMemberDirectory } from '../lib/members';
import { chainKey, vaultKey } from '../lib/queries';
import { ConfirmDialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { Field } from '../ui/Field';
import { Pagination } from '../ui/Pagination';
import { useProjectContext } from '../app/ProjectLayout';
import { RekeyDialog } from '../app/Rekey';

const ROLES: Role[] = ['admin', 'developer', 'viewer'];
const SORTS: [NonNullable<MemberQuery['sort']>, string][] = [
  ['created_at', 'Added'],
  ['joined_at', 'Joined'],
  ['invited_at', 'Invited'],
  ['name', 'Name'],
  ['email', 'E-mail'],
  ['role', 'Role'],
  ['status', 'Status'],
];

export function MembersPage() {
  const project = useProjectContext();
  const isAdmin = project.role === 'admin';
  const queryClient = useQueryClient();
  const state = useAuth();
  const me = state.status === 'signed-in' ? state.user.id : null;
  const [query, setQuery] = useState<MemberQuery>({
    page: 1,
    per_page: 20,
    sort: 'created_at',
    order: 'desc',
  });
  const members = useQuery({
    queryKey: [...membersKey(project.id), query],
    queryFn: () => listMembers(client, project.id, query),
    placeholderData: keepPreviousData,
  });
  // Every member (not only this page of the list): whether the caller is the project's only admin.
  const directory = useMemberDirectory(project.id);
  const activeAdmins = [...(directory.data?.values() ?? [])].filter(
    (m) => m.role === 'admin' && m.status === 'active',
  );
  const lastAdmin = activeAdmins.length === 1 && activeAdmins[0]!.user.id === me;
  const [removing, setRemoving] = useState<MemberListItem | null>(null);
  const [rekeyAfter, setRekeyAfter] = useState<string | null>(null);
  const [rowError, setRowError] = useState<{ id: string; error: unknown } | null>(null);
  const [rowSigned, setRowSigned] = useState<{ id: string; signing: Signing } | null>(null);
  const [removed, setRemoved] = useState<{ name: string; signing: Signing } | null>(null);

  const refresh = async () => {
    await queryClient.invalidateQueries({ queryKey: membersKey(project.id) });
    await queryClient.invalidateQueries({ queryKey: vaultKey(project.id) });
    await queryClient.invalidateQueries({ queryKey: chainKey(project.id) });
  };
  const changeRole = useMutation({
    mutationFn: ({ member, role }: { member: MemberListItem; role: Role }) =>
      signed(
        project.id,
        member.user.id,
        (vault) => changeMemberRole(vault, member.id, role),
        () => updateMemberRole(client, project.id, member.id, role),
        (chained) => chained?.role === role,
      ),
    onMutate: () => {
      setRowError(null);
      setRowSigned(null);
    },
    onError: (error, input) => setRowError({ id: input.member.id, error }),
    onSuccess: async (signing, input) => {
      setRowSigned({ id: input.member.id, signing });
      await refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (member: MemberListItem) =>
      signed(
        project.id,
        member.user.id,
        (vault) => removeMemberSigned(vault, { memberId: member.id, userId: member.user.id }),
        () => removeMember(client, project.id, member.id),
        (chained) => chained === undefined,
      ),
    onMutate: () => setRemoved(null),
    onSuccess: async (signing, member) => {
      setRemoving(null);
      if (member.status !== 'pending') setRemoved({ name: member.user.name, signing });
      await refresh();
      // Someone who could read secrets may have kept the key: offer the re-key.
      if (member.status === 'active' && member.role !== 'viewer') {
        setRekeyAfter(`${member.user.name} could read this project's secrets.`);
      }
    },
  });
  const set = (changes: Partial<MemberQuery>) => setQuery((q) => ({ ...q, page: 1, ...changes }));

  return (
    <section className="page stack" aria-labelledby="members-title">
      <h2 id="members-title" className="visually-hidden">
        Members
      </h2>
      {isAdmin ? <InviteForm projectId={project.id} onInvited={refresh} /> : null}
      {removed ? (
        <p className="notice small" role="status">
          <SigningNote signing={removed.signing} what={`${removed.name} was removed`} />
        </p>
      ) : null}
      <div className="filters">
        <label>
          Role{' '}
          <select
            value={query.role ?? ''}
            onChange={(e) => set({ role: (e.target.value || undefined) as Role | undefined })}
          >
            <option value="">Any</option>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status{' '}
          <select
            value={query.status ?? ''}
            onChange={(e) =>
              set({ status: (e.target.value || undefined) as MemberQuery['status'] })
            }
          >
            <option value="">Any</option>
            <option value="active">active</option>
            <option value="pending">pending</option>
            <option value="revoked">revoked</option>
          </select>
        </label>
        <label>
          Sort by{' '}
          <select
            value={query.sort}
            onChange={(e) => set({ sort: e.target.value as MemberQuery['sort'] })}
          >
            {SORTS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Order{' '}
          <select
            value={query.order}
            onChange={(e) => set({ order: e.target.value as 'asc' | 'desc' })}
          >
            <option value="desc">Newest / Z–A first</option>
            <option value="asc">Oldest / A–Z first</option>
          </select>
        </label>
      </div>
      {members.isPending ? (
        <p className="muted">Loading members…</p>
      ) : members.isError ? (
        <ErrorNote error={members.error} onRetry={() => void members.refetch()} />
      ) : (
        <>
          <div className="table-scroll">
            <table className="table cards-narrow" aria-busy={members.isFetching}>
              <thead>
                <tr>
                  <th scope="col">Member</th>
                  <th scope="col">Role</th>
                  <th scope="col">Status</th>
                  <th scope="col">Since</th>
                  {isAdmin ? (
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  ) : null}
                </tr>
              </thead>
              <tbody>
                {members.data.data.map((member) => {
                  const since = member.joined_at ?? member.invited_at;
                  return (
                    <tr key={member.id}>
                      <td>
                        <div>
                          {member.user.name}
                          {member.user.id === me ? (
                            <span className="muted small"> (you)</span>
                          ) : null}
                        </div>
                        <div className="muted small">{member.user.email}</div>
                      </td>
                      <td data-label="Role">
                        {isAdmin && member.status !== 'revoked' ? (
                          <select
                            aria-label={`Role of ${member.user.email}`}
                            value={member.role}
                            disabled={changeRole.isPending}
                            onChange={(e) =>
                              changeRole.mutate({ member, role: e.target.value as Role })
                            }
                          >
                            {ROLES.map((r) => (
                              <option key={r} value={r}>
                                {r}
                              </option>
                            ))}
                          </select>
                        ) : (
                          member.role
                        )}
                        {rowError?.id === member.id ? (
                          <div className="field-error" role="alert">
                            {toProblem(rowError.error).message}
                          </div>
                        ) : null}
                        {rowSigned?.id === member.id ? (
                          <div className="small" role="status">
                            <SigningNote signing={rowSigned.signing} what="Role changed" />
                          </div>
                        ) : null}
                      </td>
                      <td data-label="Status">
                        <span className={`status status-${member.status}`}>{member.status}</span>
                      </td>
                      <td data-label="Since" title={since ? formatDate(since) : undefined}>
                        {since ? `${member.joined_at ? 'joined' : 'invited'} ${ago(since)}` : '—'}
                      </td>
                      {isAdmin && lastAdmin && member.user.id === me ? (
                        <td className="row-actions muted small">The only admin</td>
                      ) : isAdmin ? (
                        <td className="row-actions">
                          <button
                            type="button"
                            className="danger"
                            onClick={() => {
                              remove.reset();
                              setRemoving(member);
                            }}
                            aria-label={`${member.status === 'pending' ? 'Withdraw the invitation of' : 'Remove'} ${member.user.email}`}
                          >
                            {member.status === 'pending' ? 'Withdraw' : 'Remove'}
                          </button>
                        </td>
                      ) : null}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          {members.data.data.length === 0 ? (
            <p className="muted">No member matches these filters.</p>
          ) : null}
          <Pagination
            info={members.data.pagination}
            label="members"
            onPage={(page) => setQuery((q) => ({ ...q, page }))}
          />
        </>
      )}
      {removing ? (
        <ConfirmDialog
          title={
            removing.status === 'pending'
              ? `Withdraw the invitation of ${removing.user.email}?`
              : `Remove ${removing.user.name}?`
          }
          confirmLabel={removing.status === 'pending' ? 'Withdraw invitation' : 'Remove member'}
          busy={remove.isPending}
          error={<ErrorNote error={remove.error} />}
          onConfirm={() => remove.mutate(removing)}
          onClose={() => setRemoving(null)}
        >
          {removing.status === 'pending' ? (
            <p>The invitation link stops working; you can invite the address again later.</p>
          ) : (
            <>
              <p>
                {removing.user.name} ({removing.user.email}) loses access to {project.name} at once.
                {removing.role !== 'viewer'
                  ? ' They could read its secrets: re-key the vault afterwards so a copied key opens nothing new.'
                  : ''}
              </p>
              <RevokedWithMember projectId={project.id} member={removing} />
            </>
          )}
        </ConfirmDialog>
      ) : null}
      {rekeyAfter ? (
        <RekeyDialog
          projectId={project.id}
          reason={rekeyAfter}
          onClose={() => setRekeyAfter(null)}
        />
      ) : null}
    </section>
  );
}

/** Whether a change of who is a member was signed into the project's membership chain, and if not, why. */
type Signing =
  | { kind: 'signed' }
  | { kind: 'outside' }
  | { kind: 'unchained' }
  | { kind: 'no_key' }
  | { kind: 'failed'; error: unknown };

/**
 * Makes a membership change an admin's client signs (`changeMemberRole`,
 * `removeMemberSigned`) with the unlocked vault session. An admin who holds no
 * project key yet vouches for nobody: the plain server call, said unsigned.
 * The SDK changes the server first and signs after, so a refusal to sign
 * (`not_chain_admin`, a chain refusal) comes after the change: reported with it.
 */
async function signed(
  projectId: string,
  userId: string,
  change: (vault: VaultSession) => Promise<unknown>,
  plain: () => Promise<unknown>,
  done: (chained: ChainMember | undefined) => boolean,
): Promise<Signing> {
  const vault = await keyring.vault(projectId);
  if (!vault.holdsKeys) {
    await plain();
    return { kind: 'no_key' };
  }
  const before = vault.chain?.members.get(userId);
  try {
    await change(vault);
  } catch (error) {
    if (!isVaultError(error)) throw error;
    return { kind: 'failed', error };
  }
  const chain = vault.chain;
  if (!chain) return { kind: 'unchained' };
  const after = chain.members.get(userId);
  if (!before && !after) return { kind: 'outside' };
  return done(after) ? { kind: 'signed' } : { kind: 'failed', error: null };
}

function SigningNote({ signing, what }: { signing: Signing; what: string }) {
  switch (signing.kind) {
    case 'signed':
      return <>{what}, signed in the project's membership chain.</>;
    case 'outside':
      return (
        <>
          {what}. Nothing to sign: they are not in the membership chain (they join it when granted
          the key).
        </>
      );
    case 'unchained':
      return <>{what}, not signed: this project has no membership chain yet (sign it in Access).</>;
    case 'no_key':
      return (
        <>
          {what}, <strong>not signed</strong>: you hold no project key yet, so your browser cannot
          vouch for members.
        </>
      );
    case 'failed':
      return (
        <>
          {what} on the server, but <strong>not signed</strong>:{' '}
          {signing.error
            ? toProblem(signing.error).message
            : 'the membership chain did not take it.'}
        </>
      );
  }
}

/**
 * Invites with an introduction link when this admin holds the project key: the
 * link's secret (after `#`, never sent to a server) lets the invitee's browser
 * prove its keys, so granting needs no fingerprint comparison. The server's
 * e-mail goes out as well.
 */
async function inviteWith(projectId: string, input: { email: string; role: Role }) {
  const vault = await keyring.vault(projectId);
  try {
    const introduced = await inviteWithIntroduction(vault, input.email, input.role, {
      publicUrl: window.location.origin,
    });
    return { member: introduced.member, link: introduced.introductionLink };
  } catch (error) {
    if (!isVaultError(error, 'no_grant')) throw error;
    return { member: await inviteMember(client, projectId, input), link: null };
  }
}

function InviteForm({
  projectId,
  onInvited,
}: {
  projectId: string;
  onInvited: () => Promise<void>;
}) {
  const [copied, setCopied] = useState(false);
  const invite = useMutation({
    mutationFn: (input: { email: string; role: Role }) => inviteWith(projectId, input),
    onMutate: () => setCopied(false),
    onSuccess: onInvited,
  });
  const problem = invite.error ? toProblem(invite.error) : null;
  const [role, setRole] = useState<Role>('developer');

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const email = String(new FormData(form).get('email')).trim();
    invite.mutate({ email, role }, { onSuccess: () => form.reset() });
  }

  return (
    <form className="invite-form card" onSubmit={submit} aria-label="Invite a member">
      <Field
        label="Invite by e-mail"
        name="email"
        type="email"
        required
        autoComplete="off"
        error={problem?.message}
      />
      <div className="field">
        <label htmlFor="invite-role">Role</label>
        <select id="invite-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </div>
      <button type="submit" className="primary" disabled={invite.isPending}>
        {invite.isPending ? 'Inviting…' : 'Invite'}
      </button>
      {invite.isSuccess ? (
        <div role="status" className="small stack invite-result">
          <p>Invited {invite.data.member.user.email}. They get an e-mail with a link to join.</p>
          {invite.data.link ? (
            <>
              <p>
                <strong>Send them this introduction link yourself</strong> (chat, in person): it
                lets their browser prove its keys to your team, so the project key can be granted
                without comparing fingerprints. It is shown only now.
              </p>
              <label className="field">
                <span>Introduction link</span>
                <textarea
                  className="mono introduction-link"
                  readOnly
                  rows={2}
                  value={invite.data.link}
                  onFocus={(e) => e.currentTarget.select()}
                />
              </label>
              <div>
                <button
                  type="button"
                  onClick={() => void copyText(invite.data.link!).then(() => setCopied(true))}
                >
                  {copied ? 'Copied' : 'Copy the link'}
                </button>
              </div>
            </>
          ) : (
            <p>
              Once they accept, grant them the project key under Access after comparing their key
              fingerprint with them.
            </p>
          )}
        </div>
      ) : null}
    </form>
  );
}

/**
 * In the removal dialog: the API keys and CI tokens the member created, which
 * the removal revokes with them, so an admin sees which deployments or
 * pipelines stop before confirming.
 */
function RevokedWithMember({ projectId, member }: { projectId: string; member: MemberListItem }) {
  const tokens = useQuery({
    queryKey: ['tokens-of-member', projectId, member.user.id],
    queryFn: () => liveTokensCreatedBy(client, projectId, member.user.id),
  });
  if (tokens.isPending)
    return <p className="muted small">Looking for their API keys and CI tokens…</p>;
  if (tokens.isError)
    return (
      <p className="small">
        The API keys and CI tokens they created are revoked too (they could not be listed here).
      </p>
    );
  const { apiKeys, ciTokens } = tokens.data;
  const one = apiKeys.length + ciTokens.length === 1;
  if (apiKeys.length + ciTokens.length === 0)
    return <p className="muted small">They have no API key or CI token in use.</p>;
  const count = (n: number, one: string) => (n === 1 ? one : `${n} ${one}s`);
  const what = [
    apiKeys.length ? count(apiKeys.length, 'API key') : null,
    ciTokens.length ? count(ciTokens.length, 'CI token') : null,
  ]
    .filter(Boolean)
    .join(' and ');
  return (
    <div className="notice small" data-testid="revoked-with-member">
      <p>
        Their {what} {one ? 'is' : 'are'} revoked with them: whatever runs with{' '}
        {one ? 'it' : 'them'} stops working.
      </p>
      <ul className="issues">
        {apiKeys.map((key) => (
          <li key={key.id}>
            API key <strong>{key.name}</strong> <code>{key.id}</code>
          </li>
        ))}
        {ciTokens.map((token) => (
          <li key={token.id}>
            CI token <strong>{token.name}</strong> <code>{token.id}</code>
          </li>
        ))}
      </ul>
    </div>
  );
}
