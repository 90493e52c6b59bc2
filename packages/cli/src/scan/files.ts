import { execFile } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { IgnoreRules } from './ignore.js';

const run = promisify(execFile);

/** A file to scan: where it is, and how findings name it (relative to the working directory). */
export interface FileEntry {
  absolute: string;
  display: string;
}

/**
 * The files under `paths`. Inside a git work tree, git lists them (tracked
 * files, and untracked ones that no ignore rule excludes: `git ls-files
 * --cached --others --exclude-standard`), so ignore rules mean exactly what
 * they mean to git, `.git/info/exclude` and `core.excludesFile` included.
 * Outside one, the directory is walked with the `.gitignore` files found from
 * the scanned directory down, and so is a directory git ignores but the
 * command line names. `noIgnore` walks everything. A file named on the
 * command line is scanned even if ignored; `.git` directories and
 * symbolic links are never followed.
 */
export async function listFiles(
  paths: string[],
  noIgnore: boolean,
  cwd = process.cwd(),
): Promise<FileEntry[]> {
  const out: FileEntry[] = [];
  const seen = new Set<string>();
  const push = (absolute: string) => {
    if (seen.has(absolute)) return;
    seen.add(absolute);
    out.push({ absolute, display: displayPath(cwd, absolute) });
  };
  for (const path of paths) {
    const absolute = resolve(cwd, path);
    const stat = statSync(absolute); // ENOENT: the caller reports the path
    if (!stat.isDirectory()) {
      push(absolute);
      continue;
    }
    const tracked = noIgnore ? null : await gitFiles(absolute);
    if (tracked) for (const file of tracked) push(file);
    else walk(absolute, '', noIgnore ? null : new IgnoreRules(), push);
  }
  return out;
}

function displayPath(cwd: string, absolute: string): string {
  const rel = relative(cwd, absolute);
  return (rel === '' ? '.' : rel).split(sep).join('/');
}

/**
 * The files git would commit under `dir`, or null outside a git work tree or
 * when `dir` itself is ignored (named on purpose: walked like a directory
 * outside git).
 */
async function gitFiles(dir: string): Promise<string[] | null> {
  try {
    await run('git', ['-C', dir, 'check-ignore', '-q', '.']);
    return null; // exit 0: ignored
  } catch {
    // exit 1: not ignored; 128: not a repository (ls-files fails below too)
  }
  try {
    const { stdout } = await run(
      'git',
      ['-C', dir, 'ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', '.'],
      { maxBuffer: 1 << 30, encoding: 'buffer' },
    );
    const files: string[] = [];
    for (const name of stdout.toString('utf8').split('\0')) {
      if (!name) continue;
      const absolute = join(dir, name);
      try {
        // A tracked file deleted from the work tree, or a submodule's directory: nothing to read.
        if (lstatSync(absolute).isFile()) files.push(absolute);
      } catch {
        // deleted
      }
    }
    return [...new Set(files)];
  } catch {
    return null;
  }
}

function walk(
  root: string,
  rel: string,
  rules: IgnoreRules | null,
  push: (absolute: string) => void,
): void {
  const dir = rel ? join(root, rel) : root;
  let here = rules;
  if (rules) {
    try {
      here = rules.add(rel, readFileSync(join(dir, '.gitignore'), 'utf8'));
    } catch {
      // no .gitignore here
    }
  }
  const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  for (const entry of entries) {
    const childRel = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (entry.name === '.git') continue;
      if (here?.ignored(childRel, true)) continue;
      walk(root, childRel, here, push);
    } else if (entry.isFile()) {
      if (here?.ignored(childRel, false)) continue;
      push(join(root, childRel));
    }
  }
}
