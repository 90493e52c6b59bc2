import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  CofferClient,
  createProjectWithVault,
  history,
  listSecrets,
  logIn,
  openVault,
  setSecret,
  signUp,
  type SecretScope,
} from '@coffer/sdk';
import { openSqlite } from '../../src/db/sqlite-driver.js';
import { onlyOn } from '../support/db.js';
import { TEST_KDF_COST } from '../support/users.js';
import { ensureCommandBuilt, SERVER_COMMAND } from '../support/command.js';
import { realPostgres, startServerProcess, type ServerProcess } from './server-process.js';

/** Plain HTTP on localhost (the SDK allows it), as behind a TLS-terminating proxy. */
const ENV = {
  TLS: 'off',
  TRUST_PROXY: 'true',
  KDF_MIN_OPS: '1',
  KDF_MIN_MEM_KIB: '8192',
  RATE_LIMIT_SESSION: '1000000',
  RATE_LIMIT_AUTH: '100000',
  LOG_LEVEL: 'warn',
  DASHBOARD: 'off',
};

function command(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const inherited = { ...process.env } as Record<string, string>;
  delete inherited.DATABASE_URL;
  delete inherited.DATA_DIR;
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [SERVER_COMMAND, ...args],
      { env: { ...inherited, ...env } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

const password = 'pw-backup-test';

async function account(server: ServerProcess) {
  const client = new CofferClient({ baseUrl: server.url });
  const email = `backup-${process.pid}-${Date.now()}@example.test`;
  const { keys } = await signUp(client, {
    email,
    name: 'Backup',
    password,
    kdfCost: TEST_KDF_COST,
  });
  const project = await createProjectWithVault(client, keys, { name: 'Backed up' });
  return { client, keys, email, session: client.session!, projectId: project.id };
}

/** Logs in again on a (restored) server and opens the project's vault. */
async function reopen(server: ServerProcess, email: string, projectId: string) {
  const client = new CofferClient({ baseUrl: server.url });
  const { keys } = await logIn(client, {
    email,
    password,
    minimumKdf: { ops_limit: 1, mem_limit_kib: 8192 },
  });
  const vault = await openVault(client, projectId, keys);
  return { client, projectId, keys: vault } satisfies SecretScope;
}

describe('backup and restore (SQLite, real server process)', onlyOn('sqlite'), () => {
  const dirs: string[] = [];
  const tempDir = (name: string) => {
    const dir = mkdtempSync(join(tmpdir(), `coffer-${name}-`));
    dirs.push(dir);
    return dir;
  };
  before(() => ensureCommandBuilt());
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('a backup taken under concurrent writes holds every write acknowledged before it began', async () => {
    const original = tempDir('backup-a');
    const backupDir = tempDir('backup-files');
    const backupFile = join(backupDir, 'coffer-backup.db');
    let server = await startServerProcess({ ...ENV, DATA_DIR: original });
    const owner = await account(server);
    const vault = await openVault(owner.client, owner.projectId, owner.keys);

    // Several clients write at once: new names, and new versions of one name each.
    const acknowledged = new Map<string, string>();
    const versions = new Map<string, string[]>();
    let stop = false;
    const writer = async (w: number) => {
      const client = new CofferClient({
        baseUrl: server.url,
        credential: { session: owner.session },
      });
      const scope = { client, projectId: owner.projectId, keys: vault };
      for (let n = 0; !stop; n++) {
        const env = n % 2 ? 'staging' : 'development';
        await setSecret(scope, env, `W${w}_${n}`, `value ${w}/${n} ✓`);
        acknowledged.set(`${env}/W${w}_${n}`, `value ${w}/${n} ✓`);
        await setSecret(scope, 'development', `HISTORY_${w}`, `version ${n} of ${w}`);
        versions.set(`HISTORY_${w}`, [
          ...(versions.get(`HISTORY_${w}`) ?? []),
          `version ${n} of ${w}`,
        ]);
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    while (acknowledged.size < 20) await new Promise((r) => setTimeout(r, 10));

    // Everything acknowledged by now must be in the backup.
    const before = new Map(acknowledged);
    const beforeVersions = new Map([...versions].map(([k, v]) => [k, [...v]]));
    const result = await command(['backup', backupFile], { DATA_DIR: original });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /backup written to/);
    const writtenDuring = acknowledged.size - before.size;
    // Writes go on after the backup too, then stop.
    const target = acknowledged.size + 8;
    while (acknowledged.size < target) await new Promise((r) => setTimeout(r, 10));
    stop = true;
    await Promise.all(writers);
    assert.ok(writtenDuring >= 0);

    // The file: private, an intact SQLite database on its own (no WAL needed).
    assert.equal(statSync(backupFile).mode & 0o777, 0o600);
    const check = openSqlite(backupFile, { readonly: true });
    try {
      assert.equal(check.prepare('PRAGMA integrity_check').pluck().get(), 'ok');
      assert.equal(check.prepare('PRAGMA journal_mode').pluck().get(), 'delete');
    } finally {
      check.close();
    }

    // Restoring over the running server's database is refused.
    const busy = await command(['restore', backupFile, '--force'], { DATA_DIR: original });
    assert.equal(busy.code, 1);
    assert.match(busy.stderr, /in use/);
    assert.equal(busy.stderr.trim().split('\n').length, 1);

    vault.forget();
    await server.stop();

    // A stopped instance with data: only with --force.
    const refused = await command(['restore', backupFile], { DATA_DIR: original });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /not empty.*--force/);

    // A file that is not a Coffer database is refused before anything is touched.
    const fresh = tempDir('backup-b');
    const notCoffer = join(backupDir, 'other.db');
    const other = openSqlite(notCoffer);
    other.exec('create table t (x)');
    other.close();
    const wrong = await command(['restore', notCoffer], { DATA_DIR: fresh });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /not a Coffer database/);

    const restored = await command(['restore', backupFile], { DATA_DIR: fresh });
    assert.equal(restored.code, 0, restored.stderr);

    server = await startServerProcess({ ...ENV, DATA_DIR: fresh });
    try {
      const scope = await reopen(server, owner.email, owner.projectId);
      const values = {
        development: await listSecrets(scope, 'development'),
        staging: await listSecrets(scope, 'staging'),
      };
      const missing = [...before].filter(([key, value]) => {
        const [env, name] = key.split('/') as ['development' | 'staging', string];
        return values[env][name] !== value;
      });
      assert.deepEqual(missing, [], `${missing.length} of ${before.size} acknowledged writes lost`);
      for (const [name, written] of beforeVersions) {
        const stored = (await history(scope, 'development', name)).map((v) => v.value).reverse();
        assert.deepEqual(stored.slice(0, written.length), written, `history of ${name}`);
      }
      scope.keys.forget();
    } finally {
      await server.stop();
    }
    // The audit log came through whole.
    const verify = await command(['audit', 'verify'], { DATA_DIR: fresh });
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    assert.match(verify.stdout, new RegExp(`OK +${owner.projectId}`));
  });

  it('usage errors exit 2, failures 1', async () => {
    const dir = tempDir('backup-usage');
    assert.equal((await command(['backup'], { DATA_DIR: dir })).code, 2);
    assert.equal((await command(['backup', 'x', '--no-such-setting'], { DATA_DIR: dir })).code, 2);
    const help = await command(['--help'], {});
    assert.equal(help.code, 0);
    assert.match(help.stdout, /backup FILE/);
    const none = await command(['backup', join(dir, 'b.db')], { DATA_DIR: dir });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /^coffer-server: no database at .*\n$/);
    const migrated = await command(['migrate'], { DATA_DIR: dir });
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stdout, /applied \d+ migrations/);
  });
});

describe('PostgreSQL: pg_dump -Fc and pg_restore (real server process)', onlyOn('postgres'), () => {
  it('a restored dump serves every secret back through the SDK', async (t) => {
    const base = realPostgres(t);
    if (!base) return;
    ensureCommandBuilt();
    const suffix = `${process.pid}_${Date.now()}`;
    const source = `coffer_dump_src_${suffix}`;
    const target = `coffer_dump_dst_${suffix}`;
    const urlOf = (name: string) => {
      const url = new URL(base);
      url.pathname = `/${name}`;
      return url.toString();
    };
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    const dir = mkdtempSync(join(tmpdir(), 'coffer-pgdump-'));
    try {
      await admin.query(`create database ${source}`);
      await admin.query(`create database ${target}`);
      let server = await startServerProcess({ ...ENV, DATA_DIR: dir, DATABASE_URL: urlOf(source) });
      const written: Record<string, string> = {};
      let owner: Awaited<ReturnType<typeof account>>;
      try {
        owner = await account(server);
        const vault = await openVault(owner.client, owner.projectId, owner.keys);
        const scope = { client: owner.client, projectId: owner.projectId, keys: vault };
        await Promise.all(
          Array.from({ length: 12 }, async (_, i) => {
            await setSecret(scope, 'production', `SECRET_${i}`, `pg value ${i} 🔑`);
            written[`SECRET_${i}`] = `pg value ${i} 🔑`;
          }),
        );
        vault.forget();
        // The command's own backup refuses PostgreSQL and says what to use.
        const refused = await command(['backup', join(dir, 'x.db')], {
          DATA_DIR: dir,
          DATABASE_URL: urlOf(source),
        });
        assert.equal(refused.code, 1);
        assert.match(refused.stderr, /pg_dump -Fc/);
      } finally {
        await server.stop();
      }
      const dump = join(dir, 'coffer.dump');
      const run = (file: string, args: string[]) =>
        new Promise<void>((resolve, reject) =>
          execFile(file, args, (err, _out, stderr) =>
            err ? reject(new Error(stderr)) : resolve(),
          ),
        );
      await run('pg_dump', ['-Fc', '-f', dump, '--dbname', urlOf(source)]);
      await run('pg_restore', ['--no-owner', '--exit-on-error', '--dbname', urlOf(target), dump]);

      server = await startServerProcess({ ...ENV, DATA_DIR: dir, DATABASE_URL: urlOf(target) });
      try {
        const scope = await reopen(server, owner!.email, owner!.projectId);
        assert.deepEqual(await listSecrets(scope, 'production'), written);
        scope.keys.forget();
      } finally {
        await server.stop();
      }
      const verify = await command(['audit', 'verify'], {
        DATA_DIR: dir,
        DATABASE_URL: urlOf(target),
      });
      assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    } finally {
      for (const name of [source, target])
        await admin.query(`drop database if exists ${name} with (force)`).catch(() => undefined);
      await admin.end();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
