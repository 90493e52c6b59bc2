import { listAuditEvents, type AuditQuery } from '@coffer/sdk';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { client } from '../lib/client';
import { formatDate } from '../lib/format';
import { describeUser, useMemberDirectory } from '../lib/members';
import { ErrorNote } from '../ui/ErrorNote';
import { Pagination } from '../ui/Pagination';
import { useProjectContext } from './ProjectLayout';

/** The actions the server records, offered as suggestions in the filter. */
const AUDIT_ACTIONS = [
  'project.created',
  'project.updated',
  'project.deleted',
  'environment.created',
  'environment.updated',
  'environment.deleted',
  'secret.created',
  'secret.updated',
  'secret.deleted',
  'secret.rolled_back',
  'secret.read',
  'secrets.listed',
  'secret.versions_listed',
  'member.invited',
  'member.role_changed',
  'member.removed',
  'invitation.accepted',
  'invitation.declined',
  'invitation.expired',
  'vault.initialized',
  'vault.granted',
  'vault.rekeyed',
  'api_key.created',
  'api_key.revoked',
  'ci_token.created',
  'ci_token.revoked',
];

/** `datetime-local` gives local time without a zone; the API takes ISO 8601 UTC. */
const toIso = (local: string) => (local ? new Date(local).toISOString() : undefined);

/** The project's audit log (admins): newest first, filtered by action, actor and time. */
export function AuditPage() {
  const project = useProjectContext();
  const directory = useMemberDirectory(project.id);
  const [query, setQuery] = useState<AuditQuery>({ page: 1, per_page: 50, order: 'desc' });
  const events = useQuery({
    queryKey: ['audit', project.id, query],
    queryFn: () => listAuditEvents(client, project.id, query),
    placeholderData: keepPreviousData,
  });

  // Member events record the e-mail of the user they concern: names for people who left.
  const known = new Map<string, string>();
  for (const event of events.data?.data ?? []) {
    const { user_id: userId, email } = event.data as { user_id?: unknown; email?: unknown };
    if (typeof userId === 'string' && typeof email === 'string') known.set(userId, email);
  }

  function filter(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const text = (name: string) => String(form.get(name) ?? '').trim() || undefined;
    setQuery({
      page: 1,
      per_page: 50,
      order: 'desc',
      action: text('action'),
      actor_id: text('actor'),
      since: toIso(String(form.get('since') ?? '')),
      until: toIso(String(form.get('until') ?? '')),
    });
  }

  return (
    <section className="page stack">
      <h2>Audit log</h2>
      <p className="muted small">
        Every change to the project and every read of values by an API key or CI token. Values and
        keys are never recorded.
      </p>
      <form className="filters" onSubmit={filter} aria-label="Filter the audit log">
        <label>
          Action{' '}
          <input
            name="action"
            placeholder="e.g. secret.updated"
            list="audit-actions"
            autoComplete="off"
          />
        </label>
        <datalist id="audit-actions">
          {AUDIT_ACTIONS.map((a) => (
            <option key={a} value={a} />
          ))}
        </datalist>
        <label>
          Actor{' '}
          <select name="actor" defaultValue="">
            <option value="">Anyone</option>
            {[...(directory.data?.values() ?? [])].map((m) => (
              <option key={m.user.id} value={m.user.id}>
                {m.user.name} ({m.user.email})
              </option>
            ))}
          </select>
        </label>
        <label>
          From <input type="datetime-local" name="since" />
        </label>
        <label>
          Until <input type="datetime-local" name="until" />
        </label>
        <button type="submit">Apply</button>
      </form>
      {events.isPending ? (
        <p className="muted">Loading events…</p>
      ) : events.isError ? (
        <ErrorNote error={events.error} onRetry={() => void events.refetch()} />
      ) : events.data.data.length === 0 ? (
        <p className="muted">No event matches.</p>
      ) : (
        <ol className="audit-list" aria-busy={events.isFetching}>
          {events.data.data.map((event) => (
            <li key={event.id}>
              <details>
                <summary>
                  <time dateTime={event.created_at}>{formatDate(event.created_at)}</time>{' '}
                  <code>{event.action}</code> by{' '}
                  {describeUser(directory.data, event.actor_id, known)}
                  {event.credential && event.credential.kind !== 'session' ? (
                    <span className="muted small">
                      {' '}
                      with {event.credential.kind.replace('_', ' ')} {event.credential.id}
                    </span>
                  ) : null}
                  {event.target ? (
                    <span className="muted small">
                      {' '}
                      · {event.target.type} {event.target.id}
                    </span>
                  ) : null}
                </summary>
                <dl className="audit-details">
                  <dt>Event</dt>
                  <dd className="mono">{event.id}</dd>
                  <dt>Request</dt>
                  <dd className="mono">{event.request_id ?? '—'}</dd>
                  <dt>Address</dt>
                  <dd className="mono">{event.ip ?? '—'}</dd>
                  <dt>Data</dt>
                  <dd>
                    <pre className="mono">{JSON.stringify(event.data, null, 2)}</pre>
                  </dd>
                </dl>
              </details>
            </li>
          ))}
        </ol>
      )}
      <Pagination
        info={events.data?.pagination}
        label="events"
        onPage={(page) => setQuery((q) => ({ ...q, page }))}
      />
    </section>
  );
}
