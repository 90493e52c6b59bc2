import { createProjectWithVault, deleteProject, listProjects } from '@coffer/sdk';
import { str, YES_OPTION, type Command } from '../cli/command.js';
import { note, printJson, printLine, printTable, shortTime } from '../cli/output.js';
import { confirmDestructive } from '../cli/prompt.js';
import { Context } from '../context.js';
import { allPages } from '../resolve.js';
import { projectId } from '../scope.js';

const list: Command = {
  name: 'projects list',
  summary: 'list the projects you are a member of',
  async run({ values }) {
    const ctx = new Context(values);
    const client = await ctx.client();
    const projects = await allPages((page, per_page) =>
      listProjects(client, { page, per_page, sort: 'name', order: 'asc' }),
    );
    if (ctx.json) return printJson(projects);
    printTable(
      ['id', 'name', 'role', 'created'],
      projects.map((p) => [p.id, p.name, p.role, shortTime(p.created_at)]),
      'No projects yet: create one with `coffer projects create NAME`.',
    );
  },
};

const create: Command = {
  name: 'projects create',
  summary: 'create a project (with development, staging and production environments) and its vault',
  args: 'NAME',
  positionals: [1, 1],
  options: {
    description: { type: 'string', value: 'TEXT', description: 'what the project is for' },
  },
  async run({ values, positionals }) {
    const ctx = new Context(values);
    const client = await ctx.userClient();
    const description = str(values, 'description');
    const project = await createProjectWithVault(client, ctx.userKeys(), {
      name: positionals[0]!,
      ...(description !== undefined ? { description } : {}),
    });
    if (ctx.json) return printJson(project);
    printLine(project.id);
    note(
      `Created project "${project.name}" (${project.id}); link a directory to it with \`coffer setup --project ${project.id}\`.`,
    );
  },
};

const remove: Command = {
  name: 'projects delete',
  summary: 'delete a project with all its environments, secrets, members and tokens',
  args: 'PROJECT',
  positionals: [1, 1],
  options: YES_OPTION,
  async run({ values, positionals }) {
    const ctx = new Context(values);
    const client = await ctx.userClient();
    const id = await projectId(client, positionals[0]!);
    await confirmDestructive(
      values.yes === true,
      `Delete project ${positionals[0]} (${id}) and every secret in it? This cannot be undone.`,
    );
    await deleteProject(client, id);
    if (ctx.json) return printJson({ deleted: id });
    note(`Deleted project ${id}.`);
  },
};

export const commands: Command[] = [list, create, remove];
