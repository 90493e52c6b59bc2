import { allPages } from '@coffer/sdk';
import { listAuditEvents, type AuditEvent, type AuditQuery } from '@coffer/sdk/client/audit';
import { listApiKeys, listCiTokens } from '@coffer/sdk/client/tokens';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { AUDIT_ACTIONS, auditActor, auditPredicate, type AuditNames } from './audit';
import { client } from '../lib/client';
import { formatDateTime, parseDateTime } from '../lib/format';
import { useMemberDirectory } from '../lib/members';
import { auditKey, tokenNamesKey, useEnvironments } from '../lib/queries';
import { ErrorNote } from '../ui/ErrorNote';
import { Pagination } from '../ui/Pagination';
import { useProjectContext } from '../app/ProjectLayout';

/** The filters as the inputs hold them (times as typed: `2026-11-26 14:03:09`, local). */
interface Filters {
  action: string;
  actor: string;
  since: string;
  until: string;
}
const NO_FILTERS: Filters = { action: '', actor: '', since: '', until: '' };
const PER_PAGE = 50;
const TIME_FORMAT = 'YYYY-MM-DD HH:MM:SS';
const TIMES_HINT = 'audit-times-hint';

/** A typed time as ISO 8601 UTC for the API; '' is no bound, and a time still being typed is ignored. */
const toIso = (typed: string) => (typed.trim() ? parseDateTime(typed)?.toISOString() : undefined);

const queryOf = (filters: Filters, page: number): AuditQuery => ({
  page,
  per_page: PER_PAGE,
  order: 'desc',
  ...(filters.action ? { action: filters.action } : {}),
  ...(filters.actor ? { actor_id: filters.actor } : {}),
  ...(toIso(filters.since) ? { since: toIso(filters.since) } : {}),
  ...(toIso(filters.until) ? { until: toIso(filters.until) } : {}),
});

/** The names of the project's API keys and CI tokens (revoked ones too), for events tokens made. */
function useTokenNames(projectId: string, enabled: boolean) {
  return useQuery({
    queryKey: tokenNamesKey(projectId),
    queryFn: async () => {
      const [keys, tokens] = await Promise.all([
        allPages((page) => listApiKeys(client, projectId, { page, per_page: 100 })),
        allPages((page) => listCiTokens(client, projectId, { page, per_page: 100 })),
      ]);
      return new Map([...keys, ...tokens].map((t) => [t.id, t.name] as const));
    },
    enabled,
  });
}

/** The project's audit log (admins): newest first, as sentences, filtered as the filters change. */
export function AuditPage() {
  const project = useProjectContext();
  const directory = useMemberDirectory(project.id);
  const environments = useEnvironments(project.id);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [page, setPage] = useState(1);
  const query = queryOf(filters, page);
  const events = useQuery({
    queryKey: auditKey(project.id, query),
    queryFn: () => listAuditEvents(client, project.id, query),
    placeholderData: keepPreviousData,
  });
  const list = events.data?.data ?? [];
  const tokenNames = useTokenNames(
    project.id,
    list.some((e) => e.credential && e.credential.kind !== 'session'),
  );

  // Member events record the e-mail of the user they concern: names for people who left.
  const known = new Map<string, string>();
  for (const event of list) {
    const { user_id: userId, email } = event.data as { user_id?: unknown; email?: unknown };
    if (typeof userId === 'string' && typeof email === 'string') known.set(userId, email);
  }
  const names: AuditNames = {
    user: (id) => {
      if (!id) return 'someone';
      const member = directory.data?.get(id);
      if (member) return member.user.name;
      const email = known.get(id);
      return email ? `${email} (no longer a member)` : id;
    },
    environment: (id) =>
      environments.data?.find((e) => e.id === id)?.slug ??
      (typeof id === 'string' ? id : 'an environment'),
    token: (_kind, id) => tokenNames.data?.get(id) ?? null,
  };

  const change = (patch: Partial<Filters>) => {
    setFilters((f) => ({ ...f, ...patch }));
    setPage(1);
  };
  const filtered = Object.values(filters).some(Boolean);

  return (
    <section className="page stack" aria-labelledby="audit-title">
      <h2 id="audit-title" className="visually-hidden">
        Audit log
      </h2>
      <p className="muted small">
        Every change to the project and every read of values by an API key or CI token. Values and
        keys are never recorded.
      </p>
      <form
        className="filters"
        aria-label="Filter the audit log"
        onSubmit={(e) => e.preventDefault()}
      >
        <label>
          Action
          <select value={filters.action} onChange={(e) => change({ action: e.target.value })}>
            <option value="">Any action</option>
            {AUDIT_ACTIONS.map(({ group, actions }) => (
              <optgroup key={group} label={group}>
                {actions.map(([value, label]) => (
                  <option key={value} value={value}>
                    {label}
                  </option>
                ))}
              </optgroup>
            ))}
          </select>
        </label>
        <label>
          Actor
          <select value={filters.actor} onChange={(e) => change({ actor: e.target.value })}>
            <option value="">Anyone</option>
            {[...(directory.data?.values() ?? [])].map((m) => (
              <option key={m.user.id} value={m.user.id}>
                {m.user.name} ({m.user.email})
              </option>
            ))}
          </select>
        </label>
        <TimeFilter label="From" value={filters.since} onChange={(since) => change({ since })} />
        <TimeFilter label="Until" value={filters.until} onChange={(until) => change({ until })} />
        <button
          type="button"
          disabled={!filtered}
          onClick={() => {
            setFilters(NO_FILTERS);
            setPage(1);
          }}
        >
          Clear
        </button>
      </form>
      <p id={TIMES_HINT} className="hint">
        Times are local, as the rows show them ({TIME_FORMAT}); a date alone is its midnight.
      </p>
      {events.isPending ? (
        <p className="muted">Loading events…</p>
      ) : events.isError ? (
        <ErrorNote error={events.error} onRetry={() => void events.refetch()} />
      ) : list.length === 0 ? (
        <p className="muted">{filtered ? 'No event matches these filters.' : 'No events yet.'}</p>
      ) : (
        <ol className="audit-list" aria-label="Audit events" aria-busy={events.isFetching}>
          {list.map((event, i) => (
            <AuditRow
              key={event.id}
              event={event}
              names={names}
              first={i === 0 || auditActor(list[i - 1]!, names) !== auditActor(event, names)}
            />
          ))}
        </ol>
      )}
      <Pagination info={events.data?.pagination} label="events" onPage={setPage} />
    </section>
  );
}

/**
 * One event as a sentence: "Ada Lovelace updated LOG_LEVEL in production (v4)".
 * The actor shows once for consecutive events of theirs; the later rows keep it
 * for screen readers, so each still reads as a whole sentence.
 */
function AuditRow({
  event,
  names,
  first,
}: {
  event: AuditEvent;
  names: AuditNames;
  first: boolean;
}) {
  const actor = auditActor(event, names);
  return (
    <li className={first ? 'audit-group-start' : undefined}>
      <details>
        <summary>
          <span className="audit-line">
            <span className="audit-sentence">
              <span className={first ? 'audit-actor' : 'visually-hidden'}>{actor}</span>{' '}
              {auditPredicate(event, names)}
            </span>
            <time className="muted small" dateTime={event.created_at}>
              {formatDateTime(event.created_at)}
            </time>
          </span>
        </summary>
        <dl className="audit-details">
          <dt>Action</dt>
          <dd className="mono">{event.action}</dd>
          {event.actor_id ? (
            <>
              <dt>By</dt>
              <dd>
                {names.user(event.actor_id)} <span className="mono small">{event.actor_id}</span>
              </dd>
            </>
          ) : null}
          {event.credential && event.credential.kind !== 'session' ? (
            <>
              <dt>With</dt>
              <dd className="mono">{event.credential.id}</dd>
            </>
          ) : null}
          {event.target ? (
            <>
              <dt>Target</dt>
              <dd className="mono">
                {event.target.type} {event.target.id}
              </dd>
            </>
          ) : null}
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
  );
}

/**
 * A time bound typed in the format the rows show; it applies once it reads as
 * a time (a date alone is its midnight), and says so while it does not.
 */
function TimeFilter({
  label,
  value,
  onChange,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
}) {
  const id = useId();
  const invalid = value.trim() !== '' && !parseDateTime(value);
  return (
    <label>
      {label}
      <input
        className="mono time-filter"
        value={value}
        placeholder={TIME_FORMAT}
        inputMode="numeric"
        autoComplete="off"
        spellCheck={false}
        aria-invalid={invalid}
        aria-describedby={invalid ? `${id}-error ${TIMES_HINT}` : TIMES_HINT}
        onChange={(e) => onChange(e.target.value)}
      />
      {invalid ? (
        <span id={`${id}-error`} className="field-error small">
          Not a time yet: {TIME_FORMAT}
        </span>
      ) : null}
    </label>
  );
}
