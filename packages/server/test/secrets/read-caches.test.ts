import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { DIALECTS } from '../support/db.js';
import { eventually } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { projectWithVault, envelope, type VaultProject } from '../support/vault.js';
import { createToken, secretsUrl } from './fixtures.js';
import { serviceMissing, testRedis } from '../foundation/server-process.js';

// Reads of an unchanged environment are answered without the database, on
// every instance, and never with a value older than an acknowledged write.
// Statements are counted by the server itself (`coffer_db_statements_total`
// in /metrics, every statement its database handle executes).

const REDIS_URL = process.env.COFFER_TEST_REDIS_URL || 'redis://127.0.0.1:6379';
const METRICS_TOKEN = randomBytes(16).toString('hex');
const metricsHeaders = { authorization: `Bearer ${METRICS_TOKEN}` };

/** `coffer_db_statements_total` by kind, from an exposition text. */
function statementsIn(text: string): { select: number; other: number } {
  const read = (kind: string) =>
    Number(
      new RegExp(`^coffer_db_statements_total\\{kind="${kind}"\\} (\\d+)`, 'm').exec(text)?.[1],
    );
  return { select: read('select'), other: read('other') };
}

const metricOf = (text: string, line: string) =>
  Number(new RegExp(`^${line.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)`, 'm').exec(text)?.[1]);

for (const dialect of DIALECTS) {
  describe(`read caches: an unchanged environment costs no statement (${dialect})`, () => {
    let t: TestApp;
    let project: VaultProject;
    let redis: Redis | null = null;
    let missing: string | null = null;

    before(async () => {
      const env = {
        METRICS_TOKEN,
        REDIS_KEY_PREFIX: `coffer-test-${randomBytes(6).toString('hex')}:`,
        // The outbox's poll (a select every 5 s) is no read's: hourly here.
        OUTBOX_POLL_MS: '3600000',
      };
      if (dialect === 'postgres') {
        // On PostgreSQL the change tokens live in Redis; without it every read asks the database.
        ({ redis, missing } = await testRedis(REDIS_URL));
        if (missing) return;
        t = await startTestApp(dialect, { env, deps: { redis } });
      } else {
        t = await startTestApp(dialect, { env });
      }
      project = await projectWithVault(t);
    });
    after(async () => {
      await t?.close();
      await redis?.quit();
    });

    const scrape = async () =>
      statementsIn(
        (await t.request({ method: 'GET', url: '/metrics', headers: metricsHeaders })).body,
      );
    /**
     * Statements so far, less those of the scrapes themselves: a scrape counts
     * the outbox (two selects), measured as the difference of two scrapes in a row.
     */
    let scrapes = 0;
    let perScrape: { select: number; other: number } | null = null;
    const statements = async () => {
      if (!perScrape) {
        const a = await scrape();
        const b = await scrape();
        scrapes += 2;
        perScrape = { select: b.select - a.select, other: b.other - a.other };
      }
      const now = await scrape();
      scrapes++;
      return {
        select: now.select - scrapes * perScrape.select,
        other: now.other - scrapes * perScrape.other,
      };
    };
    /**
     * `statements()` once the count holds still: a write wakes work of its
     * own after its answer (the webhook worker looks for new events once the
     * change's notice arrives, through Redis on PostgreSQL), whose selects
     * are no read's and, on a loaded machine, can land among the reads that
     * follow.
     */
    const settledStatements = async () => {
      let last = await statements();
      return eventually(async () => {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const now = await statements();
        const still = now.select === last.select && now.other === last.other;
        last = now;
        return still && now;
      }, 'the statement count to hold still for 100 ms');
    };

    it('list and read: 0 statements warm, the new value at once after a write', async (context) => {
      if (missing) return serviceMissing(context, missing);
      const admin = project.admin.headers;
      const env = project.env.staging;
      const put = (value: string) =>
        t.request({
          method: 'PUT',
          url: secretsUrl(project, env.slug, '/API_URL'),
          headers: admin,
          body: { value: envelope(project, env.id, 'API_URL', value) },
        });
      assert.equal((await put('one')).statusCode, 201);
      const list = () =>
        t.request({ method: 'GET', url: secretsUrl(project, env.slug), headers: admin });
      const read = () =>
        t.request({
          method: 'GET',
          url: secretsUrl(project, env.slug, '/API_URL'),
          headers: admin,
        });
      const valueOf = (res: { data: unknown }) =>
        (res.data as { data: { value: string } }).data.value;

      // Warm: the first of each asks the database.
      assert.equal((await list()).statusCode, 200);
      assert.equal((await read()).statusCode, 200);
      const before = await settledStatements();
      for (let i = 0; i < 25; i++) {
        assert.equal((await list()).statusCode, 200);
        assert.equal((await read()).statusCode, 200);
      }
      const warm = await statements();
      assert.deepEqual(
        { select: warm.select - before.select, other: warm.other - before.other },
        { select: 0, other: 0 },
        '50 reads of an unchanged environment, with a session, ran no statement',
      );

      const written = envelope(project, env.id, 'API_URL', 'two');
      const second = await t.request({
        method: 'PUT',
        url: secretsUrl(project, env.slug, '/API_URL'),
        headers: admin,
        body: { value: written },
      });
      assert.equal(second.statusCode, 200);
      assert.equal(valueOf(await read()), written, 'the read after the write sees it');
      const listed = (await list()).data as { data: { name: string; version: number }[] };
      assert.equal(listed.data.find((s) => s.name === 'API_URL')?.version, 2);
      const afterWrite = await settledStatements();
      assert.ok(afterWrite.select > warm.select, 'the first reads after a write ask the database');
      for (let i = 0; i < 10; i++) assert.equal(valueOf(await read()), written);
      assert.equal((await statements()).select, afterWrite.select, 'and are cached again');
    });

    // A token's reads are audited: the audit buffer writes them in batches (a
    // transaction every 250 ms whatever the rate), so its statements run during
    // the reads; the lookups themselves are counted by the caches instead.
    it('an API key reads the same way: every lookup answered from the caches', async (context) => {
      if (missing) return serviceMissing(context, missing);
      const env = project.env.development;
      const key = await createToken(t, project, 'api_key', { [env.id]: 'read' });
      const admin = project.admin.headers;
      assert.equal(
        (
          await t.request({
            method: 'PUT',
            url: secretsUrl(project, env.slug, '/TOKEN'),
            headers: admin,
            body: { value: envelope(project, env.id, 'TOKEN', 'x') },
          })
        ).statusCode,
        201,
      );
      const list = () =>
        t.request({ method: 'GET', url: secretsUrl(project, env.slug), headers: key.headers });
      assert.equal((await list()).statusCode, 200);
      const scrape = async () =>
        (await t.request({ method: 'GET', url: '/metrics', headers: metricsHeaders })).body;
      const counts = (text: string) => ({
        accessHits: metricOf(text, 'coffer_read_cache_hits_total{cache="access"}'),
        accessMisses: metricOf(text, 'coffer_read_cache_misses_total{cache="access"}'),
        listingMisses: metricOf(text, 'coffer_read_cache_misses_total{cache="listing"}'),
      });
      const before = counts(await scrape());
      for (let i = 0; i < 50; i++) assert.equal((await list()).statusCode, 200);
      const warm = counts(await scrape());
      assert.deepEqual(
        {
          accessHits: warm.accessHits - before.accessHits,
          accessMisses: warm.accessMisses - before.accessMisses,
          listingMisses: warm.listingMisses - before.listingMisses,
        },
        { accessHits: 50, accessMisses: 0, listingMisses: 0 },
      );
    });
  });
}
