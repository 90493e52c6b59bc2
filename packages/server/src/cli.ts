import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Migrator } from 'kysely';
import { ConfigError, loadConfig, type Config } from './config.js';
import { appliedMigrations, openDatabase, targetFromConfig, type Db } from './db/database.js';
import { migrationProvider } from './db/migrations/index.js';
import { OpsError } from './ops/backup.js';

const USAGE = `Usage: coffer-server <command> [settings]

Commands:
  start                   run the server (what node packages/server/dist/main.js does)
  migrate                 bring the database up to this version's schema, then exit
  backup FILE             write an online, consistent copy of the SQLite database to FILE
                          (mode 0600; the server may keep running). PostgreSQL: use pg_dump -Fc
  restore FILE [--force]  restore a backup into DATA_DIR's database; the server must be stopped.
                          Refuses a database that holds data unless --force
  audit verify            check every project's audit hash chain; exit 1 if one is broken
  help, --help            this text

Settings are the server's: environment variables (DATA_DIR, DATABASE_URL, …) or the
same names as flags (--data-dir=./data). Exit codes: 0 done, 1 failed, 2 usage error.
`;

/** A mistake in the command line: usage on stderr, exit code 2. */
class UsageError extends Error {}

interface Parsed {
  positionals: string[];
  settings: string[];
  force: boolean;
  help: boolean;
}

/** Separates positional words and the command's own flags from the server's settings flags. */
function parse(argv: readonly string[]): Parsed {
  const parsed: Parsed = { positionals: [], settings: [], force: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--force') parsed.force = true;
    else if (arg === '--help' || arg === '-h') parsed.help = true;
    else if (arg === '--') {
      parsed.positionals.push(...argv.slice(i + 1));
      break;
    } else if (arg.startsWith('--')) {
      parsed.settings.push(arg);
      // `--port 9443`: the next word is the flag's value (as the server reads it).
      const next = argv[i + 1];
      if (!arg.includes('=') && next !== undefined && !next.startsWith('--')) {
        parsed.settings.push(next);
        i++;
      }
    } else parsed.positionals.push(arg);
  }
  return parsed;
}

function configOf(settings: string[]): Config {
  try {
    return loadConfig(process.env, settings);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(`invalid configuration: ${err.message}`);
    throw err;
  }
}

const out = (line: string) => process.stdout.write(`${line}\n`);

/** The database the settings name; SQLite must already exist unless `create`. */
async function open(config: Config, create = false): Promise<Db> {
  if (!config.databaseUrl && !create) {
    const file = join(config.dataDir, 'coffer.db');
    if (!existsSync(file)) throw new OpsError(`no database at ${file} (check DATA_DIR)`);
  }
  return openDatabase(targetFromConfig(config));
}

async function migrate(config: Config): Promise<void> {
  const db = await open(config, true);
  try {
    const migrator = new Migrator({ db: db.kysely, provider: migrationProvider });
    const { error, results = [] } = await migrator.migrateToLatest();
    const failed = results.find((r) => r.status === 'Error');
    if (error || failed) {
      const cause = error instanceof Error ? error.message : String(error ?? '');
      throw new OpsError(`migration ${failed?.migrationName ?? ''} failed: ${cause}`);
    }
    const applied = results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
    out(
      applied.length === 0
        ? 'coffer-server: the database is up to date'
        : `coffer-server: applied ${applied.length} migration${applied.length === 1 ? '' : 's'}: ${applied.join(', ')}`,
    );
  } finally {
    await db.close();
  }
}

async function backup(config: Config, file: string): Promise<void> {
  if (config.databaseUrl) {
    throw new OpsError(
      'backup copies the SQLite database; for PostgreSQL use pg_dump -Fc (and pg_restore), see docs/operating.md',
    );
  }
  const { backupSqlite } = await import('./ops/backup.js');
  const result = await backupSqlite(join(config.dataDir, 'coffer.db'), file);
  out(`coffer-server: backup written to ${result.file} (${result.bytes} bytes)`);
}

async function restore(config: Config, file: string, force: boolean): Promise<void> {
  if (config.databaseUrl) {
    throw new OpsError(
      'restore replaces the SQLite database; for PostgreSQL use pg_restore on a pg_dump -Fc file, see docs/operating.md',
    );
  }
  const { mkdirSync } = await import('node:fs');
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const { restoreSqlite } = await import('./ops/backup.js');
  const target = join(config.dataDir, 'coffer.db');
  const info = await restoreSqlite(file, target, { force });
  out(
    `coffer-server: restored ${file} into ${target} (schema ${info.migrations.at(-1)}; the server migrates it when it starts)`,
  );
}

async function auditVerify(config: Config): Promise<number> {
  const db = await open(config);
  try {
    const { verifyAuditChains } = await import('./domains/audit/chain.js');
    if (!(await appliedMigrations(db)).includes('2026-12-01-005-audit-chain')) {
      throw new OpsError('the database has no audit chain yet; run coffer-server migrate first');
    }
    const reports = await verifyAuditChains(db.kysely, db.dialect);
    if (reports.length === 0) out('coffer-server: no audit events');
    let broken = 0;
    for (const r of reports) {
      const name = r.projectId ?? '(no project)';
      if (r.broken) {
        broken++;
        const at = r.broken.eventId
          ? `event ${r.broken.eventId}${r.broken.seq !== null ? ` (position ${r.broken.seq})` : ''}`
          : 'the chain head';
        out(`BROKEN ${name}: at ${at}: ${r.broken.reason}`);
      } else {
        out(`OK     ${name}: ${r.events} events, head ${r.head?.slice(0, 16) ?? 'none'}`);
      }
    }
    if (broken > 0) {
      process.stderr.write(
        `coffer-server: ${broken} of ${reports.length} audit chains are broken\n`,
      );
      return 1;
    }
    return 0;
  } finally {
    await db.close();
  }
}

async function run(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    (command === undefined ? process.stderr : process.stdout).write(USAGE);
    return command === undefined ? 2 : 0;
  }
  const args = parse(rest);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const expect = (count: number, what: string) => {
    if (args.positionals.length !== count)
      throw new UsageError(
        args.positionals.length < count
          ? `${command} needs ${what}`
          : `unexpected argument: ${args.positionals[count]}`,
      );
  };
  if (args.force && command !== 'restore') throw new UsageError('--force is only for restore');
  switch (command) {
    case 'start': {
      expect(0, '');
      const config = configOf(args.settings);
      const { runServer } = await import('./start.js');
      await runServer(config);
      return -1; // runs until a signal; the server exits by itself
    }
    case 'migrate':
      expect(0, '');
      await migrate(configOf(args.settings));
      return 0;
    case 'backup':
      expect(1, 'a FILE to write');
      await backup(configOf(args.settings), args.positionals[0]!);
      return 0;
    case 'restore':
      expect(1, 'the backup FILE to restore');
      await restore(configOf(args.settings), args.positionals[0]!, args.force);
      return 0;
    case 'audit':
      if (args.positionals[0] !== 'verify')
        throw new UsageError('usage: coffer-server audit verify');
      expect(1, '');
      return auditVerify(configOf(args.settings));
    default:
      throw new UsageError(`unknown command: ${command}`);
  }
}

run(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`coffer-server: ${err.message} (see coffer-server --help)\n`);
      process.exitCode = 2;
    } else {
      const message = err instanceof Error ? err.message : String(err);
      process.stderr.write(`coffer-server: ${message.split('\n')[0]}\n`);
      process.exitCode = 1;
    }
  },
);
