import {
  loadMembershipChain,
  isVaultError,
  type MembershipStatement,
  type PendingGrant,
} from '@coffer/sdk';
import { grantMember, vouchFor } from '@coffer/sdk/vault/project';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useId, useState } from 'react';
import { client } from '../lib/client';
import { formatDate } from '../lib/format';
import { keyring } from '../lib/keyring';
import { useMemberDirectory } from '../lib/members';
import { chainKey, chainStatementsKey, useVaultStatus, vaultKey, vouchKey } from '../lib/queries';
import { Dialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { useProjectContext } from '../app/ProjectLayout';
import { RekeyDialog } from '../app/Rekey';

const normalize = (fingerprint: string) => fingerprint.replace(/\s+/g, '').toUpperCase();

// Opened rarely (once per project from before chains): loaded when first opened.
const SignChainDialog = lazy(() =>
  import('./SignChain').then((m) => ({ default: m.SignChainDialog })),
);

/** Vault access (admins): its epoch, the re-key, and members waiting for the project key. */
export function AccessPage() {
  const project = useProjectContext();
  const vault = useVaultStatus(project.id);
  const [granting, setGranting] = useState<PendingGrant | null>(null);
  const [rekeying, setRekeying] = useState(false);

  if (vault.isPending) return <p className="muted">Loading the vault…</p>;
  if (vault.isError) return <ErrorNote error={vault.error} onRetry={() => void vault.refetch()} />;
  const status = vault.data;
  const pending = status.pending_grants ?? [];

  return (
    <section className="page stack">
      <MembershipChain projectId={project.id} isAdmin={project.role === 'admin'} />
      <h2>Vault access</h2>
      <div className="card stack">
        <p>
          Key epoch <strong>{status.epoch}</strong>
          {status.rekey_recommended ? (
            <span className="warning-text">
              {' '}
              · re-key recommended: someone who could read secrets left
            </span>
          ) : (
            <span className="muted"> · no re-key needed</span>
          )}
        </p>
        <div>
          <button
            type="button"
            className={status.rekey_recommended ? 'primary' : ''}
            onClick={() => setRekeying(true)}
          >
            Re-key now
          </button>
        </div>
      </div>
      <h3>Waiting for the project key</h3>
      {pending.length === 0 ? (
        <p className="muted">
          Nobody is waiting. Admins and developers who accepted an invitation appear here until you
          grant them the key.
        </p>
      ) : (
        <div className="table-scroll">
          <table className="table cards-narrow">
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">Role</th>
                <th scope="col">Key fingerprint</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {pending.map((member) => (
                <tr key={member.user_id}>
                  <td>
                    <div>{member.name}</div>
                    <div className="muted small">{member.email}</div>
                  </td>
                  <td data-label="Role">{member.role}</td>
                  <td data-label="Key fingerprint">
                    <span className="mono fingerprint">{member.fingerprint}</span>
                    {member.introduction?.proof ? (
                      <div className="small introduced">accepted with your introduction link</div>
                    ) : member.introduction ? (
                      <div className="small muted">
                        came through the e-mail only: compare the fingerprint
                      </div>
                    ) : null}
                  </td>
                  <td className="row-actions">
                    <button
                      type="button"
                      className="primary"
                      onClick={() => setGranting(member)}
                      aria-label={`Grant the key to ${member.email}`}
                    >
                      Grant
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {granting ? (
        <GrantDialog projectId={project.id} member={granting} onClose={() => setGranting(null)} />
      ) : null}
      {rekeying ? <RekeyDialog projectId={project.id} onClose={() => setRekeying(false)} /> : null}
    </section>
  );
}

/**
 * The project's signed membership chain, verified here against the user's
 * pins: its fingerprint (the root's hash, the project's identity) and who
 * signed whom in. A project from before chains offers its admins to sign one.
 */
function MembershipChain({ projectId, isAdmin }: { projectId: string; isAdmin: boolean }) {
  const queryClient = useQueryClient();
  const [signing, setSigning] = useState(false);
  const [all, setAll] = useState(false);
  const directory = useMemberDirectory(projectId);
  const chain = useQuery({
    queryKey: chainStatementsKey(projectId),
    queryFn: async () => {
      const vault = await keyring.vault(projectId);
      const state = await loadMembershipChain(client, projectId, { pins: await keyring.pins() });
      vault.adoptChain(state);
      return { statements: state?.statements ?? [], state, holdsKey: vault.holdsKeys };
    },
    staleTime: 0,
  });
  const who = (id: string) => {
    const member = directory.data?.get(id);
    return member ? `${member.user.name} (${member.user.email})` : `a former member (${id})`;
  };

  if (chain.isPending) return <p className="muted">Verifying the membership chain…</p>;
  if (chain.isError) return <ErrorNote error={chain.error} onRetry={() => void chain.refetch()} />;
  const { statements, state, holdsKey } = chain.data;
  const shown = all ? statements : statements.slice(-10);

  return (
    <>
      <h2>Project fingerprint</h2>
      {state ? (
        <div className="card stack">
          <output className="mono fingerprint-big" aria-label="Project fingerprint">
            {state.fingerprint}
          </output>
          <p className="small">
            The hash of the project's first signed membership statement. Every member's browser
            remembered it when they joined and refuses the project if the server ever shows another
            one, so the server cannot change it. It is the same for everyone: compare it with other
            members if you wish.
          </p>
          <h3>Signed membership</h3>
          <ol
            className="small stack"
            aria-label="Signed membership statements"
            start={statements.length - shown.length + 1}
          >
            {shown.map((s) => (
              <li key={s.seq}>
                {describeStatement(s, who)} · <time dateTime={s.at}>{formatDate(s.at)}</time>
              </li>
            ))}
          </ol>
          {shown.length < statements.length ? (
            <div>
              <button type="button" onClick={() => setAll(true)}>
                Show all {statements.length} statements
              </button>
            </div>
          ) : null}
        </div>
      ) : (
        <div className="card stack">
          <p>
            This project has <strong>no signed membership chain yet</strong> (it was created before
            them): browsers accept its key grants with a warning, trusting the server about who is
            an admin.
          </p>
          {!isAdmin ? (
            <p className="muted">An admin of the project signs it from this page.</p>
          ) : holdsKey ? (
            <>
              <p>
                Signing it lists who holds the project key now, with their key fingerprints, for you
                to check; your browser then signs them in. From then on every member's browser
                accepts only what admins of the chain signed.
              </p>
              <div>
                <button type="button" className="primary" onClick={() => setSigning(true)}>
                  Sign membership
                </button>
              </div>
            </>
          ) : (
            <p className="muted">
              Only an admin who holds the project key can sign it: you are waiting for the key.
            </p>
          )}
        </div>
      )}
      {signing ? (
        <Suspense fallback={null}>
          <SignChainDialog
            projectId={projectId}
            onClose={() => setSigning(false)}
            onSigned={async () => {
              setSigning(false);
              await queryClient.invalidateQueries({ queryKey: chainKey(projectId) });
            }}
          />
        </Suspense>
      ) : null}
    </>
  );
}

function describeStatement(s: MembershipStatement, who: (id: string) => string): string {
  const signer = who(s.signer_id);
  switch (s.kind) {
    case 'root':
      return `${signer} created the chain, as admin`;
    case 'add':
      return `${signer} signed in ${who(s.user_id)} as ${s.role}`;
    case 'role':
      return `${signer} made ${who(s.user_id)} ${s.role}`;
    case 'remove':
      return `${signer} removed ${who(s.user_id)}`;
  }
}

/**
 * Granting seals the project key to the member's public key. The server could
 * show a key of its own instead, so something must vouch for it first: the
 * member's proof over their keys with the introduction link's secret (checked
 * here, refused on mismatch), a key this admin already verified, or the
 * fingerprint compared with the member out of band.
 */
function GrantDialog({
  projectId,
  member,
  onClose,
}: {
  projectId: string;
  member: PendingGrant;
  onClose: () => void;
}) {
  const queryClient = useQueryClient();
  const [told, setTold] = useState('');
  const [confirmed, setConfirmed] = useState(false);
  const toldId = useId();
  // What vouches for these keys without asking the admin anything, or why nothing does.
  const vouched = useQuery({
    queryKey: vouchKey(projectId, member),
    queryFn: async () => {
      try {
        const mode = vouchFor(await keyring.vault(projectId), member, {
          pins: await keyring.pins(),
        });
        return { mode, refusal: null };
      } catch (error) {
        if (isVaultError(error, 'unverified_member'))
          return { mode: 'fingerprint' as const, refusal: null };
        if (isVaultError(error)) return { mode: null, refusal: error.message };
        throw error;
      }
    },
    staleTime: 0,
    gcTime: 0,
  });
  const mode = vouched.data?.mode;
  const mismatch = told.trim() !== '' && normalize(told) !== normalize(member.fingerprint);
  const grant = useMutation({
    mutationFn: async () =>
      grantMember(await keyring.vault(projectId), member.user_id, {
        pins: await keyring.pins(),
        // Compared by the admin: the member's own words if given, else what was on screen.
        ...(mode === 'fingerprint'
          ? { expectedFingerprint: told.trim() || member.fingerprint }
          : {}),
      }),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: vaultKey(projectId) });
      // The member was signed into the chain first.
      await queryClient.invalidateQueries({ queryKey: chainKey(projectId) });
      onClose();
    },
  });
  const canGrant =
    mode === 'introduction' || mode === 'pin'
      ? true
      : mode === 'fingerprint' && !mismatch && (confirmed || told.trim() !== '');

  return (
    <Dialog title={`Grant the project key to ${member.name}`} onClose={onClose}>
      <form
        className="stack"
        onSubmit={(event) => {
          event.preventDefault();
          if (canGrant) grant.mutate();
        }}
      >
        {vouched.isPending ? <p className="muted">Checking {member.name}'s keys…</p> : null}
        <ErrorNote error={vouched.error} />
        {vouched.data?.refusal ? (
          <div className="error-note" role="alert">
            <p>
              <strong>Do not grant.</strong> {vouched.data.refusal}
            </p>
          </div>
        ) : null}
        {mode === 'introduction' || mode === 'pin' ? (
          <p className="notice" role="status">
            {mode === 'introduction'
              ? `${member.name} accepted with the introduction link: their browser proved these keys with its secret, so they are theirs. No fingerprint comparison is needed.`
              : `You verified ${member.name}'s keys before; they have not changed.`}
          </p>
        ) : null}
        {mode === 'fingerprint' ? (
          <>
            <p>
              {member.name} did not accept with an introduction link, so nothing yet proves these
              keys are theirs. Ask them for the key fingerprint shown on their{' '}
              <strong>Account</strong> page in the dashboard (or by <code>coffer whoami</code>),
              through a channel you trust — in person, a call, your team chat — and compare it with
              this one:
            </p>
            <output className="mono fingerprint-big" aria-label={`Fingerprint of ${member.email}`}>
              {member.fingerprint}
            </output>
            <div className="field">
              <label htmlFor={toldId}>Fingerprint as told by {member.name} (optional)</label>
              <input
                id={toldId}
                className="mono"
                value={told}
                autoComplete="off"
                spellCheck={false}
                onChange={(e) => setTold(e.target.value)}
                aria-invalid={mismatch || undefined}
                aria-describedby={`${toldId}-hint`}
              />
              <div id={`${toldId}-hint`} className={mismatch ? 'field-error' : 'hint'}>
                {mismatch
                  ? 'This is not the fingerprint the server shows for this member. Do not grant: the key may not be theirs.'
                  : 'If you paste it, the key is granted only if it matches.'}
              </div>
            </div>
            <label className="check">
              <input
                type="checkbox"
                checked={confirmed}
                onChange={(e) => setConfirmed(e.target.checked)}
              />
              {member.name} confirmed this fingerprint to me
            </label>
          </>
        ) : null}
        <ErrorNote error={grant.error} />
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={!canGrant || grant.isPending}>
            {grant.isPending ? 'Granting…' : 'Grant the key'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
