import {
  createEnvironment,
  deleteEnvironment,
  updateEnvironment,
  type Environment,
  type Project,
} from '@coffer/sdk';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { client } from '../lib/client';
import { toProblem } from '../lib/errors';
import { ago, formatDate } from '../lib/format';
import { environmentsKey, projectSecretsKey, useEnvironments } from '../lib/queries';
import { ConfirmDialog, Dialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { Field } from '../ui/Field';
import { SkeletonRows } from '../ui/SkeletonRows';
import { useProjectContext } from '../app/ProjectLayout';

type Editing = { kind: 'create' } | { kind: 'rename'; environment: Environment } | null;

export function EnvironmentsPage() {
  const project = useProjectContext();
  const environments = useEnvironments(project.id);
  const [editing, setEditing] = useState<Editing>(null);
  const [deleting, setDeleting] = useState<Environment | null>(null);
  const canEdit = project.role !== 'viewer';

  return (
    <section className="page stack" aria-labelledby="environments-title">
      <div className="page-header">
        <h2 id="environments-title" className="visually-hidden">
          Environments
        </h2>
        {canEdit ? (
          <button type="button" className="primary" onClick={() => setEditing({ kind: 'create' })}>
            New environment
          </button>
        ) : null}
      </div>
      {environments.isPending ? (
        <SkeletonRows count={3} />
      ) : environments.isError ? (
        <ErrorNote error={environments.error} onRetry={() => void environments.refetch()} />
      ) : environments.data.length === 0 ? (
        <div className="empty">
          <p>This project has no environments.</p>
          {canEdit ? (
            <button
              type="button"
              className="primary"
              onClick={() => setEditing({ kind: 'create' })}
            >
              Create one
            </button>
          ) : null}
        </div>
      ) : (
        <table className="table cards-narrow">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Slug</th>
              <th scope="col">Secrets</th>
              <th scope="col">Created</th>
              {canEdit ? (
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              ) : null}
            </tr>
          </thead>
          <tbody>
            {environments.data.map((environment) => (
              <tr key={environment.id}>
                <td>{environment.name}</td>
                <td className="mono" data-label="Slug">
                  {environment.slug}
                </td>
                <td data-label="Secrets">{environment.secret_count}</td>
                <td data-label="Created" title={formatDate(environment.created_at)}>
                  {ago(environment.created_at)}
                </td>
                {canEdit ? (
                  <td className="row-actions">
                    <button
                      type="button"
                      onClick={() => setEditing({ kind: 'rename', environment })}
                      aria-label={`Rename ${environment.name}`}
                    >
                      Rename
                    </button>
                    {project.role === 'admin' ? (
                      <button
                        type="button"
                        className="danger"
                        onClick={() => setDeleting(environment)}
                        aria-label={`Delete ${environment.name}`}
                      >
                        Delete
                      </button>
                    ) : null}
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {editing ? (
        <EnvironmentDialog project={project} editing={editing} onClose={() => setEditing(null)} />
      ) : null}
      {deleting ? (
        <DeleteEnvironmentDialog
          project={project}
          environment={deleting}
          onClose={() => setDeleting(null)}
        />
      ) : null}
    </section>
  );
}

function EnvironmentDialog({
  project,
  editing,
  onClose,
}: {
  project: Project;
  editing: NonNullable<Editing>;
  onClose: () => void;
}) {
  const queryClient = useQueryClient();
  const save = useMutation({
    mutationFn: (input: { name: string; slug?: string }) =>
      editing.kind === 'create'
        ? createEnvironment(client, project.id, input)
        : updateEnvironment(client, project.id, editing.environment.id, input),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: environmentsKey(project.id) });
      onClose();
    },
  });
  const problem = save.error ? toProblem(save.error) : null;
  const current = editing.kind === 'rename' ? editing.environment : null;

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const slug = String(form.get('slug') ?? '').trim();
    save.mutate({ name: String(form.get('name')).trim(), ...(slug ? { slug } : {}) });
  }

  return (
    <Dialog title={current ? `Rename ${current.name}` : 'New environment'} onClose={onClose}>
      <form className="stack" onSubmit={submit}>
        <Field
          label="Name"
          name="name"
          required
          autoFocus
          defaultValue={current?.name}
          error={problem?.fields.name}
        />
        <Field
          label="Slug (optional)"
          name="slug"
          defaultValue={current?.slug}
          pattern="[a-z0-9][a-z0-9\-]*"
          hint="Lower-case letters, digits and hyphens; what the CLI and CI use (coffer run -e staging)."
          error={problem?.fields.slug}
        />
        {problem && Object.keys(problem.fields).length === 0 ? (
          <ErrorNote error={save.error} />
        ) : null}
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={save.isPending}>
            {save.isPending ? 'Saving…' : current ? 'Save' : 'Create environment'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function DeleteEnvironmentDialog({
  project,
  environment,
  onClose,
}: {
  project: Project;
  environment: Environment;
  onClose: () => void;
}) {
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () => deleteEnvironment(client, project.id, environment.id),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: environmentsKey(project.id) });
      await queryClient.invalidateQueries({ queryKey: projectSecretsKey(project.id) });
      onClose();
    },
  });
  return (
    <ConfirmDialog
      title={`Delete ${environment.name}?`}
      confirmLabel="Delete environment"
      typeToConfirm={environment.slug}
      busy={remove.isPending}
      error={<ErrorNote error={remove.error} />}
      onConfirm={() => remove.mutate()}
      onClose={onClose}
    >
      <p>
        This deletes the environment <strong>{environment.name}</strong> with every secret in it (
        {environment.secret_count}) and all their versions. It cannot be undone.
      </p>
    </ConfirmDialog>
  );
}
