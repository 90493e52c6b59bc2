import { type Environment, type Page, type Role } from '@coffer/sdk';
import {
  listApiKeys,
  listCiTokens,
  revokeApiKey,
  revokeCiToken,
  type ApiKey,
  type CiToken,
  type Scope,
} from '@coffer/sdk/client/tokens';
import { createApiKey, createCiToken } from '@coffer/sdk/vault/tokens';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { client } from '../lib/client';
import { copyText } from '../lib/clipboard';
import { toProblem } from '../lib/errors';
import { ago, formatDate } from '../lib/format';
import { keyring } from '../lib/keyring';
import { describeUser, useMemberDirectory } from '../lib/members';
import { tokensKey, tokensPageKey, useEnvironments } from '../lib/queries';
import { ConfirmDialog, Dialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { Field } from '../ui/Field';
import { Pagination } from '../ui/Pagination';
import { useProjectContext } from '../app/ProjectLayout';

type Kind = 'api-key' | 'ci-token';

/** API keys (admins) and CI tokens (admins and developers) of the project. */
export function TokensPage() {
  const project = useProjectContext();
  return (
    <section className="page stack">
      {project.role === 'admin' ? <TokenSection kind="api-key" /> : null}
      <TokenSection kind="ci-token" />
    </section>
  );
}

function scopeText(scopes: Record<string, Scope>, environments: Environment[] | undefined): string {
  const entries = Object.entries(scopes);
  if (entries.length === 0) return 'names only';
  return entries
    .map(([id, scope]) => `${environments?.find((e) => e.id === id)?.slug ?? id}:${scope}`)
    .join(', ');
}

function TokenSection({ kind }: { kind: Kind }) {
  const project = useProjectContext();
  const queryClient = useQueryClient();
  const environments = useEnvironments(project.id);
  const directory = useMemberDirectory(project.id);
  const [page, setPage] = useState(1);
  const [creating, setCreating] = useState(false);
  const [revoking, setRevoking] = useState<ApiKey | CiToken | null>(null);
  const list = useQuery<Page<ApiKey | CiToken>>({
    queryKey: tokensPageKey(project.id, kind, page),
    queryFn: (): Promise<Page<ApiKey | CiToken>> =>
      kind === 'api-key'
        ? listApiKeys(client, project.id, { page, per_page: 20 })
        : listCiTokens(client, project.id, { page, per_page: 20 }),
    placeholderData: keepPreviousData,
  });
  const revoke = useMutation({
    mutationFn: (id: string) =>
      kind === 'api-key'
        ? revokeApiKey(client, project.id, id)
        : revokeCiToken(client, project.id, id),
    onSuccess: async () => {
      setRevoking(null);
      await queryClient.invalidateQueries({ queryKey: tokensKey(project.id, kind) });
    },
  });
  const title = kind === 'api-key' ? 'API keys' : 'CI tokens';
  const now = Date.now();

  return (
    <section className="stack" aria-labelledby={`${kind}-title`}>
      <div className="page-header">
        <h2 id={`${kind}-title`}>{title}</h2>
        <button type="button" className="primary" onClick={() => setCreating(true)}>
          {kind === 'api-key' ? 'New API key' : 'New CI token'}
        </button>
      </div>
      <p className="muted small">
        {kind === 'api-key'
          ? 'For applications and scripts: a role, per-environment scopes and an optional expiry. It decrypts only the environments in its scopes.'
          : 'For pipelines: at most one hour, never more than its creator may do.'}
      </p>
      {list.isPending ? (
        <p className="muted">Loading…</p>
      ) : list.isError ? (
        <ErrorNote error={list.error} onRetry={() => void list.refetch()} />
      ) : list.data.data.length === 0 ? (
        <p className="muted">{kind === 'api-key' ? 'No API keys yet.' : 'No CI tokens yet.'}</p>
      ) : (
        <div className="table-scroll">
          <table className="table cards-narrow">
            <thead>
              <tr>
                <th scope="col">Name</th>
                {kind === 'api-key' ? <th scope="col">Role</th> : null}
                <th scope="col">Scopes</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((token) => {
                const expired =
                  token.expires_at !== null && new Date(token.expires_at).getTime() <= now;
                return (
                  <tr key={token.id}>
                    <td>
                      <div>{token.name || <span className="muted">(unnamed)</span>}</div>
                      <div className="muted small mono">{token.id}</div>
                    </td>
                    {kind === 'api-key' ? (
                      <td data-label="Role">{(token as ApiKey).role}</td>
                    ) : null}
                    <td className="mono small" data-label="Scopes">
                      {scopeText(token.scopes, environments.data)}
                    </td>
                    <td data-label="Created" title={formatDate(token.created_at)}>
                      {ago(token.created_at)}
                      <div className="muted small">
                        by {describeUser(directory.data, token.created_by)}
                      </div>
                    </td>
                    <td data-label="Expires">
                      {token.expires_at ? (
                        <span title={formatDate(token.expires_at)}>{ago(token.expires_at)}</span>
                      ) : (
                        'never'
                      )}
                    </td>
                    <td data-label="Last used">
                      {token.last_used_at ? ago(token.last_used_at) : 'never'}
                    </td>
                    <td data-label="Status">
                      {token.revoked_at
                        ? `revoked ${ago(token.revoked_at)}`
                        : expired
                          ? 'expired'
                          : 'active'}
                    </td>
                    <td className="row-actions">
                      {!token.revoked_at && !expired ? (
                        <button
                          type="button"
                          className="danger"
                          onClick={() => {
                            revoke.reset();
                            setRevoking(token);
                          }}
                          aria-label={`Revoke ${token.name || token.id}`}
                        >
                          Revoke
                        </button>
                      ) : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {list.data?.data.length ? (
        <Pagination info={list.data.pagination} label={title} onPage={setPage} />
      ) : null}
      {creating ? (
        <CreateTokenDialog
          kind={kind}
          environments={environments.data ?? []}
          onClose={() => setCreating(false)}
          onCreated={() =>
            void queryClient.invalidateQueries({ queryKey: tokensKey(project.id, kind) })
          }
        />
      ) : null}
      {revoking ? (
        <ConfirmDialog
          title={`Revoke ${revoking.name || revoking.id}?`}
          confirmLabel="Revoke"
          busy={revoke.isPending}
          error={<ErrorNote error={revoke.error} />}
          onConfirm={() => revoke.mutate(revoking.id)}
          onClose={() => setRevoking(null)}
        >
          <p>Every request with it is refused from now on (401), on every server instance.</p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}

const EXPIRIES: [string, number | null][] = [
  ['Never', null],
  ['7 days', 7],
  ['30 days', 30],
  ['90 days', 90],
  ['1 year', 365],
];
const TTLS: [string, number][] = [
  ['15 minutes', 900],
  ['30 minutes', 1800],
  ['1 hour', 3600],
];

function CreateTokenDialog({
  kind,
  environments,
  onClose,
  onCreated,
}: {
  kind: Kind;
  environments: Environment[];
  onClose: () => void;
  onCreated: () => void;
}) {
  const project = useProjectContext();
  const [role, setRole] = useState<Role>('developer');
  const [scopes, setScopes] = useState<Record<string, Scope | ''>>({});
  const [credential, setCredential] = useState<string | null>(null);
  const [copied, setCopied] = useState<'credential' | 'command' | null>(null);
  const create = useMutation({
    mutationFn: async (input: { name: string; expiryDays: number | null; ttl: number }) => {
      const session = await keyring.vault(project.id);
      const chosen = Object.fromEntries(
        Object.entries(scopes).filter(([, s]) => s !== ''),
      ) as Record<string, Scope>;
      if (kind === 'api-key') {
        const { credential } = await createApiKey(session, {
          name: input.name,
          role,
          scopes: role === 'viewer' ? {} : chosen,
          ...(input.expiryDays !== null
            ? { expiresAt: new Date(Date.now() + input.expiryDays * 86_400_000) }
            : {}),
        });
        return credential;
      }
      const { credential } = await createCiToken(session, {
        ...(input.name ? { name: input.name } : {}),
        scopes: chosen,
        ttlSeconds: input.ttl,
      });
      return credential;
    },
    onSuccess: (value) => {
      setCredential(value);
      onCreated();
    },
  });
  const problem = create.error ? toProblem(create.error) : null;

  if (credential) {
    return (
      <Dialog
        title={kind === 'api-key' ? 'Your new API key' : 'Your new CI token'}
        onClose={onClose}
      >
        <div className="stack">
          <p className="notice">
            Copy it now: it is shown <strong>only once</strong>. Coffer keeps only its public half;
            the part after the dot decrypts and never reaches the server.
          </p>
          <output className="recovery-key mono" aria-label="Credential">
            {credential}
          </output>
          <div className="actions start">
            <button
              type="button"
              className="primary"
              onClick={() => void copyText(credential).then(() => setCopied('credential'))}
            >
              {copied === 'credential' ? 'Copied' : 'Copy'}
            </button>
          </div>
          {kind === 'ci-token' || role !== 'viewer' ? (
            <RunLine
              credential={credential}
              environments={environments.filter((e) => scopes[e.id])}
              copied={copied === 'command'}
              onCopy={(line) => void copyText(line).then(() => setCopied('command'))}
            />
          ) : (
            <p className="small muted">
              A viewer key lists names only; use it with the SDK or the API.
            </p>
          )}
          <div className="actions">
            <button type="button" onClick={onClose}>
              Done
            </button>
          </div>
        </div>
      </Dialog>
    );
  }

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const expiry = String(form.get('expiry') ?? '');
    create.mutate({
      name: String(form.get('name') ?? '').trim(),
      expiryDays: expiry === '' ? null : Number(expiry),
      ttl: Number(form.get('ttl') ?? 3600),
    });
  }

  const noScopes = kind === 'ci-token' && Object.values(scopes).every((s) => !s);
  return (
    <Dialog title={kind === 'api-key' ? 'New API key' : 'New CI token'} onClose={onClose}>
      <form className="stack" onSubmit={submit}>
        <Field
          label="Name"
          name="name"
          required={kind === 'api-key'}
          autoFocus
          maxLength={100}
          error={problem?.fields.name}
        />
        {kind === 'api-key' ? (
          <div className="field">
            <label htmlFor="token-role">Role</label>
            <select id="token-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
              <option value="admin">admin</option>
              <option value="developer">developer</option>
              <option value="viewer">viewer (names only)</option>
            </select>
          </div>
        ) : null}
        {role !== 'viewer' || kind === 'ci-token' ? (
          <fieldset className="stack">
            <legend>Environments it may use</legend>
            {environments.map((environment) => (
              <label key={environment.id} className="scope-row">
                <span>{environment.name}</span>
                <select
                  aria-label={`Scope in ${environment.name}`}
                  value={scopes[environment.id] ?? ''}
                  onChange={(e) =>
                    setScopes((s) => ({ ...s, [environment.id]: e.target.value as Scope | '' }))
                  }
                >
                  <option value="">none</option>
                  <option value="read">read</option>
                  <option value="read_write">read and write</option>
                </select>
              </label>
            ))}
          </fieldset>
        ) : null}
        {kind === 'api-key' ? (
          <div className="field">
            <label htmlFor="token-expiry">Expires</label>
            <select id="token-expiry" name="expiry" defaultValue="90">
              {EXPIRIES.map(([label, days]) => (
                <option key={label} value={days ?? ''}>
                  {label}
                </option>
              ))}
            </select>
          </div>
        ) : (
          <div className="field">
            <label htmlFor="token-ttl">Valid for</label>
            <select id="token-ttl" name="ttl" defaultValue="3600">
              {TTLS.map(([label, seconds]) => (
                <option key={seconds} value={seconds}>
                  {label}
                </option>
              ))}
            </select>
          </div>
        )}
        {problem &&
        Object.keys(problem.fields).filter((f) => f !== 'name').length >= 0 &&
        !problem.fields.name ? (
          <ErrorNote error={create.error} />
        ) : null}
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={create.isPending || noScopes}>
            {create.isPending ? 'Creating…' : 'Create'}
          </button>
        </div>
        {noScopes ? <p className="muted small">Choose at least one environment.</p> : null}
      </form>
    </Dialog>
  );
}

/**
 * The command a pipeline or a container runs with the new credential: the
 * `coffer` CLI reads it from COFFER_TOKEN and this server from COFFER_SERVER.
 */
function runLine(server: string, credential: string, environment: string | null): string {
  const env = environment ? ` --env ${environment}` : '';
  return `COFFER_SERVER=${server} COFFER_TOKEN=${credential} coffer run${env} -- <command>`;
}

function RunLine({
  credential,
  environments,
  copied,
  onCopy,
}: {
  credential: string;
  environments: Environment[];
  copied: boolean;
  onCopy: (line: string) => void;
}) {
  const environment = environments[0]?.slug ?? null;
  const line = runLine(window.location.origin, credential, environment);
  return (
    <div className="stack run-line">
      <p>Run a command with its secrets:</p>
      <output className="recovery-key mono" aria-label="Run a command with its secrets">
        {line}
      </output>
      <div className="actions start">
        <button type="button" onClick={() => onCopy(line)}>
          {copied ? 'Copied the command' : 'Copy the command'}
        </button>
      </div>
      <p className="small muted">
        Replace <code>&lt;command&gt;</code> with what should get the secrets as environment
        variables{environments.length > 1 ? '; --env picks one of its environments' : ''}. The SDK
        takes the same credential.
      </p>
    </div>
  );
}
