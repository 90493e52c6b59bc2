import { memo, useRef, useState, type KeyboardEvent } from 'react';
import { copyText } from '../lib/clipboard';
import { ago, formatDate } from '../lib/format';
import type { SecretMeta } from './data';
import {
  activeCell,
  cellId,
  editingCell,
  focusedCell,
  hoveredCell,
  useIsActive,
  useIsEditing,
  useIsFocused,
  useIsHovered,
} from './grid-state';
import { useProjectContext } from '../app/ProjectLayout';
import { describeUser, useMemberDirectory } from '../lib/members';
import { keyring } from '../lib/keyring';
import { plaintext } from './plaintext';
import { OverrideActions } from './OverrideActions';
import { completionsFor, ReferenceText, useOverride, usePreview } from './references';
import { revealed, staged, useRevealed, useStaged, type StagedChange } from './store';
import {
  CopyIcon,
  EditIcon,
  EyeIcon,
  EyeOffIcon,
  HistoryIcon,
  TrashIcon,
  UndoIcon,
} from '../ui/icons';

export interface CellProps {
  environmentId: string;
  environmentName: string;
  name: string;
  meta: SecretMeta | undefined;
  row: number;
  column: number;
  canRead: boolean;
  canWrite: boolean;
  onHistory: (environmentId: string, name: string) => void;
  onCopied: (message: string) => void;
}

/** The value a cell would save: the staged one, else the current decrypted one. */
export function valueOf(
  environmentId: string,
  name: string,
  meta: SecretMeta | undefined,
  change: StagedChange | undefined,
): string | undefined {
  if (change?.kind === 'set') return change.value;
  if (change?.kind === 'delete' || !meta) return undefined;
  return plaintext.get(environmentId, name, meta.version);
}

/** Stages a new value, or drops the staged change when the value is the current one again. */
export function stageValue(
  environmentId: string,
  name: string,
  meta: SecretMeta | undefined,
  value: string,
): void {
  const current = meta ? plaintext.get(environmentId, name, meta.version) : undefined;
  if (meta && current === value) staged.set(environmentId, name, undefined);
  else staged.set(environmentId, name, { kind: 'set', value, baseVersion: meta?.version ?? 0 });
}

const MASK = '••••••••';

/**
 * On a screen without hover (touch) a cell's actions are always shown; with a
 * pointer they are shown on the hovered or focused cell only, so they are
 * rendered for that cell only: six buttons with their icons in every cell
 * were most of a 100-row grid's 10,000 elements, and most of its first paint.
 */
const NO_HOVER = typeof matchMedia === 'function' && matchMedia('(hover: none)').matches;

export const Cell = memo(function Cell(props: CellProps) {
  const { environmentId, environmentName, name, meta, row, column, canRead, canWrite } = props;
  const id = cellId(row, column);
  const change = useStaged(environmentId, name);
  const shown = useRevealed(environmentId, name);
  const active = useIsActive(id);
  const editing = useIsEditing(id);
  const hovered = useIsHovered(id);
  const focused = useIsFocused(id);
  const exists = meta !== undefined || change?.kind === 'set';
  const label = `${name} in ${environmentName}`;
  const current = canRead ? valueOf(environmentId, name, meta, change) : undefined;
  const preview = usePreview(environmentId, name, current?.includes('${') ?? false);
  const own = useOverride(environmentId, name);

  const state: 'added' | 'changed' | 'deleted' | null =
    change?.kind === 'delete' ? 'deleted' : change ? (meta ? 'changed' : 'added') : null;
  // Someone saved this cell after the change was staged (the grid refreshes live):
  // saving would be refused (409), so it is marked now.
  const conflict = change !== undefined && (meta?.version ?? 0) !== change.baseVersion;

  const copy = () => {
    const value = valueOf(environmentId, name, meta, change);
    if (value === undefined) return;
    void copyText(value).then(
      () => props.onCopied(`Copied ${label}`),
      () => props.onCopied('The browser refused access to the clipboard'),
    );
  };

  let content;
  if (editing) {
    content = (
      <CellEditor
        environmentId={environmentId}
        label={`Value of ${label}`}
        initial={valueOf(environmentId, name, meta, change) ?? ''}
        onDone={(value) => {
          editingCell.set(null);
          if (value !== undefined) stageValue(environmentId, name, meta, value);
        }}
      />
    );
  } else if (!exists && change?.kind !== 'delete') {
    content = canWrite ? (
      <button
        type="button"
        className="missing"
        tabIndex={-1}
        aria-label={`Missing: add ${label}`}
        title="Add a value here (Enter)"
        onClick={() => editingCell.set(id)}
      >
        missing
      </button>
    ) : (
      <span className="missing">missing</span>
    );
  } else if (!canRead || (meta && !meta.readable && change?.kind !== 'set')) {
    content = (
      <span className="no-access">
        no access
        {meta ? (
          <span className="muted">
            {' '}
            · v{meta.version} · {ago(meta.updated_at)}
          </span>
        ) : null}
      </span>
    );
  } else if (shown && change?.kind !== 'delete') {
    content =
      own !== undefined ? (
        <>
          <span className="value mono override-value">{own}</span>
          <span className="team-value mono">
            team: <ReferenceText value={current ?? ''} ranges={preview?.ranges} />
          </span>
        </>
      ) : (
        <>
          <span className="value mono">
            <ReferenceText value={current ?? ''} ranges={preview?.ranges} />
          </span>
          {preview?.value != null ? (
            <span className="preview mono">resolves to {preview.value}</span>
          ) : null}
        </>
      );
  } else {
    content = (
      <span className="masked mono">
        <span aria-hidden="true">{MASK}</span>
        <span className="visually-hidden">hidden value</span>
      </span>
    );
  }

  return (
    <td
      data-cell={id}
      data-state={state ?? undefined}
      data-conflict={conflict || undefined}
      tabIndex={active ? 0 : -1}
      className="cell"
      onFocus={() => {
        activeCell.set(id);
        focusedCell.set(id);
      }}
      onBlur={() => {
        if (focusedCell.get() === id) focusedCell.set(null);
      }}
      onMouseEnter={() => hoveredCell.set(id)}
      onMouseLeave={() => {
        if (hoveredCell.get() === id) hoveredCell.set(null);
      }}
      onDoubleClick={() => canWrite && !editing && editingCell.set(id)}
    >
      <div className="cell-inner">
        {state ? (
          <span className={`mark mark-${state}`} title={`${state}, not saved yet`}>
            {state === 'added' ? '+' : state === 'changed' ? '~' : '−'}
            <span className="visually-hidden"> {state}</span>
          </span>
        ) : null}
        <span className={state === 'deleted' ? 'cell-content struck' : 'cell-content'}>
          {own !== undefined && !editing ? (
            <span
              className="override-mark"
              title="Your personal override: only you see it, and your reads use it (the team value is beside it when revealed)"
            >
              your value
            </span>
          ) : null}
          {content}
          {preview?.reason && !editing ? (
            <span className="reference-error" title={preview.reason}>
              <span aria-hidden="true">⚠ </span>
              {preview.reason.startsWith(`${name}: `)
                ? preview.reason.slice(name.length + 2)
                : preview.reason}
            </span>
          ) : null}
        </span>
        {conflict ? (
          <span
            className="conflict-tag"
            title={`Changed by someone else since you edited it (now ${meta ? `v${meta.version}` : 'deleted'}); review before saving`}
          >
            changed meanwhile
          </span>
        ) : state ? (
          <span className="unsaved-tag">unsaved</span>
        ) : null}
        {meta && !editing && (focused || hovered) ? <CellMeta meta={meta} /> : null}
        {!editing && (focused || hovered || NO_HOVER) ? (
          <span className="cell-actions">
            {canRead && exists && change?.kind !== 'delete' ? (
              <>
                <button
                  type="button"
                  tabIndex={-1}
                  aria-pressed={shown}
                  aria-label={`${shown ? 'Hide' : 'Reveal'} ${label}`}
                  title={shown ? 'Hide (Space)' : 'Reveal (Space)'}
                  onClick={() => revealed.set(environmentId, name, shown ? undefined : true)}
                >
                  {shown ? <EyeOffIcon /> : <EyeIcon />}
                </button>
                <button
                  type="button"
                  tabIndex={-1}
                  aria-label={`Copy ${label}`}
                  title="Copy (C)"
                  onClick={copy}
                >
                  <CopyIcon />
                </button>
                {canWrite ? (
                  <OverrideActions
                    environmentId={environmentId}
                    environmentName={environmentName}
                    name={name}
                    current={own}
                  />
                ) : null}
              </>
            ) : null}
            {canWrite ? (
              <button
                type="button"
                tabIndex={-1}
                aria-label={`Edit ${label}`}
                title="Edit (Enter)"
                onClick={() => editingCell.set(id)}
              >
                <EditIcon />
              </button>
            ) : null}
            {meta ? (
              <button
                type="button"
                tabIndex={-1}
                aria-label={`History of ${label}`}
                title="History (H)"
                onClick={() => props.onHistory(environmentId, name)}
              >
                <HistoryIcon />
              </button>
            ) : null}
            {canWrite && change ? (
              <button
                type="button"
                tabIndex={-1}
                aria-label={`Undo the change to ${label}`}
                title="Undo (U)"
                onClick={() => staged.set(environmentId, name, undefined)}
              >
                <UndoIcon />
              </button>
            ) : canWrite && meta ? (
              <button
                type="button"
                tabIndex={-1}
                aria-label={`Delete ${label}`}
                title="Delete (Del)"
                onClick={() =>
                  staged.set(environmentId, name, { kind: 'delete', baseVersion: meta.version })
                }
              >
                <TrashIcon />
              </button>
            ) : null}
          </span>
        ) : null}
      </div>
    </td>
  );
});

/**
 * Version, date and author of the cell under the pointer or focus. The member
 * directory (names for the author's id) is fetched on the first such look, not
 * with the grid.
 */
function CellMeta({ meta }: { meta: SecretMeta }) {
  const project = useProjectContext();
  const directory = useMemberDirectory(project.id);
  const author =
    meta.updated_by === keyring.userId() ? 'you' : describeUser(directory.data, meta.updated_by);
  return (
    <span className="cell-meta" aria-hidden="true">
      v{meta.version} · {ago(meta.updated_at)} ({formatDate(meta.updated_at)}) · by {author}
    </span>
  );
}

/** The in-place editor: Enter saves to the staging area, Shift+Enter adds a line, Escape cancels. */
function CellEditor({
  environmentId,
  label,
  initial,
  onDone,
}: {
  environmentId: string;
  label: string;
  initial: string;
  onDone: (value: string | undefined) => void;
}) {
  const done = useRef(false);
  const editor = useRef<HTMLTextAreaElement>(null);
  const [offer, setOffer] = useState<{ from: number; options: string[] } | null>(null);
  const suggest = () => {
    const area = editor.current;
    if (!area) return;
    const before = area.value.slice(0, area.selectionStart);
    void completionsFor(environmentId, before).then((found) =>
      setOffer(found && found.options.length > 0 ? found : null),
    );
  };
  /** Puts a completion in place of what was typed after `${`. */
  const accept = (option: string) => {
    const area = editor.current;
    if (!area || !offer) return;
    const caret = area.selectionStart;
    area.value = area.value.slice(0, offer.from) + option + area.value.slice(caret);
    const at = offer.from + option.length;
    area.setSelectionRange(at, at);
    area.focus();
    suggest();
  };
  const finish = (value: string | undefined) => {
    if (done.current) return;
    done.current = true;
    onDone(value);
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    event.stopPropagation();
    if (event.key === 'Tab' && offer) {
      event.preventDefault();
      accept(offer.options[0]!);
      return;
    }
    if (event.key === 'Escape') {
      event.preventDefault();
      finish(undefined);
      refocus(event.currentTarget);
    } else if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      finish(event.currentTarget.value);
      refocus(event.currentTarget);
    }
  };
  return (
    <>
      <textarea
        ref={editor}
        className="cell-editor mono"
        aria-label={label}
        defaultValue={initial}
        rows={Math.min(6, initial.split('\n').length)}
        spellCheck={false}
        autoComplete="off"
        autoFocus
        onKeyDown={onKeyDown}
        onInput={suggest}
        onBlur={(event) => finish(event.currentTarget.value)}
      />
      {offer ? (
        <ul className="completions mono" aria-label="References you can insert (Tab: the first)">
          {offer.options.slice(0, 8).map((option) => (
            <li key={option}>
              <button
                type="button"
                tabIndex={-1}
                onMouseDown={(event) => {
                  event.preventDefault();
                  accept(option);
                }}
              >
                {'${'}
                {option}
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </>
  );
}

/** After editing, the cell (not the body) gets the focus back, so arrows keep working. */
function refocus(editor: HTMLElement): void {
  const cell = editor.closest<HTMLElement>('[data-cell]');
  requestAnimationFrame(() => cell?.focus());
}
