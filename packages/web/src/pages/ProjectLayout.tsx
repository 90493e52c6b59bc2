import { type Project } from '@coffer/sdk';
import { Link, NavLink, Outlet, useOutletContext, useParams } from 'react-router';
import { useState } from 'react';
import { useChain, useProject, useVaultStatus } from '../lib/queries';
import { RekeyDialog } from './Rekey';
import { ErrorNote } from '../ui/ErrorNote';

export function useProjectContext(): Project {
  return useOutletContext<Project>();
}

export function ProjectLayout() {
  const { projectId = '' } = useParams();
  const project = useProject(projectId);
  if (project.isPending) return <div className="page muted">Loading project…</div>;
  if (project.isError) {
    return (
      <section className="page stack">
        <h1>Project unavailable</h1>
        <ErrorNote error={project.error} onRetry={() => void project.refetch()} />
      </section>
    );
  }
  const p = project.data;
  return (
    <div className="project">
      <div className="project-header">
        <h1>{p.name}</h1>
        <span className="role-tag">{p.role}</span>
        <nav aria-label="Project" className="tabs">
          <NavLink end to={`/projects/${p.id}`}>
            Secrets
          </NavLink>
          <NavLink to={`/projects/${p.id}/environments`}>Environments</NavLink>
          <NavLink to={`/projects/${p.id}/members`}>Members</NavLink>
          {p.role === 'admin' ? <NavLink to={`/projects/${p.id}/access`}>Access</NavLink> : null}
          {p.role !== 'viewer' ? <NavLink to={`/projects/${p.id}/tokens`}>Tokens</NavLink> : null}
          {p.role === 'admin' ? (
            <NavLink to={`/projects/${p.id}/webhooks`}>Webhooks</NavLink>
          ) : null}
          {p.role === 'admin' ? <NavLink to={`/projects/${p.id}/audit`}>Audit</NavLink> : null}
          {p.role === 'admin' ? (
            <NavLink to={`/projects/${p.id}/settings`}>Settings</NavLink>
          ) : null}
        </nav>
      </div>
      {p.role === 'admin' ? <RekeyBanner projectId={p.id} /> : null}
      {p.role === 'admin' ? <ChainBanner key={p.id} projectId={p.id} /> : null}
      <Outlet context={p} />
    </div>
  );
}

/** Until the vault is re-keyed after someone with access left, admins see this on every page of the project. */
function RekeyBanner({ projectId }: { projectId: string }) {
  const vault = useVaultStatus(projectId);
  const [open, setOpen] = useState(false);
  if (!vault.data?.rekey_recommended) return null;
  return (
    <div className="notice banner" role="status">
      <span>
        <strong>Re-key recommended.</strong> Someone who could read this project's secrets left; a
        re-key makes the keys they may have copied useless for the future and the history.
      </span>
      <button type="button" className="primary" onClick={() => setOpen(true)}>
        Re-key now
      </button>
      {open ? <RekeyDialog projectId={projectId} onClose={() => setOpen(false)} /> : null}
    </div>
  );
}

/**
 * A project from before membership chains: admins are told once per visit of
 * the project (dismissed, it stays away until they open it again).
 */
function ChainBanner({ projectId }: { projectId: string }) {
  const chain = useChain(projectId);
  const [dismissed, setDismissed] = useState(false);
  if (dismissed || !chain.data?.unchained) return null;
  return (
    <div className="notice banner small" role="status">
      <span>
        This project has no signed membership chain yet —{' '}
        <Link to={`/projects/${projectId}/access`}>Sign it in Access</Link>.
      </span>
      <button type="button" onClick={() => setDismissed(true)}>
        Dismiss
      </button>
    </div>
  );
}
