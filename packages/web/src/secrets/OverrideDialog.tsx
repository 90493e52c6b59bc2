import { deleteOverride, isCofferApiError, setOverride } from '@coffer/sdk';
import { useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { client } from '../lib/client';
import { keyring } from '../lib/keyring';
import { projectOverridesKey } from '../lib/queries';
import { ConfirmDialog, Dialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { applyOwnOverride } from './references';

/** What a cell asked for: set (or change) or remove the user's override of one name. */
export interface OverrideRequest {
  projectId: string;
  environmentId: string;
  environmentName: string;
  name: string;
  /** The user's current override, if they hold one. */
  current: string | undefined;
  mode: 'set' | 'remove';
}

/**
 * Sets or removes the user's own override of one name in one environment. The
 * value is sealed here, in the browser, with the key derived from the user's
 * own private key (the SDK's `setOverride`): only ciphertext reaches the server.
 */
export function OverrideDialog({
  request,
  onClose,
}: {
  request: OverrideRequest;
  onClose: () => void;
}) {
  const { projectId, environmentId, environmentName, name, current, mode } = request;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const queryClient = useQueryClient();
  const valueId = useId();
  const hintId = useId();

  const done = (value: string | undefined) => {
    applyOwnOverride(environmentId, name, value);
    void queryClient.invalidateQueries({ queryKey: projectOverridesKey(projectId) });
    onClose();
  };
  const run = async (action: () => Promise<string | undefined>) => {
    setBusy(true);
    setError(null);
    try {
      done(await action());
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };

  if (mode === 'remove') {
    return (
      <ConfirmDialog
        title={`Remove your override of ${name}?`}
        confirmLabel="Remove my override"
        busy={busy}
        error={error ? <ErrorNote error={error} /> : undefined}
        onClose={onClose}
        onConfirm={() =>
          void run(async () => {
            try {
              await deleteOverride(client, projectId, environmentId, name);
            } catch (err) {
              // Already gone (removed from another device): what was asked holds.
              if (!(isCofferApiError(err) && err.status === 404)) throw err;
            }
            return undefined;
          })
        }
      >
        <p>
          Your reads of {name} in {environmentName} (coffer run, the SDK, this grid) use the team
          value again. Your value is deleted; nobody else ever saw it.
        </p>
      </ConfirmDialog>
    );
  }

  return (
    <Dialog
      title={current === undefined ? `Override ${name} for me` : `Change my override of ${name}`}
      onClose={onClose}
    >
      <form
        className="stack"
        onSubmit={(event) => {
          event.preventDefault();
          const value = new FormData(event.currentTarget).get('override');
          if (typeof value !== 'string') return;
          void run(async () => {
            const vault = await keyring.vault(projectId);
            const owner = await vault.overrideKey();
            if (!owner) throw new Error('This session holds no key to seal an override with');
            await setOverride(client, projectId, environmentId, name, value, owner);
            return value;
          });
        }}
      >
        <p id={hintId} className="muted small">
          Your own value of {name} in {environmentName}. It is encrypted in this browser with your
          own key: the server stores ciphertext it cannot open, and no other member, admin or token
          can read it. Your reads (coffer run, the SDK, this grid) use it instead of the team value;
          admins see only that you override {name}.
        </p>
        <div className="field">
          <label htmlFor={valueId}>Your value</label>
          <textarea
            id={valueId}
            name="override"
            className="mono"
            rows={3}
            spellCheck={false}
            autoComplete="off"
            autoFocus
            defaultValue={current ?? ''}
            aria-describedby={hintId}
          />
        </div>
        <ErrorNote error={error} />
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={busy}>
            {busy ? 'Saving…' : 'Save my override'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
