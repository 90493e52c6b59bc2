import { listProjects, type CofferClient } from '@coffer/sdk';
import type { Values } from './cli/command.js';
import { CliError } from './cli/errors.js';
import { Context } from './context.js';
import { allPages, resolveId } from './resolve.js';

/** A project id from an id or a project name. */
export function projectId(client: CofferClient, ref: string): Promise<string> {
  return resolveId(
    ref,
    'proj_',
    'project',
    () => allPages((page, per_page) => listProjects(client, { page, per_page })),
    (p) => [p.name],
  );
}

/**
 * The project a command works in: `--project`, `COFFER_PROJECT` or
 * `.coffer.json`; with `COFFER_TOKEN` and none of them, the token's own
 * project (a token sees exactly one).
 */
export async function currentProjectId(ctx: Context, client: CofferClient): Promise<string> {
  if (ctx.token && !ctx.hasProjectRef()) {
    const { data } = await listProjects(client, { per_page: 1 });
    if (!data[0])
      throw new CliError('not_found', 'the token in COFFER_TOKEN belongs to no project');
    return data[0].id;
  }
  return projectId(client, ctx.projectRef());
}

/** The context, an authenticated client and the project of a project-scoped command. */
export async function inProject(values: Values, options: { userOnly?: boolean } = {}) {
  const ctx = new Context(values);
  const client = options.userOnly ? await ctx.userClient() : await ctx.client();
  const project = await currentProjectId(ctx, client);
  return { ctx, client, project };
}
