import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ready } from '@coffer/sdk';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';

// Found by the bad-input campaign (test/fuzz): a NUL in a path parameter was a
// 500 on PostgreSQL (its text type cannot hold U+0000), and a lone surrogate in
// a name was stored as U+FFFD, another name than the one sent.

function assertRefused(res: TestResponse, field: string): void {
  assert.equal(res.statusCode, 400, res.body);
  const body = res.data as { error: { code: string; details: { field: string; issue: string }[] } };
  assert.equal(body.error.code, 'validation_error');
  assert.deepEqual(body.error.details[0], { field, issue: 'invalid' });
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
    assert.match(String(res.headers[name]), /^\d+$/, name);
}

for (const dialect of DIALECTS) {
  describe(`text the database cannot hold as sent (${dialect})`, () => {
    let t: TestApp;
    let user: TestUser;
    let projectId: string;
    const send = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: object) =>
      t.request({ method, url, headers: user.headers, ...(body !== undefined ? { body } : {}) });
    const projectNames = async () =>
      ((await send('GET', '/v1/projects')).data as { data: { name: string }[] }).data
        .map((p) => p.name)
        .sort();

    before(async () => {
      await ready();
      t = await startTestApp(dialect);
      user = await signUp(t);
      const created = await send('POST', '/v1/projects', { name: 'Payments' });
      projectId = (created.data as { data: { id: string } }).data.id;
    });
    after(async () => t.close());

    it('a NUL in a path parameter or the query string is a 400 naming it, not a 500', async () => {
      assertRefused(await send('GET', '/v1/projects/proj%00x'), 'project_id');
      assertRefused(
        await send('GET', `/v1/projects/${projectId}/environments/dev%00/secrets`),
        'env',
      );
      assertRefused(await send('GET', '/v1/projects?sort=name%00'), 'sort');
      // In a query parameter's name, and in one of a repeated parameter's values.
      assertRefused(await send('GET', '/v1/projects?so%00rt=name'), 'query');
      assertRefused(await send('GET', '/v1/projects?sort=name&sort=x%00'), 'sort.1');
    });

    it('a NUL or a lone surrogate in a body string or key is refused and nothing is written', async () => {
      const before = await projectNames();
      assertRefused(await send('POST', '/v1/projects', { name: 'a\u0000b' }), 'name');
      assertRefused(await send('POST', '/v1/projects', { name: 'lone \ud800' }), 'name');
      assertRefused(
        await send('PATCH', `/v1/projects/${projectId}`, { description: 'x\udc00' }),
        'description',
      );
      assertRefused(await send('POST', '/v1/projects', { name: 'k', ['bad\u0000key']: 1 }), 'body');
      // Nested 10,000 levels, the NUL at the bottom (written out: JSON.stringify would recurse).
      const deep = `${'['.repeat(10_000)}"deep\\u0000"${']'.repeat(10_000)}`;
      const res = await t.request({
        method: 'POST',
        url: '/v1/projects',
        headers: { ...user.headers, 'content-type': 'application/json' },
        payload: `{"name":"n","description":${deep}}`,
      });
      assert.equal(res.statusCode, 400, res.body);
      assert.deepEqual(await projectNames(), before);
    });

    it('paired surrogates (emoji) and other Unicode are stored exactly', async () => {
      const name = 'Zahlungen 🙂 — ünïcødé';
      const res = await send('POST', '/v1/projects', { name });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal((res.data as { data: { name: string } }).data.name, name);
      assert.ok((await projectNames()).includes(name));
    });
  });
}
