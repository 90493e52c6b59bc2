import { listProjects } from '@coffer/sdk';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { client } from '../lib/client';
import { toProblem } from '../lib/errors';
import { ago, formatDate } from '../lib/format';
import { keyring } from '../lib/keyring';
import { Dialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { Field } from '../ui/Field';
import { useTitle } from '../lib/title';

export function ProjectsPage() {
  useTitle('Projects');
  const [creating, setCreating] = useState(false);
  const projects = useQuery({
    queryKey: ['projects'],
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
      {creating ? <CreateProjectDialog onClose={() => setCreating(false)} /> : null}
    </section>
  );
}

export function SkeletonRows({ count }: { count: number }) {
  return (
    <div className="skeleton" aria-busy="true" aria-label="Loading">
      {Array.from({ length: count }, (_, i) => (
        <div key={i} className="skeleton-row" />
      ))}
    </div>
  );
}

function CreateProjectDialog({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const create = useMutation({
    // The vault's creation (signing the membership chain's root, …) loads with the first project made.
    mutationFn: async (input: { name: string; description: string }) => {
      const keys = keyring.keys();
      const { createProjectWithVault } = await import('@coffer/sdk/vault/project');
      return createProjectWithVault(client, keys, input);
    },
    onSuccess: async (project) => {
      await queryClient.invalidateQueries({ queryKey: ['projects'] });
      navigate(`/projects/${project.id}`);
    },
  });
  const problem = create.error ? toProblem(create.error) : null;

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    create.mutate({
      name: String(form.get('name')).trim(),
      description: String(form.get('description')).trim(),
    });
  }

  return (
    <Dialog title="New project" onClose={onClose}>
      <form className="stack" onSubmit={submit}>
        <Field
          label="Name"
          name="name"
          required
          autoFocus
          maxLength={100}
          error={problem?.fields.name}
        />
        <Field
          label="Description (optional)"
          name="description"
          maxLength={500}
          error={problem?.fields.description}
        />
        <p className="muted small">
          It starts with the environments development, staging and production, and a new project key
          created in this browser.
        </p>
        {problem && Object.keys(problem.fields).length === 0 ? (
          <ErrorNote error={create.error} />
        ) : null}
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={create.isPending}>
            {create.isPending ? 'Creating…' : 'Create project'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
