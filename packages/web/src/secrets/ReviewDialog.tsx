import {
  batchSecretEnvelopes,
  isCofferApiError,
  type BatchSecretItem,
  type Environment,
  type Project,
} from '@coffer/sdk';
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { client } from '../lib/client';
import { toProblem } from '../lib/errors';
import { auth } from '../lib/auth';
import { Dialog } from '../ui/Dialog';
import { RevealButton } from '../ui/RevealButton';
import { encryptFor, withCurrentEpoch } from './crypto';
import { fetchCurrent, secretsKey, type SecretMeta } from './data';
import { plaintext } from './plaintext';
import { staged, useStagedSummary, type StagedChange } from './store';

interface Conflict {
  environment: Environment;
  name: string;
  mine: StagedChange;
  /** The other writer's version: 0 when they deleted the secret. */
  theirVersion: number;
  theirValue: string | undefined;
}

type Outcome = { environment: Environment; error: unknown } | null;

/** Sends an environment's staged changes as one atomic batch, each with its expected version. */
async function saveEnvironment(projectId: string, environment: Environment) {
  const changes = staged.all().filter(([environmentId]) => environmentId === environment.id);
  await withCurrentEpoch(projectId, async (vault) => {
    const secrets: BatchSecretItem[] = [];
    const deletes: string[] = [];
    for (const [, name, change] of changes) {
      if (change.kind === 'delete') deletes.push(name);
      else {
        secrets.push({
          name,
          value: await encryptFor(vault, environment.id, name, change.value),
          expected_version: change.baseVersion,
        });
      }
    }
    return batchSecretEnvelopes(client, projectId, environment.id, {
      ...(secrets.length ? { secrets } : {}),
      ...(deletes.length ? { delete: deletes } : {}),
    });
  });
}

/**
 * The staged changes per environment (added / changed / deleted, values masked
 * until revealed), then one atomic batch per environment. A version conflict
 * shows, per secret, the other writer's value next to this one.
 */
export function ReviewDialog({
  project,
  environments,
  secrets,
  onClose,
}: {
  project: Project;
  environments: Environment[];
  secrets: Map<string, Map<string, SecretMeta>>;
  onClose: () => void;
}) {
  const queryClient = useQueryClient();
  useStagedSummary();
  const [busy, setBusy] = useState(false);
  const [failures, setFailures] = useState<Outcome[]>([]);
  const [conflicts, setConflicts] = useState<Conflict[]>([]);
  const [shown, setShown] = useState<Set<string>>(new Set());
  const all = staged.all();
  const groups = environments
    .map((environment) => ({
      environment,
      changes: all.filter(([e]) => e === environment.id).sort((a, b) => a[1].localeCompare(b[1])),
    }))
    .filter((g) => g.changes.length > 0);

  async function save() {
    setBusy(true);
    setFailures([]);
    setConflicts([]);
    const failed: Outcome[] = [];
    const found: Conflict[] = [];
    for (const { environment } of groups) {
      try {
        await saveEnvironment(project.id, environment);
        staged.clear(environment.id);
        await queryClient.invalidateQueries({ queryKey: secretsKey(project.id, environment.id) });
      } catch (error) {
        if (toProblem(error).signedOut) {
          auth.expired();
          return;
        }
        if (isCofferApiError(error, 'version_conflict')) {
          found.push(...(await conflictsOf(environment)));
        }
        failed.push({ environment, error });
      }
    }
    await queryClient.invalidateQueries({ queryKey: ['environments', project.id] });
    setBusy(false);
    setFailures(failed);
    setConflicts(found);
    if (failed.length === 0) onClose();
  }

  /** Which staged changes were overtaken: their base version is no longer the server's. */
  async function conflictsOf(environment: Environment): Promise<Conflict[]> {
    const current = await fetchCurrent(queryClient, project.id, environment.id, true);
    const out: Conflict[] = [];
    for (const [environmentId, name, mine] of staged.all()) {
      if (environmentId !== environment.id) continue;
      const theirs = current.get(name);
      const theirVersion = theirs?.version ?? 0;
      if (theirVersion === mine.baseVersion) continue;
      if (mine.kind === 'delete' && !theirs) {
        staged.set(environmentId, name, undefined);
        continue;
      }
      out.push({
        environment,
        name,
        mine,
        theirVersion,
        theirValue: theirs ? plaintext.get(environment.id, name, theirs.version) : undefined,
      });
    }
    return out;
  }

  const resolve = (conflict: Conflict, keep: 'mine' | 'theirs') => {
    const { environment, name, mine, theirVersion } = conflict;
    staged.set(
      environment.id,
      name,
      keep === 'theirs' ? undefined : { ...mine, baseVersion: theirVersion },
    );
    setConflicts((list) => list.filter((c) => c !== conflict));
  };

  const toggle = (key: string) =>
    setShown((set) => {
      const next = new Set(set);
      if (!next.delete(key)) next.add(key);
      return next;
    });

  const total = all.length;
  return (
    <Dialog title="Review changes" onClose={onClose} wide>
      <div className="stack">
        {total === 0 && conflicts.length === 0 ? <p>No pending changes.</p> : null}
        {groups.map(({ environment, changes }) => {
          const failure = failures.find((f) => f?.environment.id === environment.id);
          return (
            <section
              key={environment.id}
              className="review-env stack"
              aria-labelledby={`review-${environment.id}`}
            >
              <h3 id={`review-${environment.id}`}>
                {environment.name}{' '}
                <span className="muted small">
                  {changes.length} {changes.length === 1 ? 'change' : 'changes'}
                </span>
              </h3>
              <table className="table diff-table">
                <thead>
                  <tr>
                    <th scope="col">Change</th>
                    <th scope="col">Name</th>
                    <th scope="col">Current</th>
                    <th scope="col">New</th>
                    <th scope="col">
                      <span className="visually-hidden">Reveal</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {changes.map(([, name, change]) => {
                    const meta = secrets.get(environment.id)?.get(name);
                    const kind = change.kind === 'delete' ? 'deleted' : meta ? 'changed' : 'added';
                    const key = `${environment.id}/${name}`;
                    const visible = shown.has(key);
                    const before = meta
                      ? plaintext.get(environment.id, name, meta.version)
                      : undefined;
                    return (
                      <tr key={name} data-state={kind}>
                        <td>
                          <span className={`mark mark-${kind}`} aria-hidden="true">
                            {kind === 'added' ? '+' : kind === 'changed' ? '~' : '−'}
                          </span>{' '}
                          {kind}
                        </td>
                        <td className="mono">{name}</td>
                        <td className="mono">{meta ? (visible ? before : '••••••••') : '—'}</td>
                        <td className="mono">
                          {change.kind === 'set' ? (visible ? change.value : '••••••••') : '—'}
                        </td>
                        <td>
                          <RevealButton
                            shown={visible}
                            what={`${name} in ${environment.name}`}
                            onToggle={() => toggle(key)}
                          />
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
              {failure && !isCofferApiError(failure.error, 'version_conflict') ? (
                <div className="error-note" role="alert">
                  {environment.name} was not saved: {toProblem(failure.error).message}
                </div>
              ) : null}
            </section>
          );
        })}
        {conflicts.length > 0 ? (
          <section className="conflicts stack" aria-labelledby="conflicts-title">
            <h3 id="conflicts-title">Changed by someone else meanwhile</h3>
            <p>
              Nothing in these environments was saved. For each secret, keep your value or theirs,
              then save again.
            </p>
            {conflicts.map((conflict) => (
              <div
                key={`${conflict.environment.id}/${conflict.name}`}
                className="conflict card stack"
              >
                <p>
                  <strong className="mono">{conflict.name}</strong> in {conflict.environment.name}
                  {conflict.theirVersion === 0
                    ? ' was deleted by someone else.'
                    : ` is now at version ${conflict.theirVersion}.`}
                </p>
                <div className="conflict-values">
                  <div>
                    <div className="small muted">Theirs</div>
                    <code className="mono">
                      {conflict.theirVersion === 0
                        ? '(deleted)'
                        : (conflict.theirValue ?? '(no access)')}
                    </code>
                  </div>
                  <div>
                    <div className="small muted">Yours</div>
                    <code className="mono">
                      {conflict.mine.kind === 'delete' ? '(delete)' : conflict.mine.value}
                    </code>
                  </div>
                </div>
                <div className="actions start">
                  <button type="button" onClick={() => resolve(conflict, 'mine')}>
                    Keep mine
                  </button>
                  <button type="button" onClick={() => resolve(conflict, 'theirs')}>
                    Keep theirs
                  </button>
                </div>
              </div>
            ))}
          </section>
        ) : null}
        <div className="actions">
          <button type="button" onClick={onClose}>
            Close
          </button>
          <button
            type="button"
            className="primary"
            disabled={busy || total === 0 || conflicts.length > 0}
            onClick={() => void save()}
          >
            {busy ? 'Saving…' : `Save ${total} ${total === 1 ? 'change' : 'changes'}`}
          </button>
        </div>
      </div>
    </Dialog>
  );
}
