import { signMembershipChain, type ChainCandidate } from '@coffer/sdk/vault/membership';
import { useMutation } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { keyring } from '../lib/keyring';
import { Dialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';

const PINNED: Record<ChainCandidate['pinned'], string> = {
  self: 'you',
  verified: 'verified by you',
  tofu: 'seen before, not verified',
  new: 'first seen now',
};

/**
 * Gives a project from before membership chains its chain: the SDK fetches
 * who holds the project key now (refusing anyone pinned with other keys), this
 * dialog shows them with their fingerprints and what the user's pins say, and
 * only on "Sign" does the browser sign its root and each of them in.
 */
export function SignChainDialog({
  projectId,
  onClose,
  onSigned,
}: {
  projectId: string;
  onClose: () => void;
  onSigned: () => void | Promise<void>;
}) {
  const [candidates, setCandidates] = useState<ChainCandidate[] | null>(null);
  const [confirmed, setConfirmed] = useState(false);
  const answer = useRef<((sign: boolean) => void) | null>(null);
  const started = useRef(false);
  const sign = useMutation({
    mutationFn: async () =>
      signMembershipChain(
        await keyring.vault(projectId),
        (list) =>
          new Promise<boolean>((resolve) => {
            answer.current = resolve;
            setCandidates(list);
          }),
      ),
    onSuccess: onSigned,
  });
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    sign.mutate();
  }, [sign]);
  const close = () => {
    answer.current?.(false);
    onClose();
  };
  const unverified = candidates?.filter((c) => c.pinned === 'tofu' || c.pinned === 'new') ?? [];

  return (
    <Dialog title="Sign the project's membership" onClose={close} wide>
      <form
        className="stack"
        onSubmit={(event) => {
          event.preventDefault();
          setConfirmed(true);
          answer.current?.(true);
        }}
      >
        {sign.isError ? (
          <ErrorNote error={sign.error} />
        ) : !candidates ? (
          <p className="muted">Fetching who holds the project key…</p>
        ) : (
          <>
            <p>
              These people hold the project key now. Your browser signs them into the project's
              membership chain with the keys below, as you its first admin; every member's browser
              then accepts keys only from admins of the chain.
            </p>
            <div className="table-scroll">
              <table className="table key-holders cards-narrow">
                <caption className="visually-hidden">Key holders to sign in</caption>
                <thead>
                  <tr>
                    <th scope="col">Member and key fingerprint</th>
                    <th scope="col">Role</th>
                    <th scope="col">Your pin</th>
                  </tr>
                </thead>
                <tbody>
                  {candidates.map((c) => (
                    <tr key={c.user_id}>
                      <td>
                        {c.email}
                        {/* Under the address and wrapping, not in a column of its own: on a
                            phone the fingerprint, what this dialog is for, stays on screen. */}
                        <div className="mono fingerprint">{c.fingerprint}</div>
                      </td>
                      <td data-label="Role">{c.role}</td>
                      <td data-label="Your pin">{PINNED[c.pinned]}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {unverified.length > 0 ? (
              <p className="notice small">
                You have not verified the keys of {unverified.map((c) => c.email).join(', ')}: the
                server could have shown keys of its own. Compare their fingerprints with them (each
                sees theirs on their Account page) before signing, or remove anyone who should not
                hold the key.
              </p>
            ) : null}
          </>
        )}
        <div className="actions">
          <button type="button" onClick={close}>
            Cancel
          </button>
          <button
            type="submit"
            className="primary"
            disabled={!candidates || confirmed || sign.isError}
          >
            {confirmed && sign.isPending ? 'Signing…' : 'Sign membership'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
