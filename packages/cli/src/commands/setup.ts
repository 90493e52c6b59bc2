import { listEnvironments, listProjects } from '@coffer/sdk';
import { str, type Command } from '../cli/command.js';
import { CliError, UsageError } from '../cli/errors.js';
import { note, printJson } from '../cli/output.js';
import { ask, interactive } from '../cli/prompt.js';
import { Context } from '../context.js';
import { LINK_FILE, writeProjectLink } from '../project-link.js';
import { allPages } from '../resolve.js';
import { projectId } from '../scope.js';

/** Lets the user pick one item by number or by name. */
async function choose<T>(
  what: string,
  items: T[],
  label: (item: T) => string,
  matches: (item: T, answer: string) => boolean,
): Promise<T> {
  if (items.length === 0) throw new CliError('not_found', `no ${what} to choose from`);
  process.stderr.write(items.map((item, i) => `  ${i + 1}) ${label(item)}\n`).join(''));
  const answer = (await ask(`Which ${what}? [1] `)).trim() || '1';
  const byNumber = /^\d+$/.test(answer) ? items[Number(answer) - 1] : undefined;
  const chosen = byNumber ?? items.find((item) => matches(item, answer));
  if (!chosen) throw new CliError('not_found', `no ${what} "${answer}"`);
  return chosen;
}

const setup: Command = {
  name: 'setup',
  summary: `link this directory to a project and environment (writes ${LINK_FILE})`,
  description: `${LINK_FILE} holds the server, the project id and the environment slug, never a secret, so it can be committed. Commands run in this directory or below use it unless --project/--env say otherwise. Without --project/--env, asks on a terminal.`,
  options: {
    project: { type: 'string', short: 'p', value: 'PROJECT', description: 'project id or name' },
    env: {
      type: 'string',
      short: 'e',
      value: 'ENV',
      description: 'environment slug (default on a terminal: asked)',
    },
  },
  async run({ values }) {
    const ctx = new Context(values);
    const client = await ctx.client();
    const projectRef = str(values, 'project');
    let project: string;
    if (projectRef) project = await projectId(client, projectRef);
    else if (interactive()) {
      const projects = await allPages((page, per_page) =>
        listProjects(client, { page, per_page, sort: 'name', order: 'asc' }),
      );
      project = (
        await choose(
          'project',
          projects,
          (p) => `${p.name} (${p.id})`,
          (p, a) => p.name === a || p.id === a,
        )
      ).id;
    } else throw new UsageError('missing --project', 'setup');

    const envs = await allPages((page, per_page) =>
      listEnvironments(client, project, { page, per_page, sort: 'created_at', order: 'asc' }),
    );
    const envRef = str(values, 'env');
    let environment: string;
    if (envRef) {
      const env = envs.find((e) => e.slug === envRef || e.id === envRef);
      if (!env)
        throw new CliError(
          'not_found',
          `no environment "${envRef}" in ${project} (there are: ${envs.map((e) => e.slug).join(', ') || 'none'})`,
        );
      environment = env.slug;
    } else if (interactive()) {
      environment = (
        await choose(
          'environment',
          envs,
          (e) => `${e.slug} (${e.name})`,
          (e, a) => e.slug === a,
        )
      ).slug;
    } else throw new UsageError('missing --env', 'setup');

    const link = { server: ctx.server(), project, environment };
    const path = writeProjectLink(link);
    if (ctx.json) return printJson({ ...link, file: path });
    note(`Linked ${process.cwd()} to ${project}, environment ${environment} (${path}).`);
  },
};

export const commands: Command[] = [setup];
