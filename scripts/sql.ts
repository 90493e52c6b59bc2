// `npm run sql`: writes the compiled SQL of every security- or concurrency-
// critical statement (who may do what, what a write targets, the locks, the
// re-key's commit) for both dialects to packages/server/sql/, so a review sees
// the SQL the query builders produce. `--check` (in `npm run check`) fails when
// the committed files differ from what the code builds now.
//
//   node --import tsx --conditions=development scripts/sql.ts [--check]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
} from 'kysely';
import {
  findActiveMembership,
  findEnvironmentForWrite,
  findEnvironmentWithMembership,
} from '../packages/server/src/access/access.repo.js';
import {
  inSharedProjectTransaction,
  lockProject,
  type DialectName,
} from '../packages/server/src/db/database.js';
import { revisionBumpStatement } from '../packages/server/src/db/environment-write.js';
import type { Database } from '../packages/server/src/db/schema.js';
import { auditChainStatement } from '../packages/server/src/domains/audit/chain.js';
import {
  findSecretWithMembership,
  findWriteTarget,
} from '../packages/server/src/domains/secrets/secrets.repo.js';
import * as vault from '../packages/server/src/domains/vault/vault.repo.js';

const OUT = new URL('../packages/server/sql/', import.meta.url);

// Fixed, well-formed ids: the statements that write ids into their text show these.
const PROJECT = 'proj_AAAAAAAAAAAAAAAAAAAA';
const ENVIRONMENT = 'env_AAAAAAAAAAAAAAAAAAAA';
const USER = 'usr_AAAAAAAAAAAAAAAAAAAA';
const AUDIT_EVENT = 'evt_AAAAAAAAAAAAAAAAAAAA';

/** A driver that answers every statement with no rows and keeps its SQL text. */
function recordingDialect(dialect: DialectName, log: string[]): Dialect {
  const connection: DatabaseConnection = {
    executeQuery: async (query) => {
      log.push(query.sql);
      return { rows: [] };
    },
    // eslint-disable-next-line require-yield
    streamQuery: async function* () {
      throw new Error('not used');
    },
  };
  const driver: Driver = {
    init: async () => undefined,
    acquireConnection: async () => connection,
    beginTransaction: async () => undefined,
    commitTransaction: async () => undefined,
    rollbackTransaction: async () => undefined,
    releaseConnection: async () => undefined,
    destroy: async () => undefined,
  };
  const sqlite = dialect === 'sqlite';
  return {
    createAdapter: () => (sqlite ? new SqliteAdapter() : new PostgresAdapter()),
    createDriver: () => driver,
    createIntrospector: (db) =>
      sqlite ? new SqliteIntrospector(db) : new PostgresIntrospector(db),
    createQueryCompiler: () => (sqlite ? new SqliteQueryCompiler() : new PostgresQueryCompiler()),
  };
}

interface Statement {
  name: string;
  what: string;
  run: (db: Kysely<Database>, dialect: DialectName) => Promise<unknown>;
  only?: DialectName;
}

const FILES: Record<string, Statement[]> = {
  access: [
    {
      name: 'project-access',
      what: "The caller's ACTIVE membership of a project: every project-scoped rule starts here (access/project-access.ts).",
      run: (db) => findActiveMembership(db, PROJECT, USER),
    },
    {
      name: 'environment-access-by-id',
      what: "An environment named by id, with the caller's active membership joined: the hot path of every secret read (access/environment-access.ts).",
      run: (db) => findEnvironmentWithMembership(db, PROJECT, ENVIRONMENT, USER),
    },
    {
      name: 'environment-access-by-slug',
      what: 'The same, the environment named by slug.',
      run: (db) => findEnvironmentWithMembership(db, PROJECT, 'production', USER),
    },
    {
      name: 'secret-read-target',
      what: 'A secret read: environment, membership and the secret in one query (secrets.service get).',
      run: (db) => findSecretWithMembership(db, PROJECT, ENVIRONMENT, USER, 'DATABASE_URL'),
    },
  ],
  'write-targets': [
    {
      name: 'environment-for-write',
      what: "What a secret write starts from once it holds the project's lock: environment, membership, the key epoch.",
      run: (db) => findEnvironmentForWrite(db, PROJECT, ENVIRONMENT, USER),
    },
    {
      name: 'secret-write-target',
      what: 'A write of one named secret: the same with the secret joined (locked FOR UPDATE on PostgreSQL).',
      run: (db, dialect) =>
        findWriteTarget(db, dialect, PROJECT, ENVIRONMENT, USER, 'DATABASE_URL'),
    },
    {
      name: 'revision-bump',
      what: "Bumps the environment's revision, last in the write (PostgreSQL: sent with the commit).",
      run: async (db) => {
        const { sql } = await import('kysely');
        await sql.raw(revisionBumpStatement(ENVIRONMENT)).execute(db);
      },
    },
    {
      name: 'audit-chain-commit',
      what: "PostgreSQL: places a write's audit events in the project's hash chain, sent with the commit.",
      only: 'postgres',
      run: async (db) => {
        const { sql } = await import('kysely');
        const text = auditChainStatement([{ id: AUDIT_EVENT, project_id: PROJECT } as never]);
        await sql.raw(text).execute(db);
      },
    },
  ],
  locks: [
    {
      name: 'lock-project',
      what: 'Exclusive project lock for read-then-write rules (last admin, vault epoch, re-key): advisory lock and row lock on PostgreSQL; a plain read on SQLite (one writer).',
      run: (db, dialect) => lockProject(db, dialect, PROJECT),
    },
    {
      name: 'shared-project-transaction',
      what: "PostgreSQL secret writers: begin and the project's SHARED lock in one round trip; the commit carries the last statement.",
      only: 'postgres',
      run: (db) =>
        inSharedProjectTransaction(
          db,
          PROJECT,
          async () => undefined,
          () => revisionBumpStatement(ENVIRONMENT),
        ),
    },
  ],
  'rekey-commit': [
    {
      name: 'rekey-version-values',
      what: 'A re-key writes every version again under the new epoch.',
      run: (db, dialect) =>
        vault.updateVersionValues(
          db,
          PROJECT,
          2,
          [{ id: 'ver_AAAAAAAAAAAAAAAAAAAA', value: 'v' }],
          dialect,
        ),
    },
    {
      name: 'rekey-current-values',
      what: "Secrets' current values follow their versions.",
      run: (db) => vault.syncCurrentValues(db, PROJECT),
    },
    {
      name: 'rekey-stale-secrets',
      what: 'Refuses the commit if a secret is left under another epoch.',
      run: (db) => vault.secretsNotAtEpoch(db, PROJECT, 2).catch(() => undefined),
    },
    {
      name: 'rekey-delete-grants',
      what: 'Every grant of the old epoch goes.',
      run: (db) => vault.deleteAllGrants(db, PROJECT),
    },
    {
      name: 'rekey-advance-epoch',
      what: "The project's key epoch moves.",
      run: (db) => vault.advanceEpoch(db, PROJECT, 2),
    },
    {
      name: 'rekey-bump-revisions',
      what: 'Every cached listing of the project is dropped.',
      run: (db) => vault.bumpAllRevisions(db, PROJECT),
    },
  ],
};

/** Breaks a statement before its main clauses (outside quotes) so it reads in a diff. */
function layout(sql: string): string {
  const clause =
    /^ (from|where|inner join|left join|and|or|order by|group by|limit|offset|returning|set|values|on conflict|for update|union all) /i;
  let out = '';
  let quote: string | null = null;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i]!;
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === ' ') {
      const m = clause.exec(sql.slice(i));
      if (m) {
        out += `\n  ${m[1]} `;
        i += m[0].length - 1;
        continue;
      }
    }
    out += c;
  }
  return out;
}

async function build(): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const dialect of ['sqlite', 'postgres'] as const) {
    for (const [file, statements] of Object.entries(FILES)) {
      let text = `-- Generated by \`npm run sql\` (scripts/sql.ts) for ${dialect}: do not edit.\n-- The compiled SQL of the statements that decide access and locking.\n`;
      for (const s of statements) {
        if (s.only && s.only !== dialect) continue;
        const log: string[] = [];
        const db = new Kysely<Database>({ dialect: recordingDialect(dialect, log) });
        await s.run(db, dialect);
        await db.destroy();
        text += `\n-- ${s.name}: ${s.what}\n${log.map((q) => `${layout(q)};`).join('\n')}\n`;
      }
      files.set(`${file}.${dialect}.sql`, text);
    }
  }
  return files;
}

const files = await build();
if (process.argv.includes('--check')) {
  const stale = [...files].filter(([name, text]) => {
    try {
      return readFileSync(new URL(name, OUT), 'utf8') !== text;
    } catch {
      return true;
    }
  });
  if (stale.length) {
    console.error(
      `packages/server/sql/ is out of date (${stale.map(([n]) => n).join(', ')}): run npm run sql and commit the result`,
    );
    process.exitCode = 1;
  }
} else {
  mkdirSync(OUT, { recursive: true });
  for (const [name, text] of files) writeFileSync(new URL(name, OUT), text);
}
