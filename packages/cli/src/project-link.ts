import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CliError } from './cli/errors.js';

/**
 * `.coffer.json`: links a directory (and its subdirectories) to a project and
 * environment, like `.git`. It is meant to be committed: it holds only the
 * server address and identifiers, never a secret or a credential.
 */
export interface ProjectLink {
  server?: string;
  project: string;
  environment?: string;
}

export const LINK_FILE = '.coffer.json';

/** The nearest `.coffer.json` from `cwd` upwards, with its path; `null` when none. */
export function findProjectLink(cwd = process.cwd()): { path: string; link: ProjectLink } | null {
  for (let dir = cwd; ; dir = dirname(dir)) {
    const path = join(dir, LINK_FILE);
    if (existsSync(path)) {
      let link: ProjectLink;
      try {
        link = JSON.parse(readFileSync(path, 'utf8')) as ProjectLink;
      } catch {
        throw new CliError('invalid_link_file', `${path} is not valid JSON`);
      }
      if (typeof link?.project !== 'string') {
        throw new CliError(
          'invalid_link_file',
          `${path} has no "project"; run \`coffer setup\` again`,
        );
      }
      return { path, link };
    }
    if (dirname(dir) === dir) return null;
  }
}

export function writeProjectLink(link: ProjectLink, cwd = process.cwd()): string {
  const path = join(cwd, LINK_FILE);
  writeFileSync(path, `${JSON.stringify(link, null, 2)}\n`, { mode: 0o644 });
  return path;
}
