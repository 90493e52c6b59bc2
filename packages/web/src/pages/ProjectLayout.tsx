import { type Project } from '@coffer/sdk';
import { NavLink, Outlet, useOutletContext, useParams } from 'react-router';
import { useProject } from '../lib/queries';
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
        </nav>
      </div>
      <Outlet context={p} />
    </div>
  );
}
