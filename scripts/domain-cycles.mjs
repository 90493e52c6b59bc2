// The boundaries between the server's domains (packages/server/src/domains/),
// run by npm run lint:cycles:
//
// 1. No import cycle between the domains' folders. madge finds cycles between
//    files; here members/a.ts → invitations/b.ts and invitations/c.ts →
//    members/d.ts is a cycle although no file is in one. Type-only imports
//    count: a domain that needs another's types depends on it.
// 2. Each domain writes only its own tables (OWNER below): a write
//    (insertInto, updateTable, deleteFrom, replaceInto, mergeInto, or raw SQL
//    `insert into` / `update` / `delete from`) of another domain's table fails,
//    naming file and line, unless the pair is in ALLOWED with its reason
//    (ARCHITECTURE.md, "Who writes which table"). What another domain needs
//    written is a method of the owning service that takes the caller's
//    transaction.
// 3. SQL lives in repos: Kysely's query builders (selectFrom, insertInto,
//    updateTable, deleteFrom, replaceInto, mergeInto), `.transaction()` and
//    raw `sql` (tagged templates and sql.raw/ref/…) appear anywhere under
//    packages/server/src/ only in a `*.repo.ts` file or in one of the
//    exceptions in SQL_ELSEWHERE, each with its reason (ARCHITECTURE.md,
//    "Where SQL is written").
//
//   node scripts/domain-cycles.mjs          # check
//   node scripts/domain-cycles.mjs --graph  # also print each domain's dependencies
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const domainsDir = new URL('../packages/server/src/domains/', import.meta.url).pathname;
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Which domain owns each table (every table of db/schema.ts's Database): only it writes the table. */
const OWNER = {
  users: 'identity',
  sessions: 'identity',
  server_settings: 'identity',
  projects: 'projects',
  members: 'members',
  environments: 'environments',
  secrets: 'secrets',
  secret_versions: 'secrets',
  vault_grants: 'vault',
  api_keys: 'tokens',
  ci_tokens: 'tokens',
  audit_events: 'audit',
  audit_chain_heads: 'audit',
  outbox: 'mail',
  key_pins: 'key-trust',
  membership_statements: 'membership-chain',
  webhooks: 'webhooks',
  webhook_deliveries: 'webhooks',
  webhook_attempts: 'webhooks',
  idempotency_keys: 'idempotency',
  personal_overrides: 'overrides',
};

/** The deliberate exceptions: domain → another domain's table → why it writes it itself. */
const ALLOWED = {
  projects: {
    members:
      "a new project's creator becomes its first admin in the creating transaction; members depends on projects, so the reverse call would be a cycle",
    environments: "a new project's default environments are inserted in the creating transaction",
  },
  secrets: {
    audit_events:
      "a secret write's audit rows go in the write's own statements (one round trip on PostgreSQL), chained by audit/chain.ts",
  },
  vault: {
    projects:
      "the key epoch lives on the project's row: set to 1 by the first grant, advanced by the re-key's commit",
    members: "the re-key's commit re-seals or clears the introduction secrets under the new key",
    environments: "the re-key's commit bumps every environment's revision (the listing cache key)",
    secrets: "the re-key's commit writes each secret's current value under the new key",
    secret_versions: "the re-key's commit writes every version under the new key",
  },
  identity: {
    api_keys:
      "the credential resolver records an API key's last use; tokens depends on identity, so the reverse call would be a cycle",
    ci_tokens: "the credential resolver records a CI token's last use (as for api_keys)",
  },
};

/** Writes whose table is an expression, not a literal: file → expression → the tables it may name. */
const DYNAMIC = {
  'identity/credentials.repo.ts': {
    'TABLE[kind]': ['sessions', 'api_keys', 'ci_tokens'],
  },
  'tokens/tokens.repo.ts': { table: ['api_keys', 'ci_tokens'] },
};

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

// ---- table ownership ------------------------------------------------------

/**
 * The source with its comments blanked (same length, same lines), so that prose
 * such as "update secrets" is not taken for SQL; strings and template
 * literals, where raw SQL lives, stay.
 */
function withoutComments(source) {
  const out = source.split('');
  const blank = (from, to) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  // Open `${` of template literals, each with its depth of plain braces.
  const substitutions = [];
  let inTemplate = false;
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    const next = source[i + 1];
    if (inTemplate) {
      if (c === '\\') {
        i += 2;
        continue;
      }
      if (c === '`') inTemplate = false;
      else if (c === '$' && next === '{') {
        substitutions.push(0);
        inTemplate = false;
        i++;
      }
      i++;
    } else if (c === '/' && (next === '/' || next === '*')) {
      const close = next === '/' ? '\n' : '*/';
      const found = source.indexOf(close, i + 2);
      const end = found === -1 ? source.length : next === '/' ? found : found + 2;
      blank(i, end);
      i = end;
    } else if (c === "'" || c === '"') {
      i++;
      while (i < source.length && source[i] !== c && source[i] !== '\n') {
        i += source[i] === '\\' ? 2 : 1;
      }
      i++;
    } else {
      if (c === '`') inTemplate = true;
      else if (substitutions.length > 0 && c === '{') substitutions[substitutions.length - 1]++;
      else if (substitutions.length > 0 && c === '}') {
        if (substitutions[substitutions.length - 1] === 0) {
          substitutions.pop();
          inTemplate = true;
        } else substitutions[substitutions.length - 1]--;
      }
      i++;
    }
  }
  return out.join('');
}

const KYSELY_WRITE =
  /\.(insertInto|replaceInto|updateTable|deleteFrom|mergeInto)\(\s*([^)]*?)\s*\)/g;
const SQL_WRITE = /\b(?:insert\s+into|update|delete\s+from)\s+([a-z_][a-z0-9_]*)\b/gi;

const schema = readFileSync(
  new URL('../packages/server/src/db/schema.ts', import.meta.url),
  'utf8',
);
const tables = [
  ...(/export interface Database \{([^}]*)\}/.exec(schema)?.[1] ?? '').matchAll(/^\s*(\w+):/gm),
].map((m) => m[1]);
const problems = [];
for (const table of tables)
  if (!OWNER[table]) problems.push(`table ${table} (db/schema.ts) has no owner in OWNER`);
for (const [table, domain] of Object.entries(OWNER)) {
  if (!tables.includes(table))
    problems.push(`OWNER names ${table}, which db/schema.ts does not have`);
  if (!graph.has(domain))
    problems.push(`OWNER gives ${table} to ${domain}, which is no domain folder`);
}

const usedAllowed = new Set();
const usedDynamic = new Set();
for (const file of files(domainsDir)) {
  const domain = domainOf(file);
  if (!domain) continue;
  const rel = relative(domainsDir, file).split(sep).join('/');
  const source = withoutComments(readFileSync(file, 'utf8'));
  const lineOf = (index) => source.slice(0, index).split('\n').length;
  const writes = [];
  for (const m of source.matchAll(KYSELY_WRITE)) {
    const literal = /^(['"`])([a-z_][a-z0-9_]*)(?:\s+as\s+\w+)?\1$/.exec(m[2]);
    if (literal) writes.push({ table: literal[2], index: m.index });
    else if (DYNAMIC[rel]?.[m[2]]) {
      usedDynamic.add(`${rel} ${m[2]}`);
      for (const table of DYNAMIC[rel][m[2]]) writes.push({ table, index: m.index });
    } else {
      problems.push(
        `packages/server/src/domains/${rel}:${lineOf(m.index)}: ${m[1]}(${m[2]}) names its table by an expression; name it, or list the tables it may be in DYNAMIC (scripts/domain-cycles.mjs)`,
      );
    }
  }
  for (const m of source.matchAll(SQL_WRITE)) {
    if (OWNER[m[1]]) writes.push({ table: m[1], index: m.index });
  }
  for (const { table, index } of writes) {
    const owner = OWNER[table];
    const where = `packages/server/src/domains/${rel}:${lineOf(index)}`;
    if (!owner) problems.push(`${where}: writes ${table}, which OWNER does not know`);
    else if (owner === domain) continue;
    else if (ALLOWED[domain]?.[table]) usedAllowed.add(`${domain} ${table}`);
    else {
      problems.push(
        `${where}: ${domain} writes ${table}, a table of ${owner}: move the statement to the ${owner} domain's repo and call it through its service with the caller's transaction (or, if it must stay, allow the pair in ALLOWED with its reason, and in ARCHITECTURE.md)`,
      );
    }
  }
}
for (const [domain, allowed] of Object.entries(ALLOWED)) {
  for (const table of Object.keys(allowed)) {
    if (!usedAllowed.has(`${domain} ${table}`))
      problems.push(
        `ALLOWED: ${domain} no longer writes ${table}; remove the entry (and from ARCHITECTURE.md)`,
      );
  }
}
for (const [rel, expressions] of Object.entries(DYNAMIC)) {
  for (const expression of Object.keys(expressions)) {
    if (!usedDynamic.has(`${rel} ${expression}`))
      problems.push(`DYNAMIC: ${rel} has no write of ${expression}; remove the entry`);
  }
}
if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  process.exitCode = 1;
} else {
  const exceptions = Object.values(ALLOWED).reduce((n, a) => n + Object.keys(a).length, 0);
  console.log(
    `Each domain writes only its own tables (${tables.length} tables; ${exceptions} allowed exceptions).`,
  );
}

// ---- SQL only in repos ----------------------------------------------------

const srcDir = new URL('../packages/server/src/', import.meta.url).pathname;

/**
 * Where SQL may be written outside a `*.repo.ts` file: a path (a folder ends
 * with `/`), what may be written there (`all`, or `transaction` for
 * `.transaction()` alone), and why.
 */
const SQL_ELSEWHERE = [
  {
    path: 'db/',
    what: 'all',
    why: 'the database layer the repos are built on: connections, the project lock, the write runner, prepared queries, list ordering; migrations, frozen in time, import no repo',
  },
  {
    path: '*.service.ts',
    what: 'transaction',
    why: 'a service owns its transactions: the rules and the repo calls it runs inside one commit together',
  },
  {
    path: 'domains/audit/audit.ts',
    what: 'transaction',
    why: 'the read-audit buffer and insertAuditRows outside a transaction write their events in one of their own',
  },
  {
    path: 'domains/members/invitations/invitation-expiry.ts',
    what: 'transaction',
    why: 'the expiry sweep revokes lapsed invitations with their audit events in one transaction',
  },
  {
    path: 'domains/webhooks/delivery-worker.ts',
    what: 'transaction',
    why: "the delivery worker moves a webhook's cursor with its queued deliveries, and records an attempt with its consequence, in one transaction each",
  },
];

const SQL_USE = [
  /\.(selectFrom|insertInto|replaceInto|updateTable|deleteFrom|mergeInto)\s*\(/g,
  /\.(transaction)\s*\(\s*\)/g,
  /\b(sql)\s*(?:<[^>]*>\s*)?`/g,
  /\b(sql\.(?:raw|ref|lit|id|table|join|val))\s*\(/g,
];

function sqlElsewhere(rel, kind) {
  return SQL_ELSEWHERE.find((e) => {
    const matches = e.path.startsWith('*')
      ? rel.endsWith(e.path.slice(1))
      : e.path.endsWith('/')
        ? rel.startsWith(e.path)
        : rel === e.path;
    return matches && (e.what === 'all' || e.what === kind);
  });
}

const sqlProblems = [];
const usedElsewhere = new Set();
for (const file of files(srcDir)) {
  const rel = relative(srcDir, file).split(sep).join('/');
  if (rel.endsWith('.repo.ts')) continue;
  const source = withoutComments(readFileSync(file, 'utf8'));
  for (const pattern of SQL_USE) {
    for (const m of source.matchAll(pattern)) {
      const exception = sqlElsewhere(rel, m[1]);
      if (exception) {
        usedElsewhere.add(exception);
        continue;
      }
      const line = source.slice(0, m.index).split('\n').length;
      sqlProblems.push(
        `packages/server/src/${rel}:${line}: ${m[1]} outside a repo: move the query to the domain's *.repo.ts (or, if it must stay, list the file in SQL_ELSEWHERE with its reason, and in ARCHITECTURE.md)`,
      );
    }
  }
}
for (const exception of SQL_ELSEWHERE) {
  if (!usedElsewhere.has(exception))
    sqlProblems.push(
      `SQL_ELSEWHERE: ${exception.path} writes no SQL (${exception.what}) any more; remove the entry (and from ARCHITECTURE.md)`,
    );
}
if (sqlProblems.length > 0) {
  for (const problem of sqlProblems) console.error(problem);
  process.exitCode = 1;
} else {
  console.log(`SQL is written in repos only (${SQL_ELSEWHERE.length} listed exceptions).`);
}
