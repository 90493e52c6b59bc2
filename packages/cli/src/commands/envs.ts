import {
  createEnvironment,
  deleteEnvironment,
  listEnvironments,
  updateEnvironment,
} from '@coffer/sdk';
import { PROJECT_OPTION, str, YES_OPTION, type Command } from '../cli/command.js';
import { confirmDestructive } from '../cli/prompt.js';
import { UsageError } from '../cli/errors.js';
import { note, printJson, printTable, shortTime } from '../cli/output.js';
import { allPages } from '../resolve.js';
import { inProject } from '../scope.js';

const SLUG = {
  type: 'string',
  value: 'SLUG',
  description: 'URL-safe handle (default: from the name)',
} as const;

const list: Command = {
  name: 'envs list',
  summary: "list the project's environments",
  options: PROJECT_OPTION,
  async run({ values }) {
    const { ctx, client, project } = await inProject(values);
    const envs = await allPages((page, per_page) =>
      listEnvironments(client, project, { page, per_page, sort: 'created_at', order: 'asc' }),
    );
    if (ctx.json) return printJson(envs);
    printTable(
      ['slug', 'name', 'id', 'secrets', 'updated'],
      envs.map((e) => [e.slug, e.name, e.id, e.secret_count, shortTime(e.updated_at)]),
    );
  },
};

const create: Command = {
  name: 'envs create',
  summary: 'create an environment',
  args: 'NAME',
  positionals: [1, 1],
  options: { ...PROJECT_OPTION, slug: SLUG },
  async run({ values, positionals }) {
    const { ctx, client, project } = await inProject(values);
    const slug = str(values, 'slug');
    const env = await createEnvironment(client, project, {
      name: positionals[0]!,
      ...(slug ? { slug } : {}),
    });
    if (ctx.json) return printJson(env);
    note(`Created environment ${env.slug} (${env.id}).`);
  },
};

const rename: Command = {
  name: 'envs rename',
  summary: 'rename an environment (and optionally change its slug)',
  args: 'ENV NAME',
  positionals: [2, 2],
  options: { ...PROJECT_OPTION, slug: { ...SLUG, description: 'new URL-safe handle' } },
  async run({ values, positionals }) {
    const { ctx, client, project } = await inProject(values);
    const slug = str(values, 'slug');
    const [envRef, name] = positionals as [string, string];
    if (!name.trim()) throw new UsageError('the new name is empty', 'envs rename');
    const env = await updateEnvironment(client, project, envRef, {
      name,
      ...(slug ? { slug } : {}),
    });
    if (ctx.json) return printJson(env);
    note(`Environment ${env.id} is now "${env.name}" (${env.slug}).`);
  },
};

const remove: Command = {
  name: 'envs delete',
  summary: 'delete an environment with all its secrets',
  args: 'ENV',
  positionals: [1, 1],
  options: {
    ...PROJECT_OPTION,
    ...YES_OPTION,
  },
  async run({ values, positionals }) {
    const { ctx, client, project } = await inProject(values);
    await confirmDestructive(
      values.yes === true,
      `Delete environment ${positionals[0]} and all its secrets? This cannot be undone.`,
    );
    await deleteEnvironment(client, project, positionals[0]!);
    if (ctx.json) return printJson({ deleted: positionals[0] });
    note(`Deleted environment ${positionals[0]}.`);
  },
};

export const commands: Command[] = [list, create, rename, remove];
