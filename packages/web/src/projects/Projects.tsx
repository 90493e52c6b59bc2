import { listProjects } from '@coffer/sdk';
import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense, useState } from 'react';
import { Link } from 'react-router';
import { client } from '../lib/client';
import { ago, formatDate } from '../lib/format';
import { ErrorNote } from '../ui/ErrorNote';
import { SkeletonRows } from '../ui/SkeletonRows';
import { useTitle } from '../lib/title';
import { projectsKey } from '../lib/queries';

// The new-project dialog loads when opened, with the SDK's vault creation.
const CreateProjectDialog = lazy(() =>
  import('./CreateProjectDialog').then((m) => ({ default: m.CreateProjectDialog })),
);

export function ProjectsPage() {
  useTitle('Projects');
  const [creating, setCreating] = useState(false);
  const projects = useQuery({
    queryKey: projectsKey(),
    queryFn: () => listProjects(client, { per_page: 100, sort: 'name', order: 'asc' }),
  });

  return (
    <section className="page stack">
      <div className="page-header">
        <h1>Projects</h1>
        <button type="button" className="primary" onClick={() => setCreating(true)}>
          New project
        </button>
      </div>
      {projects.isPending ? (
        <SkeletonRows count={3} />
      ) : projects.isError ? (
        <ErrorNote error={projects.error} onRetry={() => void projects.refetch()} />
      ) : projects.data.data.length === 0 ? (
        <div className="empty">
          <h2>Create your first project</h2>
          <p className="muted">
            A project holds environments (development, staging, production) and their secrets,
            encrypted in this browser before they reach the server.
          </p>
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            Create a project
          </button>
          <p className="muted small">
            Waiting for an invitation? It appears under <Link to="/invitations">Invitations</Link>.
          </p>
        </div>
      ) : (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Your role</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {projects.data.data.map((project) => (
              <tr key={project.id}>
                <td>
                  <Link to={`/projects/${project.id}`}>{project.name}</Link>
                  {project.description ? (
                    <div className="muted small">{project.description}</div>
                  ) : null}
                </td>
                <td>{project.role}</td>
                <td title={formatDate(project.updated_at)}>{ago(project.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {creating ? (
        <Suspense fallback={null}>
          <CreateProjectDialog onClose={() => setCreating(false)} />
        </Suspense>
      ) : null}
    </section>
  );
}
