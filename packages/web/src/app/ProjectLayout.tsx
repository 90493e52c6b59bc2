import { type Project, type Role } from '@coffer/sdk';
import { Link, NavLink, Outlet, useLocation, useOutletContext, useParams } from 'react-router';
import { lazy, Suspense, useEffect, useRef, useState } from 'react';
import { useChain, useProject, useVaultStatus } from '../lib/queries';
import { useTitle } from '../lib/title';
import { ErrorNote } from '../ui/ErrorNote';

// Loaded when an admin starts a re-key (it brings the SDK's re-key with it).
const RekeyDialog = lazy(() => import('./Rekey').then((m) => ({ default: m.RekeyDialog })));

export function useProjectContext(): Project {
  return useOutletContext<Project>();
}

/** One tab of a project: its path under `/projects/:id` ('' for Secrets), its label, who sees it. */
export interface ProjectTab {
  path: string;
  label: string;
  roles: readonly Role[];
}

export const ANYONE: readonly Role[] = ['admin', 'developer', 'viewer'];
export const WRITERS: readonly Role[] = ['admin', 'developer'];
export const ADMINS: readonly Role[] = ['admin'];

export function ProjectLayout({ tabs }: { tabs: readonly ProjectTab[] }) {
  const { projectId = '' } = useParams();
  const project = useProject(projectId);
  const location = useLocation();
  const current = location.pathname.split('/')[3] ?? '';
  // "Secrets · acme · Coffer": the tab, then the project.
  useTitle(tabs.find((tab) => tab.path === current)?.label, project.data?.name);
  // At phone width the strip scrolls: the current tab is brought into it.
  const strip = useRef<HTMLElement>(null);
  useEffect(() => {
    const reveal = () => {
      const nav = strip.current;
      const active = nav?.querySelector<HTMLElement>('a.active');
      if (!nav || !active) return;
      const { offsetLeft, offsetWidth } = active;
      if (
        offsetLeft < nav.scrollLeft ||
        offsetLeft + offsetWidth > nav.scrollLeft + nav.clientWidth
      )
        nav.scrollLeft = offsetLeft - (nav.clientWidth - offsetWidth) / 2;
    };
    reveal();
    window.addEventListener('resize', reveal);
    return () => window.removeEventListener('resize', reveal);
  }, [current, project.data]);
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
        <nav aria-label="Project" className="tabs" ref={strip}>
          {tabs
            .filter((tab) => tab.roles.includes(p.role))
            .map((tab) => (
              <NavLink
                key={tab.path}
                end={tab.path === ''}
                to={tab.path ? `/projects/${p.id}/${tab.path}` : `/projects/${p.id}`}
              >
                {tab.label}
              </NavLink>
            ))}
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
      {open ? (
        <Suspense fallback={null}>
          <RekeyDialog projectId={projectId} onClose={() => setOpen(false)} />
        </Suspense>
      ) : null}
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
