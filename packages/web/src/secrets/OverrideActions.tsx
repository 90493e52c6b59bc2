import { lazy, Suspense, useSyncExternalStore } from 'react';
import { useProjectContext } from '../app/ProjectLayout';
import { PersonIcon, PersonOffIcon } from '../ui/icons';
import type { OverrideRequest } from './OverrideDialog';
import './overrides.css';

// Setting, changing and removing one's own personal override from the grid.
// A cell offers "Override for me" (or, when the user holds one, "Change my
// override" and "Remove my override"); the dialog opens once, above the grid,
// so the grid's keyboard shortcuts never see what is typed in it.

let request: OverrideRequest | null = null;
const listeners = new Set<() => void>();
const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};
function open(next: OverrideRequest | null) {
  request = next;
  listeners.forEach((listener) => listener());
}

const OverrideDialog = lazy(() =>
  import('./OverrideDialog').then((m) => ({ default: m.OverrideDialog })),
);

/** The override dialog, when a cell asked for it (rendered once by the secrets page). */
export function OverrideDialogHost() {
  const current = useSyncExternalStore(subscribe, () => request);
  if (!current) return null;
  return (
    <Suspense fallback={null}>
      <OverrideDialog request={current} onClose={() => open(null)} />
    </Suspense>
  );
}

/** A cell's override buttons (for members who may read and write values). */
export function OverrideActions(cell: Omit<OverrideRequest, 'mode' | 'projectId'>) {
  const props = { ...cell, projectId: useProjectContext().id };
  const label = `${props.name} in ${props.environmentName}`;
  if (props.current === undefined) {
    return (
      <button
        type="button"
        tabIndex={-1}
        aria-label={`Override ${label} for me`}
        title="Override for me: your own value, seen by you alone"
        onClick={() => open({ ...props, mode: 'set' })}
      >
        <PersonIcon />
      </button>
    );
  }
  return (
    <>
      <button
        type="button"
        tabIndex={-1}
        aria-label={`Change my override of ${label}`}
        title="Change my override"
        onClick={() => open({ ...props, mode: 'set' })}
      >
        <PersonIcon />
      </button>
      <button
        type="button"
        tabIndex={-1}
        aria-label={`Remove my override of ${label}`}
        title="Remove my override: your reads use the team value again"
        onClick={() => open({ ...props, mode: 'remove' })}
      >
        <PersonOffIcon />
      </button>
    </>
  );
}
