import {
  batchSecretEnvelopes,
  isCofferApiError,
  type BatchSecretItem,
  type Environment,
  type Project,
} from '@coffer/sdk';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { client } from '../lib/client';
import { toProblem } from '../lib/errors';
import { auth } from '../lib/auth';
import { Dialog } from '../ui/Dialog';
import { RevealButton } from '../ui/RevealButton';
import { encryptFor, withCurrentEpoch } from './crypto';
import { fetchCurrent, type SecretMeta } from './data';
import { charDiff, type Piece } from './diff';
import { usePreview } from './references';
import { plaintext } from './plaintext';
import { staged, useStagedSummary, type StagedChange } from './store';
import './dialogs.css';
import { environmentsKey, secretsKey } from '../lib/queries';

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
    await queryClient.invalidateQueries({ queryKey: environmentsKey(project.id) });
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
  const canSave = !busy && total > 0 && conflicts.length === 0;
  const everyKey = [
    ...groups.flatMap(({ environment, changes }) =>
      changes.map(([, name]) => `${environment.id}/${name}`),
    ),
    ...conflicts.map((c) => `conflict/${c.environment.id}/${c.name}`),
  ];
  const allShown = everyKey.length > 0 && everyKey.every((key) => shown.has(key));

  // Ctrl+Enter (⌘+Enter on a Mac) saves, from anywhere in the dialog.
  const saveRef = useRef<() => void>(() => undefined);
  saveRef.current = () => {
    if (canSave) void save();
  };
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        saveRef.current();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  return (
    <Dialog title="Review changes" onClose={onClose} wide>
      <div className="stack review">
        {total === 0 && conflicts.length === 0 ? (
          <p>No pending changes.</p>
        ) : (
          <div className="review-toolbar">
            <p className="muted small">Values stay masked until you reveal them.</p>
            <button
              type="button"
              aria-pressed={allShown}
              onClick={() => setShown(allShown ? new Set() : new Set(everyKey))}
            >
              {allShown ? 'Hide all' : 'Reveal all'}
            </button>
          </div>
        )}
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
              <ul className="review-list">
                {changes.map(([, name, change]) => {
                  const meta = secrets.get(environment.id)?.get(name);
                  const key = `${environment.id}/${name}`;
                  return (
                    <ReviewItem
                      key={name}
                      name={name}
                      environment={environment.name}
                      environmentId={environment.id}
                      change={change}
                      meta={meta}
                      before={meta ? plaintext.get(environment.id, name, meta.version) : undefined}
                      shown={shown.has(key)}
                      onToggle={() => toggle(key)}
                    />
                  );
                })}
              </ul>
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
            {conflicts.map((conflict) => {
              const key = `conflict/${conflict.environment.id}/${conflict.name}`;
              const visible = shown.has(key);
              return (
                <div key={key} className="conflict card stack">
                  <div className="review-item-head">
                    <p>
                      <strong className="mono">{conflict.name}</strong> in{' '}
                      {conflict.environment.name}
                      {conflict.theirVersion === 0
                        ? ' was deleted by someone else.'
                        : ` is now at version ${conflict.theirVersion}.`}
                    </p>
                    <RevealButton
                      shown={visible}
                      what={`both values of ${conflict.name} in ${conflict.environment.name}`}
                      onToggle={() => toggle(key)}
                    />
                  </div>
                  <div className="review-values">
                    <div>
                      <div className="small muted">Theirs</div>
                      <code className="mono">
                        {conflict.theirVersion === 0
                          ? '(deleted)'
                          : conflict.theirValue === undefined
                            ? '(no access)'
                            : visible
                              ? conflict.theirValue
                              : MASK}
                      </code>
                    </div>
                    <div>
                      <div className="small muted">Yours</div>
                      <code className="mono">
                        {conflict.mine.kind === 'delete'
                          ? '(delete)'
                          : visible
                            ? conflict.mine.value
                            : MASK}
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
              );
            })}
          </section>
        ) : null}
        <div className="dialog-footer">
          <div className="actions">
            {canSave ? (
              <span className="muted small review-shortcut">
                <kbd>{SAVE_KEY}</kbd> saves
              </span>
            ) : null}
            <button type="button" onClick={onClose}>
              Close
            </button>
            <button
              type="button"
              className="primary"
              disabled={!canSave}
              title={`Save (${SAVE_KEY})`}
              onClick={() => void save()}
            >
              {busy ? 'Saving…' : `Save ${total} ${total === 1 ? 'change' : 'changes'}`}
            </button>
          </div>
        </div>
      </div>
    </Dialog>
  );
}

const MASK = '••••••••';
const SAVE_KEY = /Mac|iPhone|iPad/.test(navigator.userAgent) ? '⌘+Enter' : 'Ctrl+Enter';

/** One staged change as a card: what happens, the name, current and new value side by side. */
function ReviewItem({
  name,
  environment,
  environmentId,
  change,
  meta,
  before,
  shown,
  onToggle,
}: {
  name: string;
  environment: string;
  environmentId: string;
  change: StagedChange;
  meta: SecretMeta | undefined;
  before: string | undefined;
  shown: boolean;
  onToggle: () => void;
}) {
  const kind = change.kind === 'delete' ? 'deleted' : meta ? 'changed' : 'added';
  const after = change.kind === 'set' ? change.value : undefined;
  // The raw text above, and what a program will read below it.
  const preview = usePreview(environmentId, name, after?.includes('${') ?? false);
  const diff =
    shown && before !== undefined && after !== undefined ? charDiff(before, after) : null;
  const value = (text: string | undefined, pieces: Piece[] | undefined, absent: string) =>
    text === undefined ? (
      <span className="muted">{absent}</span>
    ) : !shown ? (
      MASK
    ) : pieces ? (
      pieces.map((piece, i) =>
        piece.kind === 'removed' ? (
          <del key={i}>{piece.text}</del>
        ) : piece.kind === 'added' ? (
          <ins key={i}>{piece.text}</ins>
        ) : (
          <span key={i}>{piece.text}</span>
        ),
      )
    ) : (
      text
    );
  return (
    <li className="review-item" data-state={kind}>
      <div className="review-item-head">
        <span className={`mark mark-${kind}`} aria-hidden="true">
          {kind === 'added' ? '+' : kind === 'changed' ? '~' : '−'}
        </span>
        <span className="review-kind">{kind}</span>
        <span className="mono review-name">{name}</span>
        {meta || after !== undefined ? (
          <RevealButton shown={shown} what={`${name} in ${environment}`} onToggle={onToggle} />
        ) : null}
      </div>
      <div className="review-values">
        <div>
          <div className="small muted">Current{meta ? ` (v${meta.version})` : ''}</div>
          <code className="mono">
            {value(meta ? (before ?? '') : undefined, diff?.before, 'not in this environment')}
          </code>
        </div>
        <div>
          <div className="small muted">New</div>
          <code className="mono">{value(after, diff?.after, 'deleted')}</code>
          {preview?.reason ? (
            <div className="reference-error">{preview.reason}</div>
          ) : preview?.value != null && shown ? (
            <div className="preview mono">resolves to {preview.value}</div>
          ) : null}
        </div>
      </div>
    </li>
  );
}
