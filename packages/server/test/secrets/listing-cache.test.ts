import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import type { InjectOptions } from 'fastify';
import { buildApp, type App } from '../../src/app.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { ListingCache } from '../../src/domains/secrets/listing-cache.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/db.js';
import type { TestUser } from '../support/users.js';
import { dataOf, eventually, expectStatus } from '../support/http.js';
import { addMember } from '../support/projects.js';
import { projectWithVault, type VaultProject } from '../support/vault.js';
import { putSecret, secretsUrl } from './fixtures.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('ListingCache (unit)', () => {
  const listing = (bytes: number, name = 'X') => ({
    body: Buffer.alloc(bytes, 'a'),
    etag: `"${name}"`,
    names: [name],
  });

  it('evicts the least recently used entries beyond its byte bound', () => {
    const cache = new ListingCache({ maxBytes: 1000 });
    cache.set('a', 'proj_1', 'env_a', listing(400, 'a'));
    cache.set('b', 'proj_1', 'env_b', listing(400, 'b'));
    assert.ok(cache.get('a')); // a is now the most recently used
    cache.set('c', 'proj_1', 'env_c', listing(400, 'c'));
    assert.equal(cache.get('b'), undefined);
    assert.ok(cache.get('a'));
    assert.ok(cache.get('c'));
    assert.deepEqual(cache.stats(), { entries: 2, bytes: 800 });
    // A body larger than the whole bound is never cached.
    cache.set('d', 'proj_1', 'env_d', listing(1001, 'd'));
    assert.equal(cache.get('d'), undefined);
    assert.ok(cache.stats().bytes <= 1000);
  });

  it('drops the entries of an environment or a whole project', () => {
    const cache = new ListingCache();
    cache.set('a1', 'proj_1', 'env_a', listing(10));
    cache.set('a2', 'proj_1', 'env_a', listing(10));
    cache.set('b1', 'proj_1', 'env_b', listing(10));
    cache.set('c1', 'proj_2', 'env_c', listing(10));
    cache.invalidateEnvironments(['env_a']);
    assert.deepEqual(cache.stats('env_a'), { entries: 0, bytes: 0 });
    assert.equal(cache.stats().entries, 2);
    cache.invalidateProject('proj_1');
    assert.equal(cache.get('b1'), undefined);
    assert.ok(cache.get('c1'));
  });

  it('keys differ by revision, variant and page parameters', () => {
    const base = {
      environmentId: 'env_a',
      revision: 1,
      variant: 'values' as const,
      page: 1,
      per_page: 20,
      sort: 'created_at',
      order: 'desc',
    };
    const keys = new Set([
      ListingCache.keyOf(base),
      ListingCache.keyOf({ ...base, revision: 2 }),
      ListingCache.keyOf({ ...base, variant: 'names' }),
      ListingCache.keyOf({ ...base, page: 2 }),
      ListingCache.keyOf({ ...base, per_page: 21 }),
      ListingCache.keyOf({ ...base, sort: 'name' }),
      ListingCache.keyOf({ ...base, order: 'asc' }),
    ]);
    assert.equal(keys.size, 7);
  });
});

for (const dialect of DIALECTS) {
  describe(`secret listing ETag and cache (${dialect})`, () => {
    let t: TestApp;
    let project: VaultProject;
    let dev: TestUser;
    let viewer: TestUser;
    const cache = new ListingCache();

    before(async () => {
      t = await startTestApp(dialect, { deps: { listingCache: cache } });
      project = await projectWithVault(t);
      dev = (await addMember(t, project.admin, project.id, 'developer')).user;
      viewer = (await addMember(t, project.admin, project.id, 'viewer')).user;
      await putSecret(t, project, project.env.staging, 'FIRST', 'one', dev.headers);
    });
    after(async () => t.close());

    const list = (headers: Record<string, string>, extra: Record<string, string> = {}) =>
      t.request({
        method: 'GET',
        url: secretsUrl(project, 'staging', '?sort=name&order=asc'),
        headers: { ...headers, ...extra },
      });

    it('a listing carries a strong ETag; If-None-Match with it is 304 without a body, with rate-limit headers', async () => {
      const first = await list(dev.headers);
      expectStatus(first, 200);
      const etag = String(first.headers.etag);
      assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
      const again = await list(dev.headers);
      assert.equal(again.headers.etag, etag);
      assert.equal(again.body, first.body);

      const notModified = await list(dev.headers, { 'if-none-match': etag });
      assert.equal(notModified.statusCode, 304);
      assert.equal(notModified.body, '');
      // RFC 9110: a 304 has no content; a Content-Length other than the 200's would mislead clients.
      assert.ok(
        notModified.headers['content-length'] === undefined ||
          notModified.headers['content-length'] === '0',
        `content-length ${String(notModified.headers['content-length'])}`,
      );
      assert.equal(notModified.headers.etag, etag);
      for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
        assert.ok(notModified.headers[h], h);
      }
      // A list of tags, and the weak form, match too (RFC 9110 weak comparison).
      const inList = await list(dev.headers, { 'if-none-match': `"other", W/${etag}` });
      assert.equal(inList.statusCode, 304);
      const other = await list(dev.headers, { 'if-none-match': '"something-else"' });
      assert.equal(other.statusCode, 200);
    });

    it('every kind of write changes the ETag, and the old one never gets a 304 again', async () => {
      let etag = String((await list(dev.headers)).headers.etag);
      const env = project.env.staging;
      const writes: Array<[string, () => Promise<unknown>]> = [
        ['create', () => putSecret(t, project, env, 'SECOND', 'two', dev.headers)],
        ['update', () => putSecret(t, project, env, 'SECOND', 'two, again', dev.headers)],
        [
          'rollback',
          () =>
            t.request({
              method: 'POST',
              url: secretsUrl(project, 'staging', '/SECOND/rollback'),
              headers: dev.headers,
              body: { version: 1 },
            }),
        ],
        [
          'batch',
          () =>
            t.request({
              method: 'POST',
              url: secretsUrl(project, 'staging', '/batch'),
              headers: dev.headers,
              body: { delete: ['SECOND'] },
            }),
        ],
        ['re-create', () => putSecret(t, project, env, 'THIRD', '3', dev.headers)],
        [
          'delete',
          () =>
            t.request({
              method: 'DELETE',
              url: secretsUrl(project, 'staging', '/THIRD'),
              headers: dev.headers,
            }),
        ],
      ];
      for (const [what, write] of writes) {
        const before = etag;
        await write();
        const res = await list(dev.headers, { 'if-none-match': before });
        assert.equal(res.statusCode, 200, `${what}: a stale ETag must not get 304`);
        etag = String(res.headers.etag);
        assert.notEqual(etag, before, `${what}: the ETag changed`);
      }
      // The body reflects the last write: THIRD is gone, FIRST remains.
      const names = (dataOf(await list(dev.headers)) as Array<{ name: string }>).map((s) => s.name);
      assert.deepEqual(names, ['FIRST']);
    });

    it('a write in another environment leaves this listing valid (304)', async () => {
      const etag = String((await list(dev.headers)).headers.etag);
      await putSecret(t, project, project.env.production, 'ELSEWHERE', 'x', dev.headers);
      assert.equal((await list(dev.headers, { 'if-none-match': etag })).statusCode, 304);
    });

    it("never serves a reader's body to a viewer, even with the reader's ETag", async () => {
      const readerRes = await list(dev.headers);
      assert.ok((dataOf(readerRes) as Array<{ value?: string }>).every((s) => s.value));
      const viewerRes = await list(viewer.headers, {
        'if-none-match': String(readerRes.headers.etag),
      });
      assert.equal(viewerRes.statusCode, 200);
      assert.notEqual(viewerRes.headers.etag, readerRes.headers.etag);
      assert.ok((dataOf(viewerRes) as Array<object>).every((s) => !('value' in s)));
      assert.doesNotMatch(viewerRes.body, /v1\.xc20p\./);
      // And the other way round: the reader after the viewer still gets values.
      const readerAgain = await list(dev.headers, {
        'if-none-match': String(viewerRes.headers.etag),
      });
      assert.equal(readerAgain.statusCode, 200);
      assert.ok((dataOf(readerAgain) as Array<{ value?: string }>).every((s) => s.value));
    });

    it('deleting the environment drops its cached listings; the listing is then 404', async () => {
      const env = await t.request({
        method: 'POST',
        url: `/v1/projects/${project.id}/environments`,
        headers: dev.headers,
        body: { name: 'Short lived' },
      });
      expectStatus(env, 201);
      const url = secretsUrl(project, 'short-lived');
      expectStatus(await t.request({ method: 'GET', url, headers: dev.headers }), 200);
      assert.equal(cache.stats(dataOf(env).id).entries, 1);
      const deleted = await t.request({
        method: 'DELETE',
        url: `/v1/projects/${project.id}/environments/short-lived`,
        headers: project.admin.headers,
      });
      assert.equal(deleted.statusCode, 204);
      assert.equal(cache.stats(dataOf(env).id).entries, 0);
      const gone = await t.request({ method: 'GET', url, headers: dev.headers });
      assert.equal(gone.statusCode, 404);
    });
  });

  describe(`secret listings across two instances with Redis (${dialect})`, () => {
    let t: TestApp;
    let project: VaultProject;
    let dev: TestUser;
    let cacheA: ListingCache;
    let cacheB: ListingCache;
    let appB: App;
    let dbB: Db;
    let ownDbB = false;
    const redisClients: Redis[] = [];
    // Both instances publish and subscribe on a channel of this test only.
    const channel = `coffer-test:${randomBytes(6).toString('hex')}:listings`;

    before(async () => {
      const redisA = new Redis(REDIS_URL);
      const redisB = new Redis(REDIS_URL);
      redisClients.push(redisA, redisB);
      cacheA = new ListingCache({ redis: redisA, channel });
      cacheB = new ListingCache({ redis: redisB, channel });
      await Promise.all([cacheA.ready(), cacheB.ready()]);
      t = await startTestApp(dialect, { deps: { listingCache: cacheA } });
      // Instance B: its own app and, where the database allows, its own connection.
      if (dialect === 'sqlite') {
        dbB = await openDatabase({ kind: 'sqlite', file: join(t.testDb.dataDir, 'coffer.db') });
        ownDbB = true;
      } else if (t.testDb.databaseUrl) {
        dbB = await openDatabase({ kind: 'postgres', url: t.testDb.databaseUrl });
        ownDbB = true;
      } else {
        dbB = t.testDb.db; // in-process PGlite has a single connection
      }
      appB = await buildApp({ config: t.config, db: dbB, clock: t.clock, listingCache: cacheB });
      await appB.ready();
      project = await projectWithVault(t);
      dev = (await addMember(t, project.admin, project.id, 'developer')).user;
      await putSecret(t, project, project.env.staging, 'SHARED', 'v1', dev.headers);
    });
    after(async () => {
      await appB.close();
      if (ownDbB) await dbB.close();
      await t.close();
      await Promise.all(redisClients.map((r) => r.quit()));
    });

    const listOnB = async (headers: Record<string, string>) => {
      const res = await appB.inject({
        method: 'GET',
        url: secretsUrl(project, 'staging'),
        headers,
      } as InjectOptions);
      return { status: res.statusCode, etag: String(res.headers.etag), body: res.json() };
    };
    const versionsOf = (body: { data: Array<{ name: string; version: number }> }) =>
      body.data.map((s) => `${s.name}@${s.version}`);

    it('a write through A is visible through B at once: no stale 304, no stale body', async () => {
      const first = await listOnB(dev.headers);
      assert.equal(first.status, 200);
      assert.deepEqual(versionsOf(first.body), ['SHARED@1']);
      expectStatus(
        await putSecret(t, project, project.env.staging, 'SHARED', 'v2', dev.headers),
        200,
      );
      // Immediately, without waiting for Redis: B reads the new revision.
      const after = await listOnB({ ...dev.headers, 'if-none-match': first.etag });
      assert.equal(after.status, 200);
      assert.notEqual(after.etag, first.etag);
      assert.deepEqual(versionsOf(after.body), ['SHARED@2']);
    });

    it('invalidations made close together travel in one message', async () => {
      const listener = new Redis(REDIS_URL);
      redisClients.push(listener);
      const messages: Array<{ environments?: string[] }> = [];
      listener.on('message', (_channel: string, raw: string) => messages.push(JSON.parse(raw)));
      await listener.subscribe(channel);
      // The previous test's write may still have its batch in flight: let it land first.
      await new Promise((resolve) => setTimeout(resolve, 100));
      messages.length = 0;
      const { development, staging, production } = project.env;
      cacheA.invalidateEnvironments([development.id]);
      cacheA.invalidateEnvironments([staging.id, development.id]);
      cacheA.invalidateEnvironments([production.id]);
      await eventually(async () => (messages.length > 0 ? true : undefined), 'the invalidation');
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(messages.length, 1);
      assert.deepEqual(
        messages[0]!.environments?.sort(),
        [development.id, production.id, staging.id].sort(),
      );
    });

    it('a write through A makes B drop its cached copies through Redis', async () => {
      await listOnB(dev.headers);
      assert.ok(cacheB.stats(project.env.staging.id).entries > 0);
      expectStatus(
        await putSecret(t, project, project.env.staging, 'SHARED', 'v3', dev.headers),
        200,
      );
      await eventually(
        async () => (cacheB.stats(project.env.staging.id).entries === 0 ? true : undefined),
        'instance B to drop the listing',
      );
      // And a re-key style invalidation of the whole project reaches B too.
      await listOnB(dev.headers);
      assert.ok(cacheB.stats(project.env.staging.id).entries > 0);
      cacheA.invalidateProject(project.id);
      await eventually(
        async () => (cacheB.stats(project.env.staging.id).entries === 0 ? true : undefined),
        'instance B to drop the project',
      );
      const fresh = await listOnB(dev.headers);
      assert.deepEqual(versionsOf(fresh.body), ['SHARED@3']);
    });
  });
}
