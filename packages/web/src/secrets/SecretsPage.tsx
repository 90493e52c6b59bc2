import { isCofferApiError, type Environment } from '@coffer/sdk';
import { useQueryClient } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import {
  lazy,
  memo,
  Suspense,
  useCallback,
  useEffect,
  useMemo,
  useRef,
  useState,
  type KeyboardEvent,
} from 'react';
import { Link } from 'react-router';
import { useAuth } from '../lib/auth';
import { copyText } from '../lib/clipboard';
import { environmentsKey, useEnvironments, useVaultStatus } from '../lib/queries';
import { useProjectContext } from '../app/ProjectLayout';
import { ErrorNote } from '../ui/ErrorNote';
import { Cell, valueOf } from './Cell';
import type { SecretMeta as Meta } from './data';
import { useSecretsOf, type SecretMeta } from './data';
import { loadOverrides, registerGrid } from './references';
import { OverrideDialogHost } from './OverrideActions';
import { activeCell, cellId, editingCell, focusCell, focusedCell, hoveredCell } from './grid-state';
import {
  bindProject,
  discardAll,
  environmentName,
  onReviewRequest,
  restoreChanges,
  revealed,
  settleRestored,
  staged,
  stagedEnvironmentNames,
  useNewStagedNames,
  useRestoredNote,
  useStagedNames,
  useStagedSummary,
  type StagedChange,
} from './store';
import { listNames } from './unsaved';
import { useLiveUpdates } from './live';
import { ConfirmDialog } from '../ui/Dialog';
import { EyeIcon } from '../ui/icons';
import { keyring } from '../lib/keyring';
import { fingerprint } from '@coffer/sdk';

type Open =
  | { kind: 'review' }
  | { kind: 'add' }
  | { kind: 'discard' }
  | { kind: 'compare' }
  | { kind: 'shortcuts' }
  | { kind: 'text'; environment: Environment }
  | { kind: 'history'; environment: Environment; name: string }
  | null;

// The dialogs load when first opened: the first visit carries the grid only.
const AddSecretDialog = lazy(() =>
  import('./AddSecretDialog').then((m) => ({ default: m.AddSecretDialog })),
);
const CompareDialog = lazy(() =>
  import('./CompareDialog').then((m) => ({ default: m.CompareDialog })),
);
const EditAsTextDialog = lazy(() =>
  import('./EditAsTextDialog').then((m) => ({ default: m.EditAsTextDialog })),
);
const HistoryDialog = lazy(() =>
  import('./HistoryDialog').then((m) => ({ default: m.HistoryDialog })),
);
const ReviewDialog = lazy(() =>
  import('./ReviewDialog').then((m) => ({ default: m.ReviewDialog })),
);
const RestoredNote = lazy(() =>
  import('./SafetyNotices').then((m) => ({ default: m.RestoredNote })),
);
const ShortcutsDialog = lazy(() =>
  import('./ShortcutsDialog').then((m) => ({ default: m.ShortcutsDialog })),
);

/** The project's secrets: a row per name, a column per environment. */
export function SecretsPage() {
  const project = useProjectContext();
  const environments = useEnvironments(project.id);
  const vault = useVaultStatus(project.id);
  const holdsKey = (vault.data?.grants.length ?? 0) > 0;
  const canRead = project.role !== 'viewer' && holdsKey;
  const canWrite = canRead;
  const envs = useMemo(() => environments.data ?? [], [environments.data]);
  const secrets = useSecretsOf(project.id, envs, canRead, vault.isSuccess);
  // References preview from what is on screen; the user's own overrides are marked.
  useEffect(() => {
    registerGrid(envs.map((env, i) => ({ id: env.id, slug: env.slug, secrets: secrets[i]?.data })));
  });
  useEffect(() => {
    if (canRead && vault.isSuccess) void loadOverrides(project.id);
  }, [canRead, vault.isSuccess, project.id]);
  const [filter, setFilter] = useState('');
  const [view, setView] = useState<View>({ kind: 'all' });
  const [undo, setUndo] = useState<[string, string, StagedChange][] | null>(null);
  const restored = useRestoredNote();

  const [open, setOpen] = useState<Open>(null);
  const [announcement, setAnnouncement] = useState('');
  const filterRef = useRef<HTMLInputElement>(null);
  const gridRef = useRef<HTMLTableElement>(null);

  const byEnvironment = useMemo(() => {
    const out = new Map<string, Map<string, SecretMeta>>();
    envs.forEach((env, i) => out.set(env.id, secrets[i]?.data ?? new Map()));
    return out;
  }, [envs, secrets]);
  const loading = environments.isPending || vault.isPending || secrets.some((s) => s.isPending);
  // An environment deleted by someone else meanwhile (e.g. while this dashboard was
  // locked) answers 404: the list of environments is fetched again, not shown as a failure.
  const gone = secrets.some((s) => isCofferApiError(s.error) && s.error.status === 404);
  const failed =
    environments.error ??
    vault.error ??
    secrets.find((s) => s.error && !(isCofferApiError(s.error) && s.error.status === 404))?.error;
  const queryClient = useQueryClient();
  const auth = useAuth();
  // Other people's saves, live: refreshed here, announced below.
  const liveNotes = useLiveUpdates(
    project.id,
    envs,
    auth.status === 'signed-in' ? auth.user.id : null,
  );
  useEffect(() => {
    if (gone) void queryClient.invalidateQueries({ queryKey: environmentsKey(project.id) });
  }, [gone, queryClient, project.id]);

  const known = useCallback(
    (name: string) => [...byEnvironment.values()].some((map) => map.has(name)),
    [byEnvironment],
  );
  // Names added only in the staging area appear as rows too.
  const newNames = useNewStagedNames(known);
  // Rows with a staged change, for the "Changed" view (re-renders only while that view is on).
  const stagedNames = useStagedNames(view.kind === 'changed');
  const names = useMemo(() => {
    const all = new Set<string>(newNames ? newNames.split('\n') : []);
    for (const map of byEnvironment.values()) for (const name of map.keys()) all.add(name);
    const needle = filter.trim().toLowerCase();
    const changed = new Set(stagedNames.split('\n'));
    const isMissing = (name: string) =>
      envs.some(
        (env) =>
          (view.kind !== 'missing' || !view.environmentId || view.environmentId === env.id) &&
          !byEnvironment.get(env.id)?.has(name),
      );
    return [...all]
      .filter((n) => n.toLowerCase().includes(needle))
      .filter((n) =>
        view.kind === 'missing' ? isMissing(n) : view.kind === 'changed' ? changed.has(n) : true,
      )
      .sort();
  }, [byEnvironment, filter, newNames, view, stagedNames, envs]);

  const missing = useMemo(() => {
    const all = new Set<string>();
    for (const map of byEnvironment.values()) for (const name of map.keys()) all.add(name);
    return new Map(
      envs.map((env) => [
        env.id,
        [...all].filter((n) => !byEnvironment.get(env.id)?.has(n)).length,
      ]),
    );
  }, [byEnvironment, envs]);

  // Big projects render only the rows in view (and a few around them): a reveal or an
  // edit then lays out and paints a small table instead of thousands of cells.
  const scrollRef = useRef<HTMLDivElement>(null);
  const virtual = names.length > VIRTUALIZE_ABOVE;
  const virtualizer = useVirtualizer({
    count: virtual ? names.length : 0,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });
  const items = virtualizer.getVirtualItems();
  const rows = virtual
    ? items.map((item) => ({ index: item.index }))
    : names.map((_, index) => ({ index }));
  const padding = virtual
    ? {
        top: items[0]?.start ?? 0,
        bottom: virtualizer.getTotalSize() - (items[items.length - 1]?.end ?? 0),
      }
    : { top: 0, bottom: 0 };

  const onHistory = useCallback(
    (environmentId: string, name: string) => {
      const environment = envs.find((e) => e.id === environmentId);
      if (environment) setOpen({ kind: 'history', environment, name });
    },
    [envs],
  );
  const onCopied = useCallback((message: string) => setAnnouncement(message), []);

  const toggleRow = useCallback(
    (name: string) => {
      const show = !envs.every((env) => revealed.get(env.id, name));
      for (const env of envs) revealed.set(env.id, name, show ? true : undefined);
    },
    [envs],
  );

  useEffect(() => {
    if (!environments.data) return;
    bindProject(project.id, environments.data);
    if (vault.isSuccess)
      settleRestored(project.id, new Set(environments.data.map((e) => e.id)), canWrite);
  }, [project.id, environments.data, vault.isSuccess, canWrite]);
  useEffect(() => onReviewRequest(() => setOpen({ kind: 'review' })), []);
  useEffect(() => {
    if (!announcement) return;
    const timer = setTimeout(() => setAnnouncement(''), 2500);
    return () => clearTimeout(timer);
  }, [announcement]);
  useEffect(() => {
    if (!undo) return;
    const timer = setTimeout(() => setUndo(null), UNDO_MS);
    return () => clearTimeout(timer);
  }, [undo]);

  /** Focuses the first staged cell in grid order (the pending bar's "Show"). */
  const showFirstChange = () => {
    const all = staged.all();
    if (all.length === 0) return;
    if (filter || view.kind !== 'all') {
      setFilter('');
      setView({ kind: 'all' });
    }
    requestAnimationFrame(() => {
      const order = [...new Set([...names, ...all.map(([, n]) => n)])].sort();
      const [environmentId, name] = all
        .map(([e, n]) => [e, n] as const)
        .sort(
          (a, b) =>
            order.indexOf(a[1]) - order.indexOf(b[1]) ||
            envs.findIndex((e) => e.id === a[0]) - envs.findIndex((e) => e.id === b[0]),
        )[0]!;
      const row = order.indexOf(name) + 1;
      const column = envs.findIndex((e) => e.id === environmentId) + 1;
      if (focusCell(gridRef.current, row, column)) return;
      virtualizer.scrollToIndex(Math.max(0, row - 1));
      requestAnimationFrame(() =>
        requestAnimationFrame(() => focusCell(gridRef.current, row, column)),
      );
    });
  };

  // Page-wide shortcuts, when no field or dialog has the keyboard.
  useEffect(() => {
    const onKey = (event: globalThis.KeyboardEvent) => {
      const target = event.target as HTMLElement;
      if (
        target.closest('input, textarea, select, dialog') ||
        event.ctrlKey ||
        event.metaKey ||
        event.altKey
      )
        return;
      if (event.key === '/') {
        event.preventDefault();
        filterRef.current?.focus();
      } else if (event.key === '?') {
        setOpen({ kind: 'shortcuts' });
      } else if (event.key === 'R' && staged.all().length > 0) {
        setOpen({ kind: 'review' });
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  // Leaving the project forgets what was revealed; staged edits stay until saved or discarded.
  useEffect(
    () => () => {
      revealed.clear();
      activeCell.set(null);
      editingCell.set(null);
      hoveredCell.set(null);
      focusedCell.set(null);
    },
    [],
  );

  function onGridKey(event: KeyboardEvent<HTMLTableElement>) {
    const cell = (event.target as HTMLElement).closest<HTMLElement>('[data-cell]');
    if (!cell || editingCell.get()) return;
    const [row = 0, column = 0] = (cell.dataset.cell ?? '0:0').split(':').map(Number);
    const env = column > 0 ? envs[column - 1] : undefined;
    const name = row > 0 ? names[row - 1] : undefined;
    const meta = env && name ? byEnvironment.get(env.id)?.get(name) : undefined;
    const move = (r: number, c: number) => {
      event.preventDefault();
      const targetRow = Math.max(0, Math.min(names.length, r));
      const targetColumn = Math.max(0, Math.min(envs.length, c));
      if (focusCell(gridRef.current, targetRow, targetColumn)) return;
      // A row outside the rendered window: bring it in, then focus it.
      virtualizer.scrollToIndex(Math.max(0, targetRow - 1));
      requestAnimationFrame(() =>
        requestAnimationFrame(() => focusCell(gridRef.current, targetRow, targetColumn)),
      );
    };
    switch (event.key) {
      case 'ArrowUp':
        return move(row - 1, column);
      case 'ArrowDown':
        return move(row + 1, column);
      case 'ArrowLeft':
        return move(row, column - 1);
      case 'ArrowRight':
        return move(row, column + 1);
      case 'Home':
        return move(row, 0);
      case 'End':
        return move(row, envs.length);
    }
    if (!env || !name) {
      if (name && event.key === ' ' && canRead) {
        event.preventDefault();
        toggleRow(name);
      }
      return;
    }
    const change = staged.get(env.id, name);
    if ((event.key === 'Enter' || event.key === 'F2') && canWrite) {
      event.preventDefault();
      editingCell.set(cellId(row, column));
    } else if (event.key === ' ' && canRead) {
      event.preventDefault();
      revealed.set(env.id, name, revealed.get(env.id, name) ? undefined : true);
    } else if (event.key === 'c' && canRead) {
      const value = valueOf(env.id, name, meta, change);
      if (value !== undefined)
        void copyText(value).then(
          () => setAnnouncement(`Copied ${name} in ${env.name}`),
          () => setAnnouncement('The browser refused access to the clipboard'),
        );
    } else if (event.key === 'h' && meta) {
      setOpen({ kind: 'history', environment: env, name });
    } else if ((event.key === 'Delete' || event.key === 'Backspace') && canWrite && meta) {
      staged.set(env.id, name, { kind: 'delete', baseVersion: meta.version });
    } else if (event.key === 'u' && change) {
      staged.set(env.id, name, undefined);
    }
  }

  const toggleColumn = (env: Environment) => {
    const show = !names.every((name) => revealed.get(env.id, name));
    for (const name of names) revealed.set(env.id, name, show ? true : undefined);
  };

  if (failed && !loading)
    return <ErrorNote error={failed} onRetry={() => void environments.refetch()} />;

  if (activeCell.get() === null && names.length > 0) activeCell.set(cellId(1, 1));

  return (
    <section className="secrets stack" aria-label="Secrets">
      {vault.data && project.role !== 'viewer' && !holdsKey ? <AwaitingGrant /> : null}
      {restored && restored.projectId === project.id ? (
        <Suspense fallback={null}>
          <RestoredNote note={restored} onReview={() => setOpen({ kind: 'review' })} />
        </Suspense>
      ) : null}
      {project.role === 'viewer' ? (
        <p className="notice">You are a viewer: you see names, versions and dates, never values.</p>
      ) : null}
      <div className="toolbar">
        <label className="filter">
          <span className="visually-hidden">Filter secrets by name</span>
          <input
            ref={filterRef}
            type="search"
            placeholder="Filter by name  ( / )"
            value={filter}
            onChange={(event) => setFilter(event.target.value)}
            onKeyDown={(event) => {
              if (event.key === 'Escape') setFilter('');
              if (event.key === 'ArrowDown') focusCell(gridRef.current, 1, 1);
            }}
          />
        </label>
        <div className="view-filter" role="group" aria-label="Show">
          {(
            [
              ['all', 'All'],
              ['missing', 'Missing'],
              ['changed', 'Changed'],
            ] as const
          ).map(([kind, label]) => (
            <button
              key={kind}
              type="button"
              aria-pressed={view.kind === kind}
              onClick={() => setView({ kind })}
            >
              {label}
            </button>
          ))}
        </div>
        <span className="muted small" aria-live="polite">
          {loading
            ? 'Loading…'
            : `${names.length} ${names.length === 1 ? 'name' : 'names'}${
                view.kind === 'missing'
                  ? view.environmentId
                    ? ` missing in ${environmentName(view.environmentId)}`
                    : ' missing somewhere'
                  : view.kind === 'changed'
                    ? ' with unsaved changes'
                    : ''
              }`}
        </span>
        <div className="toolbar-actions">
          {canWrite ? (
            <button type="button" className="primary" onClick={() => setOpen({ kind: 'add' })}>
              Add secret
            </button>
          ) : null}
          {canRead && envs.length > 1 ? (
            <button type="button" onClick={() => setOpen({ kind: 'compare' })}>
              Compare
            </button>
          ) : null}
          <button
            type="button"
            className="icon"
            aria-label="Keyboard shortcuts"
            title="Keyboard shortcuts (?)"
            onClick={() => setOpen({ kind: 'shortcuts' })}
          >
            ?
          </button>
        </div>
      </div>

      <div className="grid-scroll" ref={scrollRef}>
        <table
          ref={gridRef}
          className="grid"
          role="grid"
          aria-label={`Secrets of ${project.name}`}
          aria-busy={loading}
          aria-rowcount={names.length + 1}
          onKeyDown={onGridKey}
        >
          <thead>
            <tr>
              <th scope="col" className="name-col">
                Name
              </th>
              {envs.map((env) => (
                <th scope="col" key={env.id}>
                  <div className="env-head">
                    <span className="env-name">{env.name}</span>
                    {(missing.get(env.id) ?? 0) > 0 ? (
                      <button
                        type="button"
                        className="missing-count"
                        aria-pressed={view.kind === 'missing' && view.environmentId === env.id}
                        title={`Show only the names missing in ${env.name}`}
                        onClick={() =>
                          setView(
                            view.kind === 'missing' && view.environmentId === env.id
                              ? { kind: 'all' }
                              : { kind: 'missing', environmentId: env.id },
                          )
                        }
                      >
                        {missing.get(env.id)} missing
                      </button>
                    ) : null}
                    <span className="env-actions">
                      {canRead ? (
                        <button
                          type="button"
                          onClick={() => toggleColumn(env)}
                          aria-label={`Reveal or hide every value in ${env.name}`}
                          title="Reveal or hide the column"
                        >
                          <EyeIcon />
                        </button>
                      ) : null}
                      {canWrite ? (
                        <button
                          type="button"
                          onClick={() => setOpen({ kind: 'text', environment: env })}
                          aria-label={`Edit ${env.name} as .env text`}
                          title="Edit as .env text"
                        >
                          .env
                        </button>
                      ) : null}
                    </span>
                  </div>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {loading ? (
              <SkeletonGrid columns={envs.length + 1} />
            ) : (
              <>
                {padding.top > 0 ? (
                  <SpacerRow height={padding.top} columns={envs.length + 1} />
                ) : null}
                {rows.map(({ index }) => {
                  const name = names[index]!;
                  return (
                    <Row
                      key={name}
                      name={name}
                      index={index}
                      measure={virtual ? virtualizer.measureElement : undefined}
                      envs={envs}
                      byEnvironment={byEnvironment}
                      canRead={canRead}
                      canWrite={canWrite}
                      onToggleRow={toggleRow}
                      onHistory={onHistory}
                      onCopied={onCopied}
                    />
                  );
                })}
                {padding.bottom > 0 ? (
                  <SpacerRow height={padding.bottom} columns={envs.length + 1} />
                ) : null}
              </>
            )}
          </tbody>
        </table>
        {!loading && names.length === 0 ? (
          <div className="empty">
            {filter ? (
              <p>No secret name contains “{filter}”.</p>
            ) : view.kind !== 'all' ? (
              <p>
                {view.kind === 'changed'
                  ? 'No unsaved changes.'
                  : view.environmentId
                    ? `Nothing is missing in ${environmentName(view.environmentId)}.`
                    : 'Every name exists in every environment.'}{' '}
                <button type="button" className="link" onClick={() => setView({ kind: 'all' })}>
                  Show all
                </button>
              </p>
            ) : canWrite ? (
              <>
                <h2>No secrets yet</h2>
                <p className="muted">Add one, or paste a whole .env file into an environment.</p>
                <div className="actions center">
                  <button
                    type="button"
                    className="primary"
                    onClick={() => setOpen({ kind: 'add' })}
                  >
                    Add a secret
                  </button>
                  {envs[0] ? (
                    <button
                      type="button"
                      onClick={() => setOpen({ kind: 'text', environment: envs[0]! })}
                    >
                      Paste a .env into {envs[0].name}
                    </button>
                  ) : null}
                </div>
              </>
            ) : (
              <p>No secrets yet.</p>
            )}
          </div>
        ) : null}
      </div>

      <PendingBar
        onReview={() => setOpen({ kind: 'review' })}
        onDiscard={() => setOpen({ kind: 'discard' })}
        onShow={showFirstChange}
      />
      <div className="toasts" role="status" aria-live="polite">
        {liveNotes.map((note) => (
          <div className="toast live-note" key={note.id}>
            {note.text}
          </div>
        ))}
        {announcement ? (
          <div className="toast" key={announcement}>
            {announcement}
          </div>
        ) : null}
        {undo ? (
          <div className="toast">
            {undo.length} {undo.length === 1 ? 'change' : 'changes'} discarded.
            <button
              type="button"
              onClick={() => {
                restoreChanges(undo);
                setUndo(null);
              }}
            >
              Undo
            </button>
          </div>
        ) : null}
      </div>

      <OverrideDialogHost />
      <Suspense fallback={null}>
        {open?.kind === 'review' ? (
          <ReviewDialog
            project={project}
            environments={envs}
            secrets={byEnvironment}
            onClose={() => setOpen(null)}
          />
        ) : null}
        {open?.kind === 'add' ? (
          <AddSecretDialog
            environments={envs}
            secrets={byEnvironment}
            onClose={() => setOpen(null)}
          />
        ) : null}
        {open?.kind === 'text' ? (
          <EditAsTextDialog
            environment={open.environment}
            secrets={byEnvironment.get(open.environment.id) ?? new Map()}
            onClose={() => setOpen(null)}
          />
        ) : null}
        {open?.kind === 'compare' ? (
          <CompareDialog
            environments={envs}
            secrets={byEnvironment}
            onClose={() => setOpen(null)}
          />
        ) : null}
        {open?.kind === 'history' ? (
          <HistoryDialog
            project={project}
            environment={open.environment}
            name={open.name}
            onClose={() => setOpen(null)}
          />
        ) : null}
        {open?.kind === 'shortcuts' ? <ShortcutsDialog onClose={() => setOpen(null)} /> : null}
        {open?.kind === 'discard' ? (
          <ConfirmDialog
            title="Discard all unsaved changes?"
            confirmLabel="Discard all"
            onClose={() => setOpen(null)}
            onConfirm={() => {
              setUndo(discardAll());
              setOpen(null);
            }}
          >
            <p>
              {staged.all().length} unsaved {staged.all().length === 1 ? 'change' : 'changes'} in{' '}
              {listNames(stagedEnvironmentNames())} will be dropped. You can undo this for a few
              seconds.
            </p>
          </ConfirmDialog>
        ) : null}
      </Suspense>
    </section>
  );
}

type View = { kind: 'all' } | { kind: 'missing'; environmentId?: string } | { kind: 'changed' };
const UNDO_MS = 8000;

/** Above this many names the grid renders only the rows in view. */
const VIRTUALIZE_ABOVE = 150;
const ROW_HEIGHT = 34;

/** Stands in for the rows above or below the rendered window, so the scrollbar stays true. */
function SpacerRow({ height, columns }: { height: number; columns: number }) {
  return (
    <tr aria-hidden="true" className="spacer-row">
      <td colSpan={columns} style={{ height }} />
    </tr>
  );
}

const Row = memo(function Row(props: {
  name: string;
  index: number;
  measure: ((element: Element | null) => void) | undefined;
  envs: Environment[];
  byEnvironment: Map<string, Map<string, Meta>>;
  canRead: boolean;
  canWrite: boolean;
  onToggleRow: (name: string) => void;
  onHistory: (environmentId: string, name: string) => void;
  onCopied: (message: string) => void;
}) {
  const { name, index, envs, byEnvironment, canRead, canWrite } = props;
  return (
    <tr ref={props.measure} data-index={index} aria-rowindex={index + 2}>
      <th
        scope="row"
        className="name-col mono"
        data-cell={cellId(index + 1, 0)}
        tabIndex={-1}
        onFocus={() => activeCell.set(cellId(index + 1, 0))}
      >
        <span className="name">{breakable(name)}</span>
        {canRead ? (
          <button
            type="button"
            className="row-reveal"
            tabIndex={-1}
            onClick={() => props.onToggleRow(name)}
            aria-label={`Reveal or hide ${name} in every environment`}
          >
            <EyeIcon />
          </button>
        ) : null}
      </th>
      {envs.map((env, column) => (
        <Cell
          key={env.id}
          environmentId={env.id}
          environmentName={env.name}
          name={name}
          meta={byEnvironment.get(env.id)?.get(name)}
          row={index + 1}
          column={column + 1}
          canRead={canRead}
          canWrite={canWrite}
          onHistory={props.onHistory}
          onCopied={props.onCopied}
        />
      ))}
    </tr>
  );
});

function SkeletonGrid({ columns }: { columns: number }) {
  return (
    <>
      {Array.from({ length: 6 }, (_, r) => (
        <tr key={r} className="skeleton-tr" aria-hidden="true">
          {Array.from({ length: columns }, (_, c) => (
            <td key={c}>
              <span className="skeleton-bar" />
            </td>
          ))}
        </tr>
      ))}
    </>
  );
}

/** "1 change in production — Show · Discard all · Review". */
function PendingBar({
  onReview,
  onDiscard,
  onShow,
}: {
  onReview: () => void;
  onDiscard: () => void;
  onShow: () => void;
}) {
  const { changes } = useStagedSummary();
  if (changes === 0) return null;
  return (
    <div className="pending-bar" role="region" aria-label="Pending changes">
      <span>
        {changes} unsaved {changes === 1 ? 'change' : 'changes'} in{' '}
        {listNames(stagedEnvironmentNames())}
        {' — '}
        <button type="button" className="link" onClick={onShow}>
          show
        </button>
      </span>
      <button type="button" onClick={onDiscard}>
        Discard all
      </button>
      <button type="button" className="primary" onClick={onReview} title="Review (Shift+R)">
        Review
      </button>
    </div>
  );
}

/** A long name breaks only after its underscores (STRIPE_SECRET_<wbr>KEY), never mid-word. */
function breakable(name: string) {
  if (!name.includes('_')) return name;
  const parts = name.split(/(?<=_)/);
  return parts.flatMap((part, i) => (i < parts.length - 1 ? [part, <wbr key={i} />] : [part]));
}

function AwaitingGrant() {
  const keys = keyring.publicKeys();
  return (
    <div className="notice" role="status">
      <p>
        <strong>Waiting for the project key.</strong> An admin must grant it to you before you can
        read or write values. They will compare your key fingerprint with you:
      </p>
      {keys ? (
        <p className="mono fingerprint-big">{fingerprint(keys.encryption, keys.signing)}</p>
      ) : null}
      <p className="small">
        Also shown on your <Link to="/account">Account</Link> page and by <code>coffer whoami</code>
        .
      </p>
    </div>
  );
}
