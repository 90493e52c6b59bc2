import { rekey, type RekeyProgress } from '@coffer/sdk/vault/rekey';
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { client } from '../lib/client';
import { keyring } from '../lib/keyring';
import { Dialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { chainKey, projectSecretsKey, vaultKey } from '../lib/queries';

const PHASES: Record<RekeyProgress['phase'], string> = {
  snapshot: 'Fetching every stored version',
  reencrypt: 'Re-encrypting versions',
  grants: 'Granting the new key',
  commit: 'Committing',
  retry: 'Someone changed the project meanwhile; starting over',
  done: 'Done',
};

/**
 * Re-keys the vault in this browser: a new project key, every version (history
 * included) re-encrypted, the key granted to every remaining member and token,
 * committed in one request. The SDK retries when a concurrent change conflicts.
 */
export function RekeyDialog({
  projectId,
  reason,
  onClose,
}: {
  projectId: string;
  reason?: string;
  onClose: () => void;
}) {
  const queryClient = useQueryClient();
  const [progress, setProgress] = useState<RekeyProgress | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [result, setResult] = useState<{ epoch: number; others: string[] } | null>(null);
  const running = progress !== null && result === null && error === null;

  async function run() {
    setError(null);
    setProgress({ phase: 'snapshot', done: 0, total: 1, attempt: 1 });
    try {
      const done = await rekey(client, projectId, keyring.keys(), {
        onProgress: setProgress,
        pins: await keyring.pins(),
      });
      setResult({ epoch: done.epoch, others: done.tokensCreatedByOthers ?? [] });
      await (await keyring.vault(projectId)).refresh();
      await queryClient.invalidateQueries({ queryKey: vaultKey(projectId) });
      await queryClient.invalidateQueries({ queryKey: chainKey(projectId) });
      await queryClient.invalidateQueries({ queryKey: projectSecretsKey(projectId) });
    } catch (err) {
      setError(err);
    }
  }

  return (
    <Dialog title="Re-key the vault" onClose={running ? () => undefined : onClose}>
      <div className="stack">
        {reason ? <p>{reason}</p> : null}
        <p>
          Re-keying makes a new project key here, re-encrypts every stored version with it and
          grants it to the members and tokens that remain. Keys copied by someone who left no longer
          open anything written from now on, nor the history.
        </p>
        {progress ? (
          <div className="stack">
            <label htmlFor="rekey-progress">
              {PHASES[progress.phase]}
              {progress.phase === 'reencrypt' || progress.phase === 'grants'
                ? ` (${progress.done} / ${progress.total})`
                : ''}
              {progress.attempt > 1 ? `, attempt ${progress.attempt}` : ''}
            </label>
            <progress
              id="rekey-progress"
              max={progress.total || 1}
              value={progress.phase === 'done' ? progress.total : progress.done}
            />
          </div>
        ) : null}
        {result ? <p role="status">The vault is re-keyed: epoch {result.epoch}.</p> : null}
        {result && result.others.length > 0 ? (
          <div className="notice">
            <p>
              {result.others.length} API{' '}
              {result.others.length === 1 ? 'key or CI token was' : 'keys or CI tokens were'}{' '}
              created by someone else. Credentials made since the project has a signed membership
              chain accept the key you just granted them; those made before it trust only their
              creator's signature and refuse it: re-create those under Tokens.
            </p>
            <p className="mono small">{result.others.join(', ')}</p>
          </div>
        ) : null}
        <ErrorNote error={error} />
        <div className="actions">
          {result ? (
            <button type="button" className="primary" onClick={onClose}>
              Done
            </button>
          ) : (
            <>
              <button type="button" onClick={onClose} disabled={running}>
                Later
              </button>
              <button
                type="button"
                className="primary"
                onClick={() => void run()}
                disabled={running}
              >
                {running ? 'Re-keying…' : 'Re-key now'}
              </button>
            </>
          )}
        </div>
      </div>
    </Dialog>
  );
}
