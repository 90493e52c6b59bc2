// Fails when a relative link or an anchor in any Markdown file of the repository
// points nowhere: `[text](docs/cli.md#coffer-run)` needs docs/cli.md and, in it, a
// heading whose GitHub anchor is `coffer-run`. Links to other sites are not fetched.
// Run by `npm run check` (as `npm run lint:links`).
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(new URL('..', import.meta.url).pathname);
const SKIP = new Set(['node_modules', 'dist', '.git', 'data', 'results']);

function markdownFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...markdownFiles(path));
    else if (name.endsWith('.md')) out.push(path);
  }
  return out;
}

/** The text outside fenced code blocks and code spans, line by line (links in code are examples). */
function proseLines(text) {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line.replace(/`[^`]*`/g, '``');
  });
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to '-', repeats numbered. */
function anchorsOf(text) {
  const seen = new Map();
  const anchors = new Set();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]
      .replace(/<[^>]+>/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1]);
  return anchors;
}

const anchorCache = new Map();
const anchorsOfFile = (path) => {
  if (!anchorCache.has(path)) anchorCache.set(path, anchorsOf(readFileSync(path, 'utf8')));
  return anchorCache.get(path);
};

const problems = [];
for (const file of markdownFiles(root)) {
  const lines = proseLines(readFileSync(file, 'utf8'));
  lines.forEach((line, i) => {
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      const [pathPart, anchor] = target.split('#', 2);
      const where = `${relative(root, file)}:${i + 1}`;
      const dest = pathPart === '' ? file : resolve(dirname(file), decodeURI(pathPart));
      if (!existsSync(dest)) {
        problems.push(`${where}: ${target}: no such file`);
        continue;
      }
      if (anchor !== undefined && dest.endsWith('.md') && !anchorsOfFile(dest).has(anchor)) {
        problems.push(`${where}: ${target}: no heading with the anchor #${anchor}`);
      }
    }
  });
}

if (problems.length > 0) {
  console.error(`Broken links in Markdown files:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exit(1);
}
