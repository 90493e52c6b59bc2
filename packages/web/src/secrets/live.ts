import type { Environment } from '@coffer/sdk';
import { watch, type FeedEvent } from '@coffer/sdk/client/events';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { client } from '../lib/client';
import { environmentsKey, projectSecretsKey, secretsKey, vaultKey } from '../lib/queries';

/** A sentence about someone else's change, shown for a while. */
export interface LiveNote {
  id: number;
  text: string;
}

const NOTE_MS = 8_000;

function nameList(names: string[]): string {
  if (names.length <= 3) return names.join(', ');
  return `${names.slice(0, 2).join(', ')} and ${names.length - 2} more`;
}

/** "Ada changed LOG_LEVEL in production just now" (or with an API key, a CI token). */
function sentence(event: FeedEvent & { type: 'secrets.changed' }, envName: string): string {
  const who = event.actor?.name ?? 'Someone';
  const how =
    event.actor?.kind === 'api_key'
      ? ' (API key)'
      : event.actor?.kind === 'ci_token'
        ? ' (CI token)'
        : '';
  const deleted = event.changes.every((c) => c.change === 'deleted');
  return `${who}${how} ${deleted ? 'deleted' : 'changed'} ${nameList(event.names)} in ${envName} just now`;
}

/**
 * The open grid follows the project's change feed (the SDK's `watch`: no
 * values travel, only what changed and where): a save by anyone refreshes that
 * environment's secrets (staged cells keep their staged value and show a
 * conflict when the server's version moved past the one they were based on),
 * environments and the vault are fetched again when they change, and a save
 * by someone else is announced ("Ada changed LOG_LEVEL in production just
 * now"). The user's own saves from this session are not announced.
 */
export function useLiveUpdates(
  projectId: string,
  environments: Environment[],
  myUserId: string | null,
): LiveNote[] {
  const queryClient = useQueryClient();
  const [notes, setNotes] = useState<LiveNote[]>([]);
  // Read through a ref-like closure so the stream is not reopened when environments refresh.
  const [names] = useState(() => new Map<string, string>());
  for (const environment of environments) names.set(environment.id, environment.name);

  useEffect(() => {
    const stop = new AbortController();
    let next = 0;
    const announce = (text: string) => {
      const id = ++next;
      setNotes((list) => [...list.slice(-2), { id, text }]);
      setTimeout(() => setNotes((list) => list.filter((n) => n.id !== id)), NOTE_MS);
    };
    const refreshAll = () => {
      void queryClient.invalidateQueries({ queryKey: environmentsKey(projectId) });
      void queryClient.invalidateQueries({ queryKey: vaultKey(projectId) });
      void queryClient.invalidateQueries({ queryKey: projectSecretsKey(projectId) });
    };
    void (async () => {
      try {
        for await (const item of watch(client, projectId, { signal: stop.signal })) {
          switch (item.type) {
            case 'secrets.changed': {
              void queryClient.invalidateQueries({
                queryKey: secretsKey(projectId, item.environment.id),
              });
              const mine = item.actor?.kind === 'user' && item.actor.user_id === myUserId;
              if (!mine) {
                announce(sentence(item, names.get(item.environment.id) ?? item.environment.slug));
              }
              break;
            }
            case 'environment.created':
            case 'environment.renamed':
            case 'environment.deleted':
              void queryClient.invalidateQueries({ queryKey: environmentsKey(projectId) });
              break;
            case 'vault.rekeyed':
            case 'reset':
              refreshAll();
              break;
            default:
              break;
          }
        }
      } catch {
        // 401/403/404: the page's own queries show why; the grid still works without live updates.
      }
    })();
    return () => stop.abort();
  }, [projectId, myUserId, queryClient, names]);

  return notes;
}
