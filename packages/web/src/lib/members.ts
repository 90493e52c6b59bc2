import { allPages, listMembers, type MemberListItem } from '@coffer/sdk';
import { useQuery } from '@tanstack/react-query';
import { client } from './client';
import { memberDirectoryKey } from './queries';

/** Every member of the project by user id, to show names where the API gives ids (audit, tokens). */
export function useMemberDirectory(projectId: string) {
  return useQuery({
    queryKey: memberDirectoryKey(projectId),
    queryFn: async () => {
      const members = await allPages((page) =>
        listMembers(client, projectId, { page, per_page: 100 }),
      );
      return new Map<string, MemberListItem>(members.map((m) => [m.user.id, m]));
    },
  });
}

/**
 * "Ada Lovelace (ada@example.com)"; for someone no longer a member, the e-mail
 * an event recorded about them (`known`), else the id.
 */
export function describeUser(
  directory: Map<string, MemberListItem> | undefined,
  userId: string | null,
  known?: Map<string, string>,
): string {
  if (!userId) return '—';
  const member = directory?.get(userId);
  if (member) return `${member.user.name} (${member.user.email})`;
  const email = known?.get(userId);
  return email ? `${email} (no longer a member)` : userId;
}
