import {
  listMembers,
  removeMember,
  updateMemberRole,
  type MemberListItem,
  type MemberQuery,
  type Role,
} from '@coffer/sdk';
import { changeMemberRole, removeMemberSigned } from '@coffer/sdk/vault/membership';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useAuth } from '../lib/auth';
import { client } from '../lib/client';
import { toProblem } from '../lib/errors';
import { ago, formatDate } from '../lib/format';
import { useMemberDirectory } from '../lib/members';
import { chainKey, membersKey, membersPageKey, vaultKey } from '../lib/queries';
import { ConfirmDialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { Pagination } from '../ui/Pagination';
import { useProjectContext } from '../app/ProjectLayout';
import { RekeyDialog } from '../app/Rekey';
import { InviteForm } from './InviteForm';
import { ROLES } from './invite';
import { RevokedWithMember } from './RevokedWithMember';
import { signed, type Signing } from './signing';
import { SigningNote } from './SigningNote';
import { MemberOverrides } from './MemberOverrides';

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
    queryKey: membersPageKey(project.id, query),
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
                        {isAdmin || member.user.id === me ? (
                          <MemberOverrides projectId={project.id} member={member} />
                        ) : null}
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
