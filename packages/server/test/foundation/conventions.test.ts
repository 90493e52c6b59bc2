import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { Type } from 'typebox';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import type { App } from '../../src/app.js';
import { DataEnvelope, ListEnvelope } from '../../src/http/schemas.js';
import { listQuerySchema, paginationOf } from '../../src/http/pagination.js';

interface ErrorBody {
  error: {
    code: string;
    message: string;
    request_id: string;
    details?: { field: string; issue: string }[];
  };
}

/**
 * Routes declared exactly as a domain declares its own (TypeBox schemas, body
 * `additionalProperties: false`, list query from `listQuerySchema`), registered
 * after the foundation: the conventions must reach routes it never saw.
 */
async function sampleRoutes(v1: App): Promise<void> {
  const Widget = Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 10 }),
      count: Type.Integer({ minimum: 0, maximum: 5 }),
      kind: Type.Optional(Type.Union([Type.Literal('a'), Type.Literal('b')])),
    },
    { additionalProperties: false },
  );
  v1.post(
    '/sample-widgets',
    { schema: { body: Widget, response: { 201: DataEnvelope(Widget) } } },
    async (request, reply) => reply.code(201).send({ data: request.body }),
  );
  const Query = listQuerySchema(['created_at', 'name'], {
    kind: Type.Optional(Type.Union([Type.Literal('a'), Type.Literal('b')])),
  });
  const Echo = Type.Object(
    {
      page: Type.Integer(),
      per_page: Type.Integer(),
      sort: Type.String(),
      order: Type.String(),
      kind: Type.Optional(Type.String()),
    },
    { additionalProperties: false },
  );
  // Echoes the parsed query, so the test sees the types the handler received.
  v1.get(
    '/sample-widgets',
    { schema: { querystring: Query, response: { 200: ListEnvelope(Echo) } } },
    async (request) => {
      const q = request.query as { page: number; per_page: number };
      return { data: [request.query], pagination: paginationOf(q, 1) };
    },
  );
}

function assertErrorBody(res: TestResponse, status: number, code: string): ErrorBody['error'] {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.data as ErrorBody;
  assert.deepEqual(Object.keys(body), ['error']);
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  assert.match(body.error.request_id, /^req_/);
  assert.equal(body.error.request_id, res.headers['x-request-id']);
  return body.error;
}

function assertRateLimitHeaders(res: TestResponse): void {
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    assert.match(String(res.headers[name]), /^\d+$/, `${name} on a ${res.statusCode}`);
  }
}

for (const dialect of DIALECTS) {
  describe(`conventions (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, {
        env: { BODY_LIMIT_BYTES: '2048' },
        routes: sampleRoutes,
      });
    });
    after(async () => t.close());

    it('healthz and readyz answer in the data envelope and are not rate limited', async () => {
      for (const url of ['/healthz', '/readyz']) {
        const res = await t.request({ method: 'GET', url });
        assert.equal(res.statusCode, 200);
        assert.deepEqual(res.data, { data: { status: 'ok' } });
        assert.match(String(res.headers['content-type']), /^application\/json/);
        assert.match(String(res.headers['x-request-id']), /^req_/);
        assert.equal(res.headers['x-ratelimit-limit'], undefined);
      }
    });

    it('a success body is exactly { data }, and a list is exactly { data, pagination }', async () => {
      const created = await t.request({
        method: 'POST',
        url: '/v1/sample-widgets',
        body: { name: 'w', count: 2 },
      });
      assert.equal(created.statusCode, 201);
      assert.deepEqual(created.data, { data: { name: 'w', count: 2 } });
      assertRateLimitHeaders(created);

      const list = await t.request({ method: 'GET', url: '/v1/sample-widgets' });
      assert.equal(list.statusCode, 200);
      assert.deepEqual(Object.keys(list.data as object).sort(), ['data', 'pagination']);
      assert.deepEqual((list.data as { pagination: unknown }).pagination, {
        page: 1,
        per_page: 20,
        total: 1,
        total_pages: 1,
      });
    });

    it('every response carries the request id and the security headers', async () => {
      for (const [method, url] of [
        ['GET', '/healthz'],
        ['GET', '/v1/nowhere'],
        ['GET', '/v1/sample-widgets'],
      ] as const) {
        const res = await t.request({ method, url });
        assert.match(String(res.headers['x-request-id']), /^req_/);
        assert.match(String(res.headers['strict-transport-security']), /max-age=\d+/);
        assert.equal(res.headers['x-content-type-options'], 'nosniff');
        assert.equal(res.headers['x-frame-options'], 'DENY');
        assert.equal(res.headers['cache-control'], 'no-store');
      }
      const a = await t.request({ method: 'GET', url: '/healthz' });
      const b = await t.request({ method: 'GET', url: '/healthz' });
      assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
    });

    it('ignores a request id sent by the client (ids are the server’s own)', async () => {
      const res = await t.request({
        method: 'GET',
        url: '/v1/nowhere',
        headers: { 'x-request-id': 'req_forged' },
      });
      assert.notEqual(res.headers['x-request-id'], 'req_forged');
    });

    it('an unknown route is 404 not_found, also for methods with a body', async () => {
      for (const method of ['GET', 'POST', 'DELETE'] as const) {
        const res = await t.request({
          method,
          url: '/v1/nothing-here?x=1',
          ...(method === 'POST'
            ? { payload: 'not json at all', headers: { 'content-type': 'text/plain' } }
            : {}),
        });
        assertErrorBody(res, 404, 'not_found');
        assertRateLimitHeaders(res);
      }
    });

    it('a wrong method on a known path is 405 method_not_allowed with Allow', async () => {
      const res = await t.request({ method: 'DELETE', url: '/v1/sample-widgets' });
      assertErrorBody(res, 405, 'method_not_allowed');
      assert.deepEqual(String(res.headers.allow).split(', ').sort(), ['GET', 'POST']);
      assertRateLimitHeaders(res);
      // …even when the body it sends would not parse: the route is wrong first.
      const withBody = await t.request({
        method: 'PUT',
        url: '/healthz',
        payload: '{broken',
        headers: { 'content-type': 'application/json' },
      });
      assertErrorBody(withBody, 405, 'method_not_allowed');
      assert.equal(withBody.headers.allow, 'GET');
    });

    it('invalid JSON is 400 validation_error', async () => {
      const res = await t.request({
        method: 'POST',
        url: '/v1/sample-widgets',
        payload: '{"name": "w", count: 2}',
        headers: { 'content-type': 'application/json' },
      });
      const error = assertErrorBody(res, 400, 'validation_error');
      assert.deepEqual(error.details, [{ field: 'body', issue: 'invalid_json' }]);
      // The parser's message quotes the body; the response must not.
      assert.doesNotMatch(res.body, /count: 2/);
      assertRateLimitHeaders(res);
    });

    it('a body that is not JSON is 415 unsupported_media_type', async () => {
      for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'text/html']) {
        const res = await t.request({
          method: 'POST',
          url: '/v1/sample-widgets',
          payload: 'name=w&count=2',
          headers: { 'content-type': contentType },
        });
        assertErrorBody(res, 415, 'unsupported_media_type');
        assertRateLimitHeaders(res);
      }
    });

    it('a body over the limit is 413 payload_too_large, declared or streamed', async () => {
      const big = JSON.stringify({ name: 'w', count: 1, pad: 'x'.repeat(4096) });
      const declared = await t.request({
        method: 'POST',
        url: '/v1/sample-widgets',
        payload: big,
        headers: { 'content-type': 'application/json' },
      });
      assertErrorBody(declared, 413, 'payload_too_large');
      assertRateLimitHeaders(declared);
      // Chunked, without Content-Length: the limit holds while reading.
      const streamed = await t.request({
        method: 'POST',
        url: '/v1/sample-widgets',
        payload: Readable.from([big.slice(0, 1000), big.slice(1000)]),
        headers: { 'content-type': 'application/json' },
      });
      assertErrorBody(streamed, 413, 'payload_too_large');
      assertRateLimitHeaders(streamed);
    });

    it('validation errors list each field with its issue: required, invalid, maximum, unknown', async () => {
      const res = await t.request({
        method: 'POST',
        url: '/v1/sample-widgets',
        body: { count: 9, kind: 'z', colour: 'red' },
      });
      const error = assertErrorBody(res, 400, 'validation_error');
      const byField = Object.fromEntries((error.details ?? []).map((d) => [d.field, d.issue]));
      assert.deepEqual(byField, {
        name: 'required',
        count: 'maximum',
        kind: 'invalid',
        colour: 'unknown',
      });
      assertRateLimitHeaders(res);
    });

    it('a JSON number where a string is expected is invalid, never coerced', async () => {
      for (const body of [
        { name: 123, count: 1 },
        { name: true, count: 1 },
        { name: 'w', count: '2' },
        { name: ['w'], count: 1 },
        { name: null, count: 1 },
      ]) {
        const res = await t.request({ method: 'POST', url: '/v1/sample-widgets', body });
        const error = assertErrorBody(res, 400, 'validation_error');
        assert.equal(error.details?.length, 1, JSON.stringify(body));
        assert.equal(error.details?.[0]?.issue, 'invalid', JSON.stringify(body));
      }
    });

    it('a missing or non-object body is a validation error naming the body', async () => {
      const none = await t.request({ method: 'POST', url: '/v1/sample-widgets' });
      assertErrorBody(none, 400, 'validation_error');
      const array = await t.request({ method: 'POST', url: '/v1/sample-widgets', body: [1] });
      const error = assertErrorBody(array, 400, 'validation_error');
      assert.deepEqual(error.details, [{ field: 'body', issue: 'invalid' }]);
    });

    it('query parameters are converted to their types, with defaults', async () => {
      const res = await t.request({
        method: 'GET',
        url: '/v1/sample-widgets?page=3&per_page=100&sort=name&order=asc&kind=b',
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual((res.data as { data: unknown[] }).data[0], {
        page: 3,
        per_page: 100,
        sort: 'name',
        order: 'asc',
        kind: 'b',
      });
      const defaults = await t.request({ method: 'GET', url: '/v1/sample-widgets' });
      assert.deepEqual((defaults.data as { data: unknown[] }).data[0], {
        page: 1,
        per_page: 20,
        sort: 'created_at',
        order: 'desc',
      });
    });

    it('pagination bounds and bad sort/order are 400 naming the parameter', async () => {
      const cases: [string, string, string][] = [
        ['per_page=101', 'per_page', 'maximum'],
        ['per_page=0', 'per_page', 'minimum'],
        ['page=0', 'page', 'minimum'],
        ['page=-1', 'page', 'minimum'],
        ['page=2.5', 'page', 'invalid'],
        ['page=abc', 'page', 'invalid'],
        ['page=1&page=2', 'page', 'invalid'],
        ['sort=secret_value', 'sort', 'invalid'],
        ['order=sideways', 'order', 'invalid'],
        ['kind=c', 'kind', 'invalid'],
        ['limit=5', 'limit', 'unknown'],
      ];
      for (const [query, field, issue] of cases) {
        const res = await t.request({ method: 'GET', url: `/v1/sample-widgets?${query}` });
        const error = assertErrorBody(res, 400, 'validation_error');
        assert.deepEqual(error.details, [{ field, issue }], query);
        assert.match(error.message, new RegExp(field), query);
      }
    });

    it('a malformed URL is 400 in the same error body, with rate-limit headers', async () => {
      const res = await t.request({ method: 'GET', url: '/v1/projects/%E0%A4%A' });
      assertErrorBody(res, 400, 'validation_error');
      assertRateLimitHeaders(res);
    });

    it('the same conventions on a real route: POST /v1/auth/prelogin', async () => {
      const url = '/v1/auth/prelogin';
      const ok = await t.request({ method: 'POST', url, body: { email: 'a@example.test' } });
      assert.equal(ok.statusCode, 200, ok.body);
      assert.deepEqual(Object.keys(ok.data as object), ['data']);
      const cases: [Record<string, unknown>, string, string][] = [
        [{}, 'email', 'required'],
        [{ email: 123 }, 'email', 'invalid'],
        [{ email: 'a@example.test', admin: true }, 'admin', 'unknown'],
      ];
      for (const [body, field, issue] of cases) {
        const res = await t.request({ method: 'POST', url, body });
        const error = assertErrorBody(res, 400, 'validation_error');
        assert.deepEqual(error.details, [{ field, issue }], JSON.stringify(body));
        assertRateLimitHeaders(res);
      }
      const form = await t.request({
        method: 'POST',
        url,
        payload: 'email=a@example.test',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assertErrorBody(form, 415, 'unsupported_media_type');
      const broken = await t.request({
        method: 'POST',
        url,
        payload: '{"email":',
        headers: { 'content-type': 'application/json' },
      });
      assertErrorBody(broken, 400, 'validation_error');
      const wrongMethod = await t.request({ method: 'GET', url });
      assertErrorBody(wrongMethod, 405, 'method_not_allowed');
      assert.equal(wrongMethod.headers.allow, 'POST');
    });

    it('serves the OpenAPI document and the reference page', async () => {
      const res = await t.request({ method: 'GET', url: '/v1/openapi.json' });
      assert.equal(res.statusCode, 200);
      assert.match((res.data as { openapi: string }).openapi, /^3\./);
      const page = await t.request({ method: 'GET', url: '/docs' });
      assert.equal(page.statusCode, 200);
      assert.match(String(page.headers['content-type']), /^text\/html/);
    });
  });
}
