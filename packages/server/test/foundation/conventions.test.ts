import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';

for (const dialect of DIALECTS) {
  describe(`conventions (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(async () => t.close());

    it('healthz and readyz answer in the data envelope without rate-limit headers', async () => {
      for (const url of ['/healthz', '/readyz']) {
        const res = await t.request({ method: 'GET', url });
        assert.equal(res.statusCode, 200);
        assert.deepEqual(res.data, { data: { status: 'ok' } });
        assert.match(String(res.headers['content-type']), /^application\/json/);
        assert.equal(res.headers['x-ratelimit-limit'], undefined);
      }
    });

    it('an unknown route is a 404 in the Form A error body with rate-limit headers', async () => {
      const res = await t.request({ method: 'GET', url: '/v1/nothing-here' });
      assert.equal(res.statusCode, 404);
      const body = res.data as { error: { code: string; message: string; request_id: string } };
      assert.equal(body.error.code, 'not_found');
      assert.equal(typeof body.error.message, 'string');
      assert.equal(body.error.request_id, res.headers['x-request-id']);
      assert.ok(res.headers['x-ratelimit-limit']);
      assert.ok(res.headers['x-ratelimit-remaining']);
      assert.ok(res.headers['x-ratelimit-reset']);
    });

    it('a wrong method on a known path is a 405 with Allow', async () => {
      const res = await t.request({ method: 'DELETE', url: '/healthz' });
      assert.equal(res.statusCode, 405);
      assert.equal((res.data as { error: { code: string } }).error.code, 'method_not_allowed');
      assert.match(String(res.headers.allow), /GET/);
    });

    it('serves the OpenAPI document', async () => {
      const res = await t.request({ method: 'GET', url: '/v1/openapi.json' });
      assert.equal(res.statusCode, 200);
      const doc = res.data as { openapi: string; paths: Record<string, unknown> };
      assert.equal(doc.openapi, '3.0.3');
      assert.ok(doc.paths['/readyz']);
    });
  });
}
