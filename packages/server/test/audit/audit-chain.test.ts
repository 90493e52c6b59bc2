import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Migrator } from 'kysely';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { verifyAuditChains, type ChainReport } from '../../src/domains/audit/chain.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/db.js';
import { ensureCommandBuilt, SERVER_COMMAND } from '../support/command.js';
import { projectWithVault, type VaultProject } from '../support/vault.js';
import { createToken, putSecret, secretsUrl } from '../secrets/fixtures.js';

/** Runs `coffer-server audit verify` against the test's database, as an operator would. */
function verifyCommand(t: TestApp): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: Record<string, string> = { ...process.env, DATA_DIR: t.testDb.dataDir } as Record<
    string,
    string
  >;
  delete env.DATABASE_URL;
  if (t.testDb.databaseUrl) env.DATABASE_URL = t.testDb.databaseUrl;
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [SERVER_COMMAND, 'audit', 'verify'],
      { env },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

for (const dialect of DIALECTS) {
  describe(`audit hash chain (${dialect})`, () => {
    let t: TestApp;
    let project: VaultProject;
    const db = () => t.testDb.db.kysely;
    const chainOf = (reports: ChainReport[]) => reports.find((r) => r.projectId === project.id)!;
    const events = () =>
      db()
        .selectFrom('audit_events')
        .selectAll()
        .where('project_id', '=', project.id)
        .orderBy('chain_seq')
        .execute();

    before(async () => {
      ensureCommandBuilt();
      t = await startTestApp(dialect);
      project = await projectWithVault(t);
      // Writers of one project at once, in two environments, and token reads that
      // are buffered and written in batches: the chain must come out whole.
      const token = await createToken(t, project, 'api_key', {
        [project.env.development.id]: 'read_write',
        [project.env.staging.id]: 'read_write',
      });
      const writes = Array.from({ length: 24 }, (_, i) => {
        const env = i % 2 ? project.env.staging : project.env.development;
        return putSecret(t, project, env, `NAME_${i % 6}`, `value ${i}`, project.admin.headers);
      });
      const reads = Array.from({ length: 10 }, (_, i) =>
        t.request({
          method: 'GET',
          url: secretsUrl(project, 'development', `?page=1&per_page=${i + 1}`),
          headers: token.headers,
        }),
      );
      const answers = await Promise.all([...writes, ...reads]);
      for (const res of answers) assert.ok(res.statusCode < 300, res.body);
      // Closing flushes the buffered reads; verification reads the database directly.
      await t.app.close();
    });
    after(async () => t.testDb.cleanup());

    it('verifies a clean log, concurrent writes and buffered reads included', async () => {
      const reports = await verifyAuditChains(db(), dialect);
      for (const report of reports) assert.equal(report.broken, undefined, JSON.stringify(report));
      const chain = chainOf(reports);
      const rows = await events();
      assert.equal(chain.events, rows.length);
      assert.ok(
        rows.some((r) => r.action === 'secrets.listed'),
        'buffered reads are chained',
      );
      assert.ok(rows.filter((r) => r.action.startsWith('secret.')).length >= 24);
      assert.deepEqual(
        rows.map((r) => r.chain_seq),
        rows.map((_, i) => i + 1),
      );
      const cli = await verifyCommand(t);
      assert.equal(cli.code, 0, cli.stdout + cli.stderr);
      assert.match(cli.stdout, new RegExp(`^OK +${project.id}: ${rows.length} events`, 'm'));
    });

    it('detects and names an edited event', async () => {
      const rows = await events();
      const victim = rows[5]!;
      await db()
        .updateTable('audit_events')
        .set({ data: victim.data.replace('}', ',"sneaky":true}') })
        .where('id', '=', victim.id)
        .execute();
      try {
        const broken = chainOf(await verifyAuditChains(db(), dialect)).broken;
        assert.equal(broken?.eventId, victim.id);
        assert.match(broken!.reason, /^edited/);
        const cli = await verifyCommand(t);
        assert.equal(cli.code, 1);
        assert.match(cli.stdout, new RegExp(`BROKEN ${project.id}: at event ${victim.id}.*edited`));
      } finally {
        await db()
          .updateTable('audit_events')
          .set({ data: victim.data })
          .where('id', '=', victim.id)
          .execute();
      }
      assert.equal(chainOf(await verifyAuditChains(db(), dialect)).broken, undefined);
    });

    it('detects a deleted event, in the middle and at the end', async () => {
      const rows = await events();
      for (const index of [7, rows.length - 1]) {
        const victim = rows[index]!;
        await db().deleteFrom('audit_events').where('id', '=', victim.id).execute();
        try {
          const broken = chainOf(await verifyAuditChains(db(), dialect)).broken;
          assert.ok(broken, `deleting event ${index} goes unnoticed`);
          assert.match(broken.reason, /^missing/);
          // In the middle, the event after the gap is named; at the end, the head.
          assert.equal(broken.eventId, index === 7 ? rows[8]!.id : null);
        } finally {
          await db().insertInto('audit_events').values(victim).execute();
        }
      }
      assert.equal(chainOf(await verifyAuditChains(db(), dialect)).broken, undefined);
    });

    it('detects reordered events', async () => {
      const rows = await events();
      const [a, b] = [rows[3]!, rows[4]!];
      const swap = async (x: typeof a, seq: number) =>
        db().updateTable('audit_events').set({ chain_seq: seq }).where('id', '=', x.id).execute();
      await swap(a, b.chain_seq!);
      await swap(b, a.chain_seq!);
      try {
        const broken = chainOf(await verifyAuditChains(db(), dialect)).broken;
        assert.equal(broken?.eventId, b.id);
        assert.match(broken!.reason, /^out of order/);
      } finally {
        await swap(a, a.chain_seq!);
        await swap(b, b.chain_seq!);
      }
      // Swapping timestamps instead changes what was hashed: an edit.
      await db()
        .updateTable('audit_events')
        .set({ created_at: b.created_at })
        .where('id', '=', a.id)
        .execute();
      await db()
        .updateTable('audit_events')
        .set({ created_at: a.created_at })
        .where('id', '=', b.id)
        .execute();
      try {
        if (a.created_at !== b.created_at) {
          const broken = chainOf(await verifyAuditChains(db(), dialect)).broken;
          assert.equal(broken?.eventId, a.id);
        }
      } finally {
        await db()
          .updateTable('audit_events')
          .set({ created_at: a.created_at })
          .where('id', '=', a.id)
          .execute();
        await db()
          .updateTable('audit_events')
          .set({ created_at: b.created_at })
          .where('id', '=', b.id)
          .execute();
      }
      assert.equal(chainOf(await verifyAuditChains(db(), dialect)).broken, undefined);
    });
  });
}

describe('audit hash chain: events written before the migration', () => {
  it('start the chain, in the order they were written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coffer-chain-migration-'));
    const db = await openDatabase({ kind: 'sqlite', file: join(dir, 'coffer.db') });
    try {
      const migrator = new Migrator({ db: db.kysely, provider: migrationProvider });
      const { error } = await migrator.migrateTo('2026-11-22-004-token-signing-keys');
      assert.equal(error, undefined);
      const old = (i: number, project: string | null) => ({
        id: `evt_old${String(i).padStart(17, '0')}`,
        project_id: project,
        action: 'project.updated',
        actor_id: 'usr_x',
        credential_kind: 'session',
        credential_id: 'ses_x',
        ip: '127.0.0.1',
        request_id: `req_${i}`,
        target_type: null,
        target_id: null,
        data: JSON.stringify({ i }),
        created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, 10 - i)).toISOString(),
      });
      await db.kysely
        .insertInto('audit_events')
        .values([0, 1, 2, 3].map((i) => old(i, i === 3 ? null : 'proj_old')))
        .execute();
      await migrateToLatest(db);
      const reports = await verifyAuditChains(db.kysely, 'sqlite');
      assert.deepEqual(
        reports.map((r) => [r.projectId, r.events, r.broken]),
        [
          [null, 1, undefined],
          ['proj_old', 3, undefined],
        ],
      );
      const order = await db.kysely
        .selectFrom('audit_events')
        .select(['id', 'chain_seq'])
        .where('project_id', '=', 'proj_old')
        .orderBy('chain_seq')
        .execute();
      // Oldest first: event 2 was written first (10 - i seconds).
      assert.deepEqual(
        order.map((r) => r.id),
        [2, 1, 0].map((i) => old(i, null).id),
      );
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('audit hash chain: a project with no events at all', () => {
  it('is not listed; the command says there is nothing to verify', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coffer-chain-empty-'));
    const db = await openDatabase({ kind: 'sqlite', file: join(dir, 'coffer.db') });
    try {
      await migrateToLatest(db);
      assert.deepEqual(await verifyAuditChains(db.kysely, 'sqlite'), []);
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
