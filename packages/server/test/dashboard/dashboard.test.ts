import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { ready } from '@coffer/sdk';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { signUp } from '../support/users.js';
import { LogCapture } from '../foundation/log-capture.js';

const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const API_CSP = "default-src 'none'; frame-ancestors 'none'";
const INDEX =
  '<!doctype html><title>Coffer</title><script type="module" src="/assets/app-abc123.js"></script>\n';
const SCRIPT = `console.log(${JSON.stringify('coffer dashboard '.repeat(40))});\n`;
const SENTINEL = 'OUTSIDE-THE-DASHBOARD-SENTINEL';
const dialect = DIALECTS[0] ?? 'sqlite';

/**
 * A built dashboard as the build leaves it (index.html, a hashed script and
 * its `.gz`), next to a file that must never be served: `secret.txt` in the
 * parent directory, also reachable through a symbolic link inside `assets/`.
 */
function fixture(): { parent: string; dir: string } {
  const parent = mkdtempSync(join(tmpdir(), 'coffer-dashboard-'));
  const dir = join(parent, 'dist');
  mkdirSync(join(dir, 'assets'), { recursive: true });
  writeFileSync(join(dir, 'index.html'), INDEX);
  writeFileSync(join(dir, 'assets/app-abc123.js'), SCRIPT);
  writeFileSync(join(dir, 'assets/app-abc123.js.gz'), gzipSync(SCRIPT, { level: 9 }));
  writeFileSync(join(dir, 'assets/style-def456.css'), 'body { color: black }\n');
  writeFileSync(join(dir, 'robots.txt'), 'User-agent: *\n');
  writeFileSync(join(parent, 'secret.txt'), SENTINEL);
  symlinkSync(join(parent, 'secret.txt'), join(dir, 'assets/leak.js'));
  return { parent, dir };
}

function assertFormA(res: TestResponse, status: number, code: string): void {
  assert.equal(res.statusCode, status, `${res.statusCode} ${res.body.slice(0, 200)}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.data as { error: { code: string; message: string; request_id: string } };
  assert.deepEqual(Object.keys(body), ['error']);
  assert.equal(body.error.code, code);
  assert.ok(body.error.message.length > 0);
  assert.equal(body.error.request_id, res.headers['x-request-id']);
  assert.ok(!res.body.includes(SENTINEL));
}

function assertIndex(res: TestResponse): void {
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(res.body, INDEX);
  assert.equal(res.headers['cache-control'], 'no-store');
  assertAppHeaders(res);
}

function assertAppHeaders(res: TestResponse): void {
  assert.equal(res.headers['content-security-policy'], DASHBOARD_CSP);
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['x-frame-options'], 'DENY');
  assert.equal(res.headers['referrer-policy'], 'no-referrer');
  assert.match(String(res.headers['strict-transport-security']), /^max-age=\d+/);
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
    assert.equal(res.headers[name], undefined, `no ${name} on a dashboard file`);
}

describe('the web dashboard on the API origin', () => {
  const { parent, dir } = fixture();
  const logs = new LogCapture();
  let t: TestApp;
  before(async () => {
    await ready();
    t = await startTestApp(dialect, {
      env: { DASHBOARD_DIR: dir },
      deps: { logger: logs.options() },
    });
  });
  after(async () => {
    await t.close();
    rmSync(parent, { recursive: true, force: true });
  });

  it('answers / and client-side routes with index.html, the dashboard CSP and no-store', async () => {
    for (const url of [
      '/',
      '/projects/proj_x/secrets',
      '/projects/proj_x/environments/env_y?tab=history',
      '/invite?token=abc',
      '/settings/',
    ]) {
      assertIndex(await t.request({ method: 'GET', url }));
    }
  });

  it('serves a built asset with its type, cached for good', async () => {
    const res = await t.request({ method: 'GET', url: '/assets/app-abc123.js' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(res.headers['content-encoding'], undefined);
    assert.equal(res.headers.vary, 'Accept-Encoding');
    assert.equal(res.body, SCRIPT);
    assertAppHeaders(res);

    const css = await t.request({ method: 'GET', url: '/assets/style-def456.css' });
    assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
    assert.equal(css.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(css.headers.vary, undefined, 'no gzip variant, nothing varies');

    // Outside /assets/ a file is not content-addressed: never cached.
    const robots = await t.request({ method: 'GET', url: '/robots.txt' });
    assert.equal(robots.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(robots.headers['cache-control'], 'no-store');
  });

  it('sends the precompressed asset to clients that accept gzip, and only to them', async () => {
    for (const accept of ['gzip', 'gzip, deflate, br', 'br;q=1.0, gzip;q=0.8', '*']) {
      const res = await t.request({
        method: 'GET',
        url: '/assets/app-abc123.js',
        headers: { 'accept-encoding': accept },
      });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['content-encoding'], 'gzip', accept);
      assert.equal(res.headers.vary, 'Accept-Encoding');
      assert.equal(res.headers['content-type'], 'text/javascript; charset=utf-8');
      assert.equal(gunzipSync(res.rawPayload).toString('utf8'), SCRIPT);
    }
    for (const accept of ['identity', 'gzip;q=0', 'br', '*;q=0']) {
      const res = await t.request({
        method: 'GET',
        url: '/assets/app-abc123.js',
        headers: { 'accept-encoding': accept },
      });
      assert.equal(res.headers['content-encoding'], undefined, accept);
      assert.equal(res.body, SCRIPT);
    }
  });

  it('a missing asset is a JSON 404, never index.html', async () => {
    for (const url of ['/assets/app-000000.js', '/assets/missing.css', '/assets/', '/assets/x/']) {
      const res = await t.request({ method: 'GET', url });
      assertFormA(res, 404, 'not_found');
      assert.ok(!res.body.includes('<!doctype'));
    }
  });

  it('never reads outside DASHBOARD_DIR', async () => {
    for (const url of [
      '/..%2fsecret.txt',
      '/..%2f..%2fetc/passwd',
      '/assets/..%2f..%2fsecret.txt',
      '/assets/%2e%2e%2f%2e%2e%2fsecret.txt',
      '/..%5csecret.txt',
      '/assets%5c..%5c..%5csecret.txt',
      '/assets/app-abc123.js%00.png',
      '/%00',
      // A symbolic link inside the directory that points out of it.
      '/assets/leak.js',
    ]) {
      const res = await t.request({ method: 'GET', url });
      assertFormA(res, 404, 'not_found');
    }
  });

  it('never reads outside DASHBOARD_DIR when the path arrives unnormalised on the wire', async () => {
    // `inject` resolves dot segments (also `%2e%2e`) itself; a raw request keeps them.
    const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = new URL(address);
    for (const path of [
      '/assets/../../secret.txt',
      '/../secret.txt',
      '/assets/./../../secret.txt',
      '/%2e%2e/secret.txt',
      '/assets/%2E%2E/%2e%2e/secret.txt',
    ]) {
      const raw = await rawGet(Number(port), path);
      assert.match(raw, /^HTTP\/1\.1 404 /, `${path}: ${raw.slice(0, 80)}`);
      assert.match(raw, /"code":"not_found"/);
      assert.ok(!raw.includes(SENTINEL), path);
    }
  });

  it('keeps the API, the reference and the probes as they were', async () => {
    const nope = await t.request({ method: 'GET', url: '/v1/nope' });
    assertFormA(nope, 404, 'not_found');
    assert.equal(nope.headers['content-security-policy'], API_CSP);
    assert.match(String(nope.headers['x-ratelimit-remaining']), /^\d+$/);
    for (const url of ['/v1', '/v1/', '/docs/', '/docs/anything', '/healthz/', '/readyz/x']) {
      assertFormA(await t.request({ method: 'GET', url }), 404, 'not_found');
    }

    const docs = await t.request({ method: 'GET', url: '/docs' });
    assert.equal(docs.statusCode, 200);
    assert.match(String(docs.headers['content-type']), /^text\/html/);
    assert.match(String(docs.headers['content-security-policy']), /style-src 'unsafe-inline'/);

    const health = await t.request({ method: 'GET', url: '/healthz' });
    assert.equal(health.statusCode, 200);
    assert.deepEqual(health.data, { data: { status: 'ok' } });
    assert.equal(health.headers['content-security-policy'], API_CSP);

    const openapi = await t.request({ method: 'GET', url: '/v1/openapi.json' });
    assert.equal(openapi.statusCode, 200);
    const paths = Object.keys((openapi.data as { paths: Record<string, unknown> }).paths);
    assert.ok(!paths.some((p) => !p.startsWith('/v1/') && p !== '/healthz' && p !== '/readyz'));
  });

  it('other methods on dashboard paths keep their JSON 404 (no Allow)', async () => {
    for (const [method, url] of [
      ['POST', '/'],
      ['PUT', '/projects/proj_x/secrets'],
      ['DELETE', '/assets/app-abc123.js'],
      ['PATCH', '/index.html'],
    ] as const) {
      const res = await t.request({ method, url, body: {} });
      assertFormA(res, 404, 'not_found');
      assert.equal(res.headers.allow, undefined);
    }
  });

  it('answers HEAD like GET, without a body', async () => {
    const index = await t.request({ method: 'HEAD', url: '/projects/proj_x' });
    assert.equal(index.statusCode, 200);
    assert.equal(index.body, '');
    assert.equal(index.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(index.headers['content-length'], String(Buffer.byteLength(INDEX)));
    assert.equal(index.headers['content-security-policy'], DASHBOARD_CSP);

    const asset = await t.request({ method: 'HEAD', url: '/assets/app-abc123.js' });
    assert.equal(asset.statusCode, 200);
    assert.equal(asset.body, '');
    assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable');

    const missing = await t.request({ method: 'HEAD', url: '/assets/none.js' });
    assert.equal(missing.statusCode, 404);
    assert.match(String(missing.headers['content-type']), /^application\/json/);
  });

  it("loading the dashboard spends no one's rate-limit budget", async () => {
    const limited = await startTestApp(dialect, {
      env: { DASHBOARD_DIR: dir, RATE_LIMIT_SESSION: '5', RATE_LIMIT_ANONYMOUS: '5' },
    });
    try {
      const user = await signUp(limited);
      for (let i = 0; i < 30; i++) {
        const res = await limited.request({
          method: 'GET',
          url: i % 2 ? '/assets/app-abc123.js' : `/projects/p${i}`,
          // With the session cookie and without: neither budget is spent.
          headers: i % 3 ? { cookie: user.cookie } : {},
        });
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['x-ratelimit-remaining'], undefined);
      }
      const me = await limited.request({
        method: 'GET',
        url: '/v1/me',
        headers: { cookie: user.cookie },
      });
      assert.equal(me.statusCode, 200, me.body);
      assert.equal(me.headers['x-ratelimit-limit'], '5');
      assert.equal(me.headers['x-ratelimit-remaining'], '4', 'the session budget is untouched');

      // Without a credential, the client IP's budget is untouched too.
      const anonymous = await limited.request({ method: 'GET', url: '/v1/projects' });
      assert.equal(anonymous.statusCode, 401);
      assert.equal(anonymous.headers['x-ratelimit-remaining'], '4');
    } finally {
      await limited.close();
    }
  });

  it('a session cookie that does not decode does not stop the dashboard loading', async () => {
    assertIndex(
      await t.request({ method: 'GET', url: '/', headers: { cookie: 'coffer_session=%ZZ' } }),
    );
  });

  it('logs dashboard requests with the invitation token masked', async () => {
    const token = 'DashboardInviteTokenSecret';
    const res = await t.request({ method: 'GET', url: `/invite?token=${token}&project=p1` });
    assert.equal(res.statusCode, 200);
    const line = logs.lines.find(
      (l) => l.reqId === res.headers['x-request-id'] && l.msg === 'request completed',
    );
    assert.ok(line, 'one access-log line');
    assert.equal((line.req as { url: string }).url, '/invite?token=%5Bredacted%5D&project=p1');
    assert.ok(!logs.text.includes(token));
  });
});

describe('the dashboard switched off or not built', () => {
  const { parent, dir } = fixture();
  const empty = mkdtempSync(join(tmpdir(), 'coffer-dashboard-unbuilt-'));
  after(() => {
    rmSync(parent, { recursive: true, force: true });
    rmSync(empty, { recursive: true, force: true });
  });

  for (const [name, env, warns] of [
    ['DASHBOARD=off', { DASHBOARD: 'off', DASHBOARD_DIR: dir }, false],
    ['DASHBOARD_DIR without index.html', { DASHBOARD_DIR: empty }, true],
  ] as const) {
    it(`${name}: every path outside the API is a JSON 404, as without a dashboard`, async () => {
      const logs = new LogCapture();
      const t = await startTestApp(dialect, { env, deps: { logger: logs.options() } });
      try {
        for (const url of ['/', '/projects/proj_x', '/assets/app-abc123.js', '/index.html']) {
          const res = await t.request({ method: 'GET', url });
          assertFormA(res, 404, 'not_found');
          assert.equal(res.headers['content-security-policy'], API_CSP);
          assert.match(String(res.headers['x-ratelimit-remaining']), /^\d+$/);
        }
        assert.equal((await t.request({ method: 'GET', url: '/healthz' })).statusCode, 200);
        const warnings = logs.lines.filter((l) => /dashboard not built/.test(String(l.msg)));
        assert.equal(warnings.length, warns ? 1 : 0, logs.text);
      } finally {
        await t.close();
      }
    });
  }
});

/** One GET over a plain socket, the path sent exactly as given. */
function rawGet(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.on('data', (chunk) => (data += chunk.toString('utf8')));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
  });
}
