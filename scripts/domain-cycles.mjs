// Fails when the server's domains import each other in a cycle. madge (npm run
// lint:cycles) finds cycles between files; this finds them between the folders
// of packages/server/src/domains/, where members/a.ts → invitations/b.ts and
// invitations/c.ts → members/d.ts is a cycle although no file is in one.
// Type-only imports count: a domain that needs another's types depends on it.
//
//   node scripts/domain-cycles.mjs          # check
//   node scripts/domain-cycles.mjs --graph  # also print each domain's dependencies
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const domainsDir = new URL('../packages/server/src/domains/', import.meta.url).pathname;
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** The domain a file belongs to, or null outside a domain's folder. */
function domainOf(file) {
  const rel = relative(domainsDir, file);
  if (rel.startsWith('..')) return null;
  const parts = rel.split(sep);
  return parts.length > 1 ? parts[0] : null;
}

const graph = new Map();
for (const file of files(domainsDir)) {
  const from = domainOf(file);
  if (!from) continue;
  if (!graph.has(from)) graph.set(from, new Map());
  for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2];
    if (!specifier.startsWith('.')) continue;
    const to = domainOf(resolve(dirname(file), specifier));
    if (!to || to === from) continue;
    const edges = graph.get(from);
    if (!edges.has(to)) edges.set(to, relative(domainsDir, file));
  }
}

if (process.argv.includes('--graph')) {
  for (const [from, edges] of [...graph].sort()) {
    console.log(`${from} → ${[...edges.keys()].sort().join(', ') || '(none)'}`);
  }
}

// Depth-first search; a back edge closes a cycle.
const cycles = [];
const state = new Map(); // domain → 'open' | 'done'
function visit(domain, path) {
  state.set(domain, 'open');
  for (const next of (graph.get(domain) ?? new Map()).keys()) {
    if (state.get(next) === 'open') {
      cycles.push([...path.slice(path.indexOf(next)), next]);
    } else if (!state.has(next)) {
      visit(next, [...path, next]);
    }
  }
  state.set(domain, 'done');
}
for (const domain of [...graph.keys()].sort()) if (!state.has(domain)) visit(domain, [domain]);

if (cycles.length > 0) {
  for (const cycle of cycles) {
    const steps = cycle.slice(1).map((to, i) => `${graph.get(cycle[i]).get(to)} → ${to}`);
    console.error(`domain cycle: ${cycle.join(' → ')}\n  ${steps.join('\n  ')}`);
  }
  process.exitCode = 1;
} else {
  console.log(`No cycles between the server's ${graph.size} domains.`);
}
