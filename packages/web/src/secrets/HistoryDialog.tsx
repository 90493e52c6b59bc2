import {
  allPages,
  isStaleEpoch,
  listSecretVersions,
  putSecretEnvelope,
  rollbackSecretEnvelope,
  type Environment,
  type Project,
  type SecretVersion,
} from '@coffer/sdk';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useAuth } from '../lib/auth';
import { client } from '../lib/client';
import { ago, formatDate } from '../lib/format';
import { ConfirmDialog, Dialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { RevealButton } from '../ui/RevealButton';
import { decryptEnvelope, encryptFor, withCurrentEpoch } from './crypto';
import { lineDiff } from './diff';
import { secretsKey, versionsKey } from '../lib/queries';

const allVersions = (projectId: string, environmentId: string, name: string) =>
  allPages((page) =>
    listSecretVersions(client, projectId, environmentId, name, {
      page,
      per_page: 100,
      sort: 'version',
      order: 'desc',
    }),
  );

/** A secret's versions with who and when; reveal, diff any two, roll back. */
export function HistoryDialog({
  project,
  environment,
  name,
  onClose,
}: {
  project: Project;
  environment: Environment;
  name: string;
  onClose: () => void;
}) {
  const queryClient = useQueryClient();
  const state = useAuth();
  const me = state.status === 'signed-in' ? state.user.id : null;
  const canRead = project.role !== 'viewer';
  const versions = useQuery({
    queryKey: versionsKey(project.id, environment.id, name),
    queryFn: () => allVersions(project.id, environment.id, name),
  });
  const [values, setValues] = useState<Map<number, string>>(new Map());
  const [picked, setPicked] = useState<number[]>([]);
  const [confirming, setConfirming] = useState<number | null>(null);
  const [revealError, setRevealError] = useState<unknown>(null);
  const current = versions.data?.[0]?.version;

  const reveal = async (version: SecretVersion) => {
    if (values.has(version.version) || version.value === undefined) return;
    try {
      const value = await decryptEnvelope(project.id, environment.id, name, version.value);
      setValues((map) => new Map(map).set(version.version, value));
    } catch (error) {
      setRevealError(error);
    }
  };
  const hide = (version: number) =>
    setValues((map) => {
      const next = new Map(map);
      next.delete(version);
      return next;
    });

  const rollback = useMutation({
    mutationFn: async (version: number) => {
      try {
        return await rollbackSecretEnvelope(client, project.id, environment.id, name, {
          version,
          ...(current !== undefined ? { expected_version: current } : {}),
        });
      } catch (error) {
        // A version from before a re-key cannot be copied by the server: write its value again.
        if (!isStaleEpoch(error)) throw error;
        const old = versions.data?.find((v) => v.version === version);
        if (!old?.value) throw error;
        const value = await decryptEnvelope(project.id, environment.id, name, old.value);
        return withCurrentEpoch(project.id, async (vault) =>
          putSecretEnvelope(client, project.id, environment.id, name, {
            value: await encryptFor(vault, environment.id, name, value),
            ...(current !== undefined ? { expected_version: current } : {}),
          }),
        );
      }
    },
    onSuccess: async () => {
      setConfirming(null);
      await queryClient.invalidateQueries({
        queryKey: versionsKey(project.id, environment.id, name),
      });
      await queryClient.invalidateQueries({ queryKey: secretsKey(project.id, environment.id) });
    },
  });

  const [older, newer] = [...picked].sort((x, y) => x - y);
  const diffReady =
    older !== undefined && newer !== undefined && values.has(older) && values.has(newer);

  return (
    <Dialog title={`History of ${name} in ${environment.name}`} onClose={onClose} wide>
      <div className="stack">
        {versions.isPending ? <p className="muted">Loading versions…</p> : null}
        <ErrorNote error={versions.error} onRetry={() => void versions.refetch()} />
        <ErrorNote error={revealError} />
        {versions.data ? (
          <div className="table-scroll">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">
                    <span className="visually-hidden">Compare</span>
                  </th>
                  <th scope="col">Version</th>
                  <th scope="col">When</th>
                  <th scope="col">By</th>
                  <th scope="col">Value</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {versions.data.map((version) => (
                  <tr key={version.id}>
                    <td>
                      <input
                        type="checkbox"
                        aria-label={`Compare version ${version.version}`}
                        checked={picked.includes(version.version)}
                        onChange={(e) =>
                          setPicked((list) =>
                            e.target.checked
                              ? [...list.slice(-1), version.version]
                              : list.filter((v) => v !== version.version),
                          )
                        }
                      />
                    </td>
                    <td>
                      v{version.version}
                      {version.version === current ? (
                        <span className="muted small"> (current)</span>
                      ) : null}
                    </td>
                    <td title={formatDate(version.created_at)}>{ago(version.created_at)}</td>
                    <td className="small">
                      {version.created_by === me ? 'you' : (version.created_by ?? '—')}
                    </td>
                    <td className="mono">
                      {values.has(version.version)
                        ? values.get(version.version)
                        : canRead
                          ? '••••••••'
                          : 'no access'}
                    </td>
                    <td className="row-actions">
                      {canRead ? (
                        <RevealButton
                          shown={values.has(version.version)}
                          what={`version ${version.version}`}
                          onToggle={() =>
                            values.has(version.version)
                              ? hide(version.version)
                              : void reveal(version)
                          }
                        />
                      ) : null}
                      {canRead && version.version !== current ? (
                        <button type="button" onClick={() => setConfirming(version.version)}>
                          Roll back
                        </button>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
        {picked.length === 2 && canRead ? (
          <section className="stack" aria-label="Differences">
            <h3>
              v{older} → v{newer}
            </h3>
            {diffReady ? (
              <pre className="diff mono">
                {lineDiff(values.get(older!)!, values.get(newer!)!).map((line, i) => (
                  <span key={i} className={`diff-${line.kind}`}>
                    {line.kind === 'added' ? '+ ' : line.kind === 'removed' ? '- ' : '  '}
                    {line.text}
                    {'\n'}
                  </span>
                ))}
              </pre>
            ) : (
              <button
                type="button"
                onClick={() =>
                  versions.data
                    ?.filter((v) => picked.includes(v.version))
                    .forEach((v) => void reveal(v))
                }
              >
                Reveal both to see the differences
              </button>
            )}
          </section>
        ) : (
          <p className="muted small">Tick two versions to see how they differ.</p>
        )}
      </div>
      {confirming !== null ? (
        <ConfirmDialog
          title={`Roll ${name} back to v${confirming}?`}
          confirmLabel="Roll back"
          busy={rollback.isPending}
          error={<ErrorNote error={rollback.error} />}
          onConfirm={() => rollback.mutate(confirming)}
          onClose={() => setConfirming(null)}
        >
          <p>
            The value of version {confirming} becomes a new version {(current ?? 0) + 1} in{' '}
            {environment.name}; the history keeps every version.
          </p>
        </ConfirmDialog>
      ) : null}
    </Dialog>
  );
}
