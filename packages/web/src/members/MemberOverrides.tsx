import { allPages, listMemberOverrides, type MemberListItem } from '@coffer/sdk';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { client } from '../lib/client';
import { ago, formatDate } from '../lib/format';
import { memberOverridesKey } from '../lib/queries';
import { ErrorNote } from '../ui/ErrorNote';
import './member-overrides.css';

/**
 * Which names a member overrides, in which environments: for admins (and the
 * member themself) on the Members page. Names only: an override's value is
 * sealed to its owner, and the server answers no value here. Fetched when
 * opened, not with the list of members.
 */
export function MemberOverrides({
  projectId,
  member,
}: {
  projectId: string;
  member: MemberListItem;
}) {
  const [open, setOpen] = useState(false);
  const overrides = useQuery({
    queryKey: memberOverridesKey(projectId, member.id),
    queryFn: () =>
      allPages((page) =>
        listMemberOverrides(client, projectId, member.id, {
          page,
          per_page: 100,
          sort: 'name',
          order: 'asc',
        }),
      ),
    enabled: open,
  });
  if (member.status !== 'active') return null;
  return (
    <details className="member-overrides small" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Personal overrides</summary>
      {overrides.isPending ? (
        <p className="muted">Loading…</p>
      ) : overrides.isError ? (
        <ErrorNote error={overrides.error} onRetry={() => void overrides.refetch()} />
      ) : overrides.data.length === 0 ? (
        <p className="muted">None: {member.user.name} reads the team values.</p>
      ) : (
        <>
          <ul aria-label={`Names ${member.user.name} overrides`}>
            {overrides.data.map((o) => (
              <li key={`${o.environment_id}/${o.name}`}>
                <code>{o.name}</code> in {o.environment_slug}{' '}
                <span className="muted" title={formatDate(o.updated_at)}>
                  {ago(o.updated_at)}
                </span>
              </li>
            ))}
          </ul>
          <p className="muted">
            Names only: each value is encrypted to {member.user.name}&rsquo;s own key, and nobody
            else can read it.
          </p>
        </>
      )}
    </details>
  );
}
