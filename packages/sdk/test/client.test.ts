import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import {
  CofferApiError,
  CofferClient,
  CofferNetworkError,
  apiPath,
  checkBaseUrl,
  isCofferApiError,
} from '../src/index.js';

// A real, tiny HTTP server whose answers each test scripts: the client under
// test is the real one, talking real HTTP.

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}
type Handler = (req: Seen, res: ServerResponse) => void;

let server: Server;
let baseUrl: string;
let handlers: Handler[] = [];
let seen: Seen[] = [];

const json = (res: ServerResponse, status: number, body: unknown, headers = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

function client(options: Partial<ConstructorParameters<typeof CofferClient>[0]> = {}) {
  const sleeps: number[] = [];
  const c = new CofferClient({
    baseUrl,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...options,
  });
  return { c, sleeps };
}

describe('CofferClient transport', () => {
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const entry = { method: req.method!, url: req.url!, headers: req.headers, body };
        seen.push(entry);
        const handler = handlers.shift();
        if (handler) handler(entry, res);
        else json(res, 500, { error: { code: 'internal_error', message: 'no handler' } });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    handlers = [];
    seen = [];
  });

  it('refuses plain http:// to anything but this machine', () => {
    for (const url of ['http://coffer.example.com', 'http://10.0.0.5:8443', 'ftp://localhost']) {
      assert.throws(() => new CofferClient({ baseUrl: url }), TypeError, url);
    }
    for (const url of [
      'https://coffer.example.com',
      'http://localhost:8443',
      'http://127.0.0.1:1',
      'http://[::1]:8443',
    ]) {
      assert.doesNotThrow(() => checkBaseUrl(url), url);
    }
  });

  it('unwraps { data } and { data, pagination }; 204 is undefined', async () => {
    const { c } = client();
    handlers.push((_q, res) => json(res, 200, { data: { id: 'proj_1' } }));
    handlers.push((_q, res) =>
      json(res, 200, {
        data: [{ id: 'a' }],
        pagination: { page: 2, per_page: 1, total: 3, total_pages: 3 },
      }),
    );
    handlers.push((_q, res) => {
      res.writeHead(204);
      res.end();
    });
    assert.deepEqual(await c.request('GET', '/v1/projects/proj_1'), { id: 'proj_1' });
    assert.deepEqual(
      await c.requestPage('GET', '/v1/things', {
        query: { page: 2, per_page: 1, role: undefined },
      }),
      { data: [{ id: 'a' }], pagination: { page: 2, per_page: 1, total: 3, total_pages: 3 } },
    );
    assert.equal(await c.request('DELETE', '/v1/things/a'), undefined);
    assert.equal(seen[1]!.url, '/v1/things?page=2&per_page=1');
    assert.equal(seen[0]!.headers.accept, 'application/json');
  });

  it('apiPath encodes each interpolated value as one segment', () => {
    assert.equal(
      apiPath`/v1/projects/${'a/b'}/secrets/${'X Y?'}`,
      '/v1/projects/a%2Fb/secrets/X%20Y%3F',
    );
  });

  it('turns a Form A error body into a CofferApiError with code, status, details and request id', async () => {
    const { c } = client();
    handlers.push((_q, res) =>
      json(res, 400, {
        error: {
          code: 'validation_error',
          message: 'email is invalid',
          details: [{ field: 'email', issue: 'invalid' }],
          request_id: 'req_abc',
        },
      }),
    );
    const error = await c.request('POST', '/v1/x', { body: { email: 'nope' } }).then(
      () => assert.fail('should throw'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof CofferApiError);
    assert.ok(isCofferApiError(error, 'validation_error'));
    assert.equal(error.code, 'validation_error');
    assert.equal(error.status, 400);
    assert.equal(error.message, 'email is invalid');
    assert.deepEqual(error.details, [{ field: 'email', issue: 'invalid' }]);
    assert.equal(error.requestId, 'req_abc');
    assert.equal(error.isCode('validation_error'), true);
    assert.equal(error.isCode('not_found'), false);
    assert.equal(seen[0]!.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(seen[0]!.body), { email: 'nope' });
  });

  it('an answer without an API error body is unexpected_response, with the header request id', async () => {
    const { c } = client();
    handlers.push((_q, res) => {
      res.writeHead(502, { 'content-type': 'text/html', 'x-request-id': 'req_proxy' });
      res.end('<html>bad gateway</html>');
    });
    await assert.rejects(c.request('GET', '/v1/x'), (e: unknown) => {
      assert.ok(e instanceof CofferApiError);
      assert.equal(e.code, 'unexpected_response');
      assert.equal(e.status, 502);
      assert.equal(e.requestId, 'req_proxy');
      return true;
    });
  });

  it('retries a 429 after Retry-After, for any method, and returns the eventual answer', async () => {
    const { c, sleeps } = client();
    const limited = (_q: Seen, res: ServerResponse) =>
      json(
        res,
        429,
        { error: { code: 'rate_limited', message: 'slow down' } },
        { 'retry-after': '7' },
      );
    handlers.push(limited, (_q, res) => json(res, 201, { data: { ok: true } }));
    assert.deepEqual(await c.request('POST', '/v1/x', { body: { a: 1 } }), { ok: true });
    assert.deepEqual(sleeps, [7000]);
    assert.equal(seen.length, 2);
    assert.equal(seen[1]!.body, seen[0]!.body, 'the same body is sent again');

    // An HTTP-date Retry-After works too.
    const at = new Date(Date.now() + 3_000).toUTCString();
    handlers.push(
      (_q, res) =>
        json(res, 429, { error: { code: 'rate_limited', message: 'x' } }, { 'retry-after': at }),
      (_q, res) => json(res, 200, { data: 1 }),
    );
    assert.equal(await c.request('GET', '/v1/x'), 1);
    assert.ok(sleeps[1]! > 0 && sleeps[1]! <= 3_000, `waited ${sleeps[1]}`);
  });

  it('gives up after maxAttempts, or when Retry-After exceeds the wait budget, with the 429 error', async () => {
    const limited = (_q: Seen, res: ServerResponse) =>
      json(
        res,
        429,
        { error: { code: 'rate_limited', message: 'slow down', request_id: 'req_1' } },
        { 'retry-after': '2' },
      );
    const bounded = client({ retry: { maxAttempts: 3 } });
    handlers.push(limited, limited, limited, limited);
    await assert.rejects(bounded.c.request('GET', '/v1/x'), (e: unknown) => {
      assert.ok(isCofferApiError(e, 'rate_limited'));
      assert.equal(e.status, 429);
      assert.equal(e.retryAfter, 2);
      return true;
    });
    assert.equal(seen.length, 3);
    assert.deepEqual(bounded.sleeps, [2000, 2000]);

    seen = [];
    handlers = [limited];
    const impatient = client({ retry: { maxTotalWaitMs: 1000 } });
    await assert.rejects(impatient.c.request('GET', '/v1/x'), { code: 'rate_limited' });
    assert.equal(seen.length, 1);
    assert.deepEqual(impatient.sleeps, []);
  });

  it('retries a 503 for idempotent methods and for writes under their idempotency key', async () => {
    const unavailable = (_q: Seen, res: ServerResponse) =>
      json(
        res,
        503,
        { error: { code: 'service_unavailable', message: 'down' } },
        { 'retry-after': '1' },
      );
    const { c, sleeps } = client();
    handlers.push(unavailable, (_q, res) => json(res, 200, { data: 'ok' }));
    assert.equal(await c.request('PUT', '/v1/x', { body: {} }), 'ok');
    handlers.push(unavailable, (_q, res) => json(res, 201, { data: 'once' }));
    assert.equal(await c.request('POST', '/v1/x', { body: {} }), 'once');
    const [first, second] = seen.slice(-2).map((q) => q.headers['idempotency-key']);
    // Its time (hex milliseconds), a dot, 24 random bytes: the server stores it in time order.
    assert.match(String(first), /^[0-9a-f]{12}\.[A-Za-z0-9_-]{32}$/);
    const made = parseInt(String(first).slice(0, 12), 16);
    assert.ok(Math.abs(made - Date.now()) < 60_000, `made at ${made}`);
    assert.equal(second, first, 'the retry carries the same key');
    // Sign-up and log-in carry no credential, so no key: never repeated.
    handlers.push(unavailable, (_q, res) => json(res, 200, { data: 'never' }));
    await assert.rejects(c.request('POST', '/v1/auth/login', { body: {} }), {
      code: 'service_unavailable',
    });
    assert.equal(seen.at(-1)!.headers['idempotency-key'], undefined);
    assert.deepEqual(sleeps, [1000, 1000]);
    handlers = [];
  });

  it('retries 409 request_in_progress under the same key; each write gets a key of its own', async () => {
    const { c, sleeps } = client();
    handlers.push(
      (_q, res) => json(res, 409, { error: { code: 'request_in_progress', message: 'wait' } }),
      (_q, res) => json(res, 201, { data: 'done' }),
      (_q, res) => json(res, 409, { error: { code: 'version_conflict', message: 'stale' } }),
    );
    assert.equal(await c.request('PUT', '/v1/x', { body: {} }), 'done');
    assert.deepEqual(sleeps, [1000]);
    const [a, b] = seen.slice(-2).map((q) => q.headers['idempotency-key']);
    assert.equal(a, b);
    await assert.rejects(c.request('PUT', '/v1/x', { body: {} }), { code: 'version_conflict' });
    assert.notEqual(seen.at(-1)!.headers['idempotency-key'], a, 'a new write, a new key');
    assert.deepEqual(sleeps, [1000], 'another 409 is an answer');
  });

  it('a connection failure is a CofferNetworkError; reads and keyed writes are retried first', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { c, sleeps } = client({ baseUrl: `http://127.0.0.1:${port}` });
    await assert.rejects(
      c.request('GET', '/v1/x'),
      (e: unknown) => e instanceof CofferNetworkError,
    );
    assert.equal(sleeps.length, 2, 'GET is retried');
    sleeps.length = 0;
    await assert.rejects(c.request('POST', '/v1/x', { body: {} }), CofferNetworkError);
    assert.deepEqual(sleeps, [250, 500], 'a write is repeated under its idempotency key');
    sleeps.length = 0;
    await assert.rejects(c.request('POST', '/v1/auth/signup', { body: {} }), CofferNetworkError);
    assert.deepEqual(sleeps, [], 'a request without a key, whose answer may be lost, is not');
  });

  it('keeps the session cookie, sends it back, and adds Origin to unsafe requests', async () => {
    const { c } = client();
    handlers.push((_q, res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'set-cookie':
          'coffer_session=tok123; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=2592000',
      });
      res.end(JSON.stringify({ data: {} }));
    });
    handlers.push((_q, res) => json(res, 200, { data: {} }));
    handlers.push((_q, res) => json(res, 200, { data: {} }));
    handlers.push((_q, res) => {
      res.writeHead(204, { 'set-cookie': 'coffer_session=; HttpOnly; Secure; Path=/; Max-Age=0' });
      res.end();
    });
    await c.request('POST', '/v1/auth/login', { body: {} });
    assert.equal(c.session, 'tok123');
    assert.equal(seen[0]!.headers.cookie, undefined);
    await c.request('GET', '/v1/me');
    assert.equal(seen[1]!.headers.cookie, 'coffer_session=tok123');
    assert.equal(seen[1]!.headers.origin, undefined);
    await c.request('DELETE', '/v1/me/sessions/x');
    assert.equal(seen[2]!.headers.cookie, 'coffer_session=tok123');
    assert.equal(seen[2]!.headers.origin, baseUrl);
    await c.request('POST', '/v1/auth/logout');
    assert.equal(c.session, null, 'a cleared cookie is forgotten');
  });

  it('sends a bearer token, and refuses one with its key part attached', async () => {
    const bearer = `cek_${'A'.repeat(36)}`;
    const { c } = client({ credential: { bearer } });
    handlers.push((_q, res) => json(res, 200, { data: {} }));
    await c.request('POST', '/v1/x', { body: {} });
    assert.equal(seen[0]!.headers.authorization, `Bearer ${bearer}`);
    assert.equal(seen[0]!.headers.cookie, undefined);
    assert.throws(
      () => new CofferClient({ baseUrl, credential: { bearer: `${bearer}.a2V5cGFydA` } }),
      /bearer part/,
    );
  });
});
