// The dashboard's folders (packages/web/src/), run by npm run lint:cycles:
//
// - A feature folder (secrets/, members/, access/, tokens/, …: every folder
//   not named below) holds one feature's page, dialogs and non-UI logic. Its
//   files import their own folder and the shared folders, never another
//   feature's folder: pages never import pages, nor another feature's dialogs
//   or logic. What several features use moves to a shared folder.
// - The shared folders, each importing only the ones after it:
//     app/  the frame: the shell (top bar, sign-in gate, unlock), the project's
//           layout and tabs, and what several features show (re-key dialog,
//           sign-up form)
//     ui/   widgets that know no feature (dialog, field, pagination, …)
//     lib/  no UI: the API client, keys, session, query keys, formats
//   A shared folder never imports a feature folder.
// - The files at the top (main.tsx, router.tsx, sdk.ts) put it together and
//   may import anything.
//
// Every import counts: static, dynamic (`import('…')`), type-only, re-export.
// And every query key comes from lib/queries.ts's factories: elsewhere a
// `queryKey:` is a call of one (`queryKey: secretsKey(projectId, id)`), never an
// array written in place. A breach fails, naming file, line and the rule.
//
//   node scripts/dashboard-features.mjs
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const src = new URL('../packages/web/src/', import.meta.url).pathname;
/** The shared folders, each allowed to import the ones after it. */
const SHARED = ['app', 'ui', 'lib'];
/**
 * The deliberate exceptions: file → file it imports → why. The shell and the
 * unlock screen are the frame around every page, and staged changes are kept
 * across all of it: leaving the project or signing out with changes staged
 * asks first, and the unlock screen says what sealed changes it will restore.
 */
const ALLOWED = {
  'app/Shell.tsx': {
    'secrets/UnsavedChangesGuard.tsx':
      'the beforeunload guard and the sign-out question while changes are staged, on every page',
  },
  'app/Unlock.tsx': {
    'secrets/store.ts': 'how many staged changes are sealed until the unlock (and dropping them)',
    'secrets/unsaved.ts': 'the words for them ("3 unsaved changes")',
  },
};
const QUERY_KEY = /\bqueryKey:(?!\s*[A-Za-z]+Key\()/g;
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (/\.tsx?$/.test(name)) files.push(path);
  }
})(src);

/** The top folder of a file under src/ ('' for the files at the top). */
const folderOf = (path) => {
  const parts = relative(src, path).split(sep);
  return parts.length > 1 ? parts[0] : '';
};

const breaches = [];
for (const file of files) {
  const from = folderOf(file);
  const text = readFileSync(file, 'utf8');
  if (relative(src, file) !== join('lib', 'queries.ts'))
    for (const match of text.matchAll(QUERY_KEY)) {
      const line = text.slice(0, match.index).split('\n').length;
      breaches.push(
        `packages/web/src/${relative(src, file)}:${line}: a query key written in place (use a factory of lib/queries.ts)`,
      );
    }
  if (from === '') continue;
  const allowed = ALLOWED[relative(src, file)] ?? {};
  for (const match of text.matchAll(IMPORT)) {
    const target = resolve(dirname(file), match[1]);
    const to = folderOf(target);
    if (to === from) continue;
    if (Object.keys(allowed).some((path) => join(src, path).startsWith(`${target}.`))) continue;
    const line = text.slice(0, match.index).split('\n').length;
    const where = `packages/web/src/${relative(src, file)}:${line} imports '${match[1]}'`;
    if (to === '') breaches.push(`${where}: only main.tsx imports the files at the top`);
    else if (!SHARED.includes(from) && !SHARED.includes(to))
      breaches.push(
        `${where}: the ${from} feature imports the ${to} feature (move what both use to app/, ui/ or lib/)`,
      );
    else if (SHARED.includes(from) && !SHARED.includes(to))
      breaches.push(`${where}: the shared folder ${from}/ imports the ${to} feature`);
    else if (SHARED.includes(from) && SHARED.indexOf(to) < SHARED.indexOf(from))
      breaches.push(`${where}: ${from}/ imports ${to}/ (${SHARED.join(' → ')}: only rightwards)`);
  }
}

if (breaches.length > 0) {
  console.error(`Dashboard folders: ${breaches.length} breach(es):\n  ${breaches.join('\n  ')}`);
  process.exit(1);
}
console.log(
  `Dashboard folders: ${files.length} files, no feature imports another, every query key from lib/queries.ts.`,
);
