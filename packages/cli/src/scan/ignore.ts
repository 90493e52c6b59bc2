/**
 * `.gitignore` rules, for directories outside a git repository (inside one,
 * git itself lists the files: `git ls-files --cached --others
 * --exclude-standard`). What git documents in gitignore(5): blank lines and
 * `#` comments, `\` escapes, trailing spaces, `!` re-includes, a trailing `/`
 * for directories only, a pattern with a `/` anchored to its file's
 * directory, `*`, `?`, `[…]` and `**`; the last matching rule wins, and the
 * rules of a deeper `.gitignore` come after those above it.
 */

interface Rule {
  negate: boolean;
  directoryOnly: boolean;
  regex: RegExp;
  /** The directory of the `.gitignore` (relative, `/`-separated, '' for the root). */
  base: string;
  /** Without a `/` a pattern matches the last path segment at any depth. */
  basename: boolean;
}

export class IgnoreRules {
  private readonly rules: Rule[] = [];

  /** Adds the rules of the `.gitignore` in `base` (relative to the scan root). */
  add(base: string, content: string): IgnoreRules {
    const copy = new IgnoreRules();
    copy.rules.push(...this.rules);
    for (const rawLine of content.split(/\r?\n/)) {
      const rule = parseRule(rawLine, base);
      if (rule) copy.rules.push(rule);
    }
    return copy;
  }

  /** Whether `path` (relative to the scan root, `/`-separated) is ignored. */
  ignored(path: string, isDirectory: boolean): boolean {
    let ignored = false;
    for (const rule of this.rules) {
      if (rule.directoryOnly && !isDirectory) continue;
      if (rule.base && !path.startsWith(`${rule.base}/`)) continue;
      const relative = rule.base ? path.slice(rule.base.length + 1) : path;
      const subject = rule.basename ? relative.slice(relative.lastIndexOf('/') + 1) : relative;
      if (rule.regex.test(subject)) ignored = !rule.negate;
    }
    return ignored;
  }
}

function parseRule(rawLine: string, base: string): Rule | null {
  let line = rawLine;
  // Trailing spaces go, unless escaped with a backslash.
  line = line.replace(/(?<!\\)\s+$/, '');
  if (line === '' || line.startsWith('#')) return null;
  let negate = false;
  if (line.startsWith('!')) {
    negate = true;
    line = line.slice(1);
  } else if (line.startsWith('\\!') || line.startsWith('\\#')) line = line.slice(1);
  let directoryOnly = false;
  if (line.endsWith('/')) {
    directoryOnly = true;
    line = line.slice(0, -1);
  }
  if (line === '') return null;
  const basename = !line.includes('/');
  if (line.startsWith('/')) line = line.slice(1);
  return { negate, directoryOnly, basename, base, regex: new RegExp(`^${globToRegex(line)}$`) };
}

/** A gitignore glob as a regular expression source (matching a whole relative path). */
export function globToRegex(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const atStart = i === 0 || glob[i - 1] === '/';
        const atEnd = i + 2 === glob.length || glob[i + 2] === '/';
        if (atStart && atEnd) {
          if (i + 2 === glob.length)
            out += '.*'; // `a/**`: everything inside
          else {
            out += '(?:.*/)?'; // `**/` : zero or more directories
            i++; // the `/` after `**`
          }
          i++;
          continue;
        }
      }
      out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const close = glob.indexOf(']', i + 2);
      if (close < 0) out += '\\[';
      else {
        let body = glob.slice(i + 1, close);
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        out += `[${body.replace(/\\/g, '\\\\')}]`;
        i = close;
      }
    } else if (c === '\\' && i + 1 < glob.length) {
      out += escapeRegex(glob[++i]!);
    } else out += escapeRegex(c);
  }
  return out;
}

const escapeRegex = (c: string) => c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
