import {
  createWebhook,
  deleteWebhook,
  listWebhookDeliveries,
  listWebhooks,
  rotateWebhookSecret,
  testWebhook,
  updateWebhook,
  WEBHOOK_EVENT_KINDS,
  type Webhook,
  type WebhookDelivery,
  type WebhookEventKind,
} from '@coffer/sdk/client/webhooks';
import type { Environment, Page } from '@coffer/sdk';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { client } from '../lib/client';
import { copyText } from '../lib/clipboard';
import { toProblem } from '../lib/errors';
import { ago, formatDate } from '../lib/format';
import { deliveriesKey, useEnvironments, webhooksKey, webhooksPageKey } from '../lib/queries';
import { useProjectContext } from '../app/ProjectLayout';
import { ConfirmDialog, Dialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { Field } from '../ui/Field';
import { Pagination } from '../ui/Pagination';

const slugsOf = (ids: string[], environments: Environment[] | undefined) =>
  ids.length === 0
    ? 'all environments'
    : ids.map((id) => environments?.find((e) => e.id === id)?.slug ?? id).join(', ');

function stateOf(w: Webhook): string {
  if (w.enabled) return w.failing_since ? `failing since ${ago(w.failing_since)}` : 'enabled';
  return w.disabled_reason === 'failing' ? 'disabled after failing' : 'disabled';
}

/** The project's webhooks (admins): register, test, switch on and off, rotate, delete, the log. */
export function WebhooksPage() {
  const project = useProjectContext();
  const queryClient = useQueryClient();
  const environments = useEnvironments(project.id);
  const [page, setPage] = useState(1);
  const [creating, setCreating] = useState(false);
  const [deleting, setDeleting] = useState<Webhook | null>(null);
  const [rotating, setRotating] = useState<Webhook | null>(null);
  const [shown, setShown] = useState<string | null>(null);
  const [secret, setSecret] = useState<{ title: string; value: string } | null>(null);
  const list = useQuery<Page<Webhook>>({
    queryKey: webhooksPageKey(project.id, page),
    queryFn: () => listWebhooks(client, project.id, { page, per_page: 20 }),
    placeholderData: keepPreviousData,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: webhooksKey(project.id) });
  const toggle = useMutation({
    mutationFn: (w: Webhook) => updateWebhook(client, project.id, w.id, { enabled: !w.enabled }),
    onSuccess: refresh,
  });
  const test = useMutation({
    mutationFn: (w: Webhook) => testWebhook(client, project.id, w.id),
    onSuccess: async (delivery) => {
      setShown(delivery.webhook_id);
      await refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (w: Webhook) => deleteWebhook(client, project.id, w.id),
    onSuccess: async () => {
      setDeleting(null);
      await refresh();
    },
  });
  const rotate = useMutation({
    mutationFn: (w: Webhook) => rotateWebhookSecret(client, project.id, w.id),
    onSuccess: async (rotated) => {
      setRotating(null);
      setSecret({ title: 'The new signing secret', value: rotated.secret });
      await refresh();
    },
  });

  return (
    <section className="page stack" aria-labelledby="webhooks-title">
      <h2 id="webhooks-title" className="visually-hidden">
        Webhooks
      </h2>
      <div className="page-header">
        <button type="button" className="primary" onClick={() => setCreating(true)}>
          New webhook
        </button>
      </div>
      <p className="muted small">
        Coffer sends this project's changes (which secrets, where, by whom — never a value) to your
        URL as they happen, signed as Standard Webhooks do. Failed deliveries are retried for a day;
        a receiver that keeps failing is switched off.
      </p>
      <ErrorNote error={toggle.error ?? test.error} />
      {list.isPending ? (
        <p className="muted">Loading…</p>
      ) : list.isError ? (
        <ErrorNote error={list.error} onRetry={() => void list.refetch()} />
      ) : list.data.data.length === 0 ? (
        <p className="muted">No webhooks yet.</p>
      ) : (
        <div className="table-scroll">
          <table className="table cards-narrow">
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Sends</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((w) => (
                <tr key={w.id}>
                  <td>
                    <div className="mono small">{w.url}</div>
                    {w.description ? <div className="small">{w.description}</div> : null}
                    <div className="muted small mono">{w.id}</div>
                  </td>
                  <td className="small" data-label="Sends">
                    <div>{w.event_kinds.length ? w.event_kinds.join(', ') : 'every event'}</div>
                    <div className="muted">in {slugsOf(w.environments, environments.data)}</div>
                  </td>
                  <td
                    className={w.enabled && !w.failing_since ? '' : 'warning-text'}
                    data-label="State"
                  >
                    {stateOf(w)}
                  </td>
                  <td className="row-actions">
                    <button
                      type="button"
                      onClick={() => setShown(shown === w.id ? null : w.id)}
                      aria-expanded={shown === w.id}
                      aria-label={`Deliveries of ${w.url}`}
                    >
                      Deliveries
                    </button>
                    {w.enabled ? (
                      <button
                        type="button"
                        disabled={test.isPending}
                        onClick={() => test.mutate(w)}
                        aria-label={`Send a test event to ${w.url}`}
                      >
                        Test
                      </button>
                    ) : null}
                    <button
                      type="button"
                      disabled={toggle.isPending}
                      onClick={() => toggle.mutate(w)}
                      aria-label={`${w.enabled ? 'Disable' : 'Enable'} ${w.url}`}
                    >
                      {w.enabled ? 'Disable' : 'Enable'}
                    </button>
                    <button
                      type="button"
                      onClick={() => {
                        rotate.reset();
                        setRotating(w);
                      }}
                      aria-label={`Rotate secret of ${w.url}`}
                    >
                      Rotate secret
                    </button>
                    <button
                      type="button"
                      className="danger"
                      onClick={() => {
                        remove.reset();
                        setDeleting(w);
                      }}
                      aria-label={`Delete ${w.url}`}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pagination info={list.data?.pagination} label="Webhooks" onPage={setPage} />
      {shown ? (
        <DeliveryLog
          key={shown}
          webhookId={shown}
          url={list.data?.data.find((w) => w.id === shown)?.url ?? shown}
        />
      ) : null}
      {creating ? (
        <CreateWebhookDialog
          environments={environments.data ?? []}
          onClose={() => setCreating(false)}
          onCreated={(value) => {
            setCreating(false);
            setSecret({ title: 'Your new webhook’s signing secret', value });
            void refresh();
          }}
        />
      ) : null}
      {secret ? (
        <SecretDialog title={secret.title} secret={secret.value} onClose={() => setSecret(null)} />
      ) : null}
      {deleting ? (
        <ConfirmDialog
          title={`Delete the webhook to ${deleting.url}?`}
          confirmLabel="Delete"
          busy={remove.isPending}
          error={<ErrorNote error={remove.error} />}
          onConfirm={() => remove.mutate(deleting)}
          onClose={() => setDeleting(null)}
        >
          <p>Nothing more is sent to it; its queue and delivery log are deleted.</p>
        </ConfirmDialog>
      ) : null}
      {rotating ? (
        <ConfirmDialog
          title="Rotate the signing secret?"
          confirmLabel="Rotate"
          busy={rotate.isPending}
          error={<ErrorNote error={rotate.error} />}
          onConfirm={() => rotate.mutate(rotating)}
          onClose={() => setRotating(null)}
        >
          <p>
            You get a new secret, shown once. For 24 hours every request is signed with both, so the
            receiver keeps verifying while you deploy the new one.
          </p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}

function SecretDialog({
  title,
  secret,
  onClose,
}: {
  title: string;
  secret: string;
  onClose: () => void;
}) {
  const [copied, setCopied] = useState(false);
  return (
    <Dialog title={title} onClose={onClose}>
      <div className="stack">
        <p className="notice">
          Copy it now: it is shown <strong>only once</strong>. Your receiver verifies each request
          with it (<code>webhook-signature</code>); see docs/webhooks.md for a Node snippet.
        </p>
        <output className="recovery-key mono" aria-label="Signing secret">
          {secret}
        </output>
        <div className="actions">
          <button
            type="button"
            className="primary"
            onClick={() => void copyText(secret).then(() => setCopied(true))}
          >
            {copied ? 'Copied' : 'Copy'}
          </button>
          <button type="button" onClick={onClose}>
            Done
          </button>
        </div>
      </div>
    </Dialog>
  );
}

function CreateWebhookDialog({
  environments,
  onClose,
  onCreated,
}: {
  environments: Environment[];
  onClose: () => void;
  onCreated: (secret: string) => void;
}) {
  const project = useProjectContext();
  const [envs, setEnvs] = useState<string[]>([]);
  const [kinds, setKinds] = useState<WebhookEventKind[]>([]);
  const create = useMutation({
    mutationFn: (input: { url: string; description: string }) =>
      createWebhook(client, project.id, {
        url: input.url,
        ...(input.description ? { description: input.description } : {}),
        environments: envs,
        event_kinds: kinds,
      }),
    onSuccess: (created) => onCreated(created.secret),
  });
  const problem = create.error ? toProblem(create.error) : null;

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    create.mutate({
      url: String(form.get('url') ?? '').trim(),
      description: String(form.get('description') ?? '').trim(),
    });
  }
  const toggle = <T,>(list: T[], item: T) =>
    list.includes(item) ? list.filter((x) => x !== item) : [...list, item];

  return (
    <Dialog title="New webhook" onClose={onClose}>
      <form className="stack" onSubmit={submit}>
        <Field
          label="URL"
          name="url"
          type="url"
          required
          autoFocus
          maxLength={2048}
          placeholder="https://deploy.example.com/hooks/coffer"
          error={problem?.fields.url ? problem.message : undefined}
          hint="HTTPS, on a public address."
        />
        <Field label="Description" name="description" maxLength={500} />
        <fieldset className="stack">
          <legend>Environments (none chosen: all)</legend>
          {environments.map((e) => (
            <label key={e.id} className="check">
              <input
                type="checkbox"
                checked={envs.includes(e.id)}
                onChange={() => setEnvs((l) => toggle(l, e.id))}
              />{' '}
              {e.name}
            </label>
          ))}
        </fieldset>
        <fieldset className="stack">
          <legend>Events (none chosen: all)</legend>
          {WEBHOOK_EVENT_KINDS.map((k) => (
            <label key={k} className="check mono small">
              <input
                type="checkbox"
                checked={kinds.includes(k)}
                onChange={() => setKinds((l) => toggle(l, k))}
              />{' '}
              {k}
            </label>
          ))}
        </fieldset>
        {problem && !problem.fields.url ? <ErrorNote error={create.error} /> : null}
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={create.isPending}>
            {create.isPending ? 'Creating…' : 'Create'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function attemptSummary(d: WebhookDelivery): string {
  const last = d.log.at(-1);
  if (!last) return d.status === 'pending' ? 'not tried yet' : '—';
  const code = last.status_code === null ? '' : `${last.status_code} · `;
  return `${code}${last.duration_ms} ms${last.error ? ` · ${last.error}` : ''}`;
}

/** The newest deliveries of one webhook, each with its attempts; refreshed while some are pending. */
function DeliveryLog({ webhookId, url }: { webhookId: string; url: string }) {
  const project = useProjectContext();
  const log = useQuery<Page<WebhookDelivery>>({
    queryKey: deliveriesKey(project.id, webhookId),
    queryFn: () => listWebhookDeliveries(client, project.id, webhookId, { per_page: 20 }),
    refetchInterval: (query) =>
      query.state.data?.data.some((d) => d.status === 'pending') ? 2000 : false,
  });
  return (
    <section className="stack" aria-labelledby="deliveries-title">
      <h3 id="deliveries-title">
        Deliveries to <span className="mono">{url}</span>
      </h3>
      {log.isPending ? (
        <p className="muted">Loading…</p>
      ) : log.isError ? (
        <ErrorNote error={log.error} onRetry={() => void log.refetch()} />
      ) : log.data.data.length === 0 ? (
        <p className="muted">Nothing sent yet. Send a test event to try the receiver.</p>
      ) : (
        <div className="table-scroll">
          <table className="table cards-narrow">
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last answer</th>
                <th scope="col">Queued</th>
              </tr>
            </thead>
            <tbody>
              {log.data.data.map((d) => (
                <tr key={d.id}>
                  <td>
                    <div className="mono small">{d.event_kind}</div>
                    <div className="muted small mono">{d.id}</div>
                  </td>
                  <td className={d.status === 'failed' ? 'warning-text' : ''} data-label="Status">
                    {d.status}
                    {d.status === 'pending' && d.next_attempt_at ? (
                      <div className="muted small">next {ago(d.next_attempt_at)}</div>
                    ) : null}
                  </td>
                  <td data-label="Attempts">{d.attempts}</td>
                  <td className="small" data-label="Last answer">
                    {attemptSummary(d)}
                    {d.log.at(-1)?.response_excerpt ? (
                      <div className="muted mono">{d.log.at(-1)!.response_excerpt}</div>
                    ) : null}
                  </td>
                  <td title={formatDate(d.created_at)} data-label="Queued">
                    {ago(d.created_at)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
