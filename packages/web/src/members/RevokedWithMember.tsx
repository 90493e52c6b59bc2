import { type MemberListItem } from '@coffer/sdk';
import { liveTokensCreatedBy } from '@coffer/sdk/client/tokens';
import { useQuery } from '@tanstack/react-query';
import { client } from '../lib/client';
import { memberTokensKey } from '../lib/queries';

export function RevokedWithMember({
  projectId,
  member,
}: {
  projectId: string;
  member: MemberListItem;
}) {
  const tokens = useQuery({
    queryKey: memberTokensKey(projectId, member.user.id),
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
