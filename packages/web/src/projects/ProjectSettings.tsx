import { deleteProject, updateProject, type Project } from '@coffer/sdk';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { client } from '../lib/client';
import { toProblem } from '../lib/errors';
import { projectKey, projectsKey } from '../lib/queries';
import { ConfirmDialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { Field } from '../ui/Field';
import { useProjectContext } from '../app/ProjectLayout';

/** Project settings (admins): name, description, deletion. */
export function ProjectSettingsPage() {
  return <ProjectSettings project={useProjectContext()} />;
}

function ProjectSettings({ project }: { project: Project }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [deleting, setDeleting] = useState(false);
  const rename = useMutation({
    mutationFn: (changes: { name: string; description: string }) =>
      updateProject(client, project.id, changes),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: projectKey(project.id) });
      await queryClient.invalidateQueries({ queryKey: projectsKey() });
    },
  });
  const remove = useMutation({
    mutationFn: () => deleteProject(client, project.id),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: projectsKey() });
      navigate('/projects', { replace: true });
    },
  });
  const problem = rename.error ? toProblem(rename.error) : null;

  return (
    <section className="page stack" aria-labelledby="project-settings">
      <h2 id="project-settings" className="visually-hidden">
        Project settings
      </h2>
      <form
        className="stack narrow"
        onSubmit={(event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          rename.mutate({
            name: String(form.get('name')).trim(),
            description: String(form.get('description')).trim(),
          });
        }}
      >
        <Field
          label="Project name"
          name="name"
          required
          defaultValue={project.name}
          error={problem?.fields.name}
        />
        <Field
          label="Description"
          name="description"
          defaultValue={project.description}
          error={problem?.fields.description}
        />
        {problem && Object.keys(problem.fields).length === 0 ? (
          <ErrorNote error={rename.error} />
        ) : null}
        <div className="actions start">
          <button type="submit" disabled={rename.isPending}>
            {rename.isPending ? 'Saving…' : 'Save project'}
          </button>
          {rename.isSuccess ? <span role="status">Saved</span> : null}
        </div>
      </form>
      <div className="danger-zone stack">
        <h3>Delete this project</h3>
        <p>
          Deletes every environment, secret, version, member, key and audit event of the project.
        </p>
        <div>
          <button type="button" className="danger" onClick={() => setDeleting(true)}>
            Delete project
          </button>
        </div>
      </div>
      {deleting ? (
        <ConfirmDialog
          title={`Delete ${project.name}?`}
          confirmLabel="Delete project"
          typeToConfirm={project.name}
          busy={remove.isPending}
          error={<ErrorNote error={remove.error} />}
          onConfirm={() => remove.mutate()}
          onClose={() => setDeleting(false)}
        >
          <p>
            Every environment, secret and version of <strong>{project.name}</strong> is deleted for
            every member. It cannot be undone.
          </p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
