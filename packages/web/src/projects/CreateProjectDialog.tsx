import { createProjectWithVault } from '@coffer/sdk/vault/project';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { client } from '../lib/client';
import { toProblem } from '../lib/errors';
import { keyring } from '../lib/keyring';
import { Dialog } from '../ui/Dialog';
import { ErrorNote } from '../ui/ErrorNote';
import { Field } from '../ui/Field';
import { projectsKey } from '../lib/queries';

export function CreateProjectDialog({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const create = useMutation({
    mutationFn: (input: { name: string; description: string }) =>
      createProjectWithVault(client, keyring.keys(), input),
    onSuccess: async (project) => {
      await queryClient.invalidateQueries({ queryKey: projectsKey() });
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
