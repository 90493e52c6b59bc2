import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateBearer, ready } from '@coffer/sdk';
import { CREDENTIAL_CACHE_TTL_MS, hashToken } from '../../src/domains/identity/credentials.js';
import { newId } from '../../src/ids.js';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';
import { insertApiKey, insertProject } from './fixtures.js';

const errorOf = (res: TestResponse) => (res.data as { error: { code: string } }).error;

// API keys and CI tokens are created by the projects domain's routes; these
// tests write the rows directly so they exercise only the resolver: its
// cache, expiry and last-used bookkeeping.

for (const dialect of DIALECTS) {
  describe(`identity: credential resolution (${dialect})`, () => {
    let t: TestApp;
    let owner: TestUser;
    let projectId: string;
    before(async () => {
      await ready();
      t = await startTestApp(dialect);
      owner = await signUp(t);
      projectId = await insertProject(t, owner.id);
    });
    after(async () => t.close());

    const apiKey = (expiresInMs: number | null = null) =>
      insertApiKey(t, projectId, owner.id, expiresInMs);

    /** `/v1/me` is session-only: a 403 proves the bearer authenticated, a 401 that it did not. */
    const call = (bearer: string) =>
      t.request({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${bearer}` } });

    it('records last_used_at on first use and then at most once a minute', async () => {
      const key = await apiKey();
      const lastUsed = async () =>
        (
          await t.testDb.db.kysely
            .selectFrom('api_keys')
            .select('last_used_at')
            .where('id', '=', key.id)
            .executeTakeFirstOrThrow()
        ).last_used_at;
      assert.equal((await call(key.bearer)).statusCode, 403);
      const first = await lastUsed();
      assert.equal(first, t.clock.now().toISOString());
      t.clock.advance(59_000);
      await call(key.bearer);
      assert.equal(await lastUsed(), first);
      t.clock.advance(1_000);
      await call(key.bearer);
      assert.equal(await lastUsed(), t.clock.now().toISOString());
    });

    it('an API key past its expiry is a 401 token_expired, even while cached', async () => {
      const key = await apiKey(2_000);
      assert.equal((await call(key.bearer)).statusCode, 403);
      t.clock.advance(2_000);
      const res = await call(key.bearer);
      assert.equal(res.statusCode, 401);
      assert.equal(errorOf(res).code, 'token_expired');
    });

    it('a CI token past its lifetime is a 401 token_expired', async () => {
      const bearer = generateBearer('ci_');
      const now = t.clock.now();
      await t.testDb.db.kysely
        .insertInto('ci_tokens')
        .values({
          id: newId('ciToken'),
          project_id: projectId,
          name: 'ci',
          token_hash: hashToken(bearer),
          scopes: '{}',
          public_key: 'unused',
          created_by: owner.id,
          created_by_api_key: null,
          created_at: now.toISOString(),
          expires_at: new Date(now.getTime() + 60 * 60 * 1000).toISOString(),
          last_used_at: null,
          revoked_at: null,
        })
        .execute();
      assert.equal((await call(bearer)).statusCode, 403);
      t.clock.advance(60 * 60 * 1000);
      const res = await call(bearer);
      assert.equal(res.statusCode, 401);
      assert.equal(errorOf(res).code, 'token_expired');
    });

    it('a revocation takes effect at once with forgetCredential, and within the TTL without it', async () => {
      const here = await apiKey();
      const elsewhere = await apiKey();
      assert.equal((await call(here.bearer)).statusCode, 403);
      assert.equal((await call(elsewhere.bearer)).statusCode, 403);
      const revokedAt = t.clock.now().toISOString();
      await t.testDb.db.kysely
        .updateTable('api_keys')
        .set({ revoked_at: revokedAt })
        .where('id', 'in', [here.id, elsewhere.id])
        .execute();
      // The revoking service on this instance forgets the credential...
      t.app.credentials.forgetCredential(here.id);
      assert.equal((await call(here.bearer)).statusCode, 401);
      // ...another instance (not told) stops accepting it once its cache entry is older than the TTL.
      t.clock.advance(CREDENTIAL_CACHE_TTL_MS);
      const res = await call(elsewhere.bearer);
      assert.equal(res.statusCode, 401);
      assert.equal(errorOf(res).code, 'unauthenticated');
    });

    if (dialect === 'sqlite') {
      it('resolving a credential does not wait for a write in progress (SQLite reads it on the reader)', async () => {
        const key = await apiKey();
        assert.equal((await call(key.bearer)).statusCode, 403);
        // The cached entry is stale, so the next request looks the key up again
        // (its last use is recent, so nothing is written).
        t.clock.advance(CREDENTIAL_CACHE_TTL_MS);
        let released = false;
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        const writing = t.testDb.db.kysely.transaction().execute(async (trx) => {
          await trx
            .updateTable('api_keys')
            .set({ name: 'renamed while a request resolves' })
            .where('id', '=', key.id)
            .execute();
          await held;
        });
        // Should the lookup queue behind the write, the write ends after 3 s and the assertion fails.
        const timer = setTimeout(() => {
          released = true;
          release();
        }, 3_000);
        try {
          const res = await call(key.bearer);
          assert.equal(released, false, 'the lookup waited for the write transaction');
          assert.equal(res.statusCode, 403);
        } finally {
          clearTimeout(timer);
          release();
          await writing;
        }
      });
    }

    it('an unknown bearer or session cookie is a 401 unauthenticated', async () => {
      for (const headers of [
        { authorization: `Bearer ${generateBearer('cek_')}` },
        { authorization: `Bearer ${generateBearer('ci_')}` },
        { authorization: 'Bearer something-else' },
        { cookie: 'coffer_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
      ]) {
        const res = await t.request({ method: 'GET', url: '/v1/me', headers });
        assert.equal(res.statusCode, 401, JSON.stringify(headers));
        assert.equal(errorOf(res).code, 'unauthenticated');
      }
    });
  });
}
