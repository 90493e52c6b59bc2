import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.js';
import { onlyOn } from '../support/db.js';
import { projectWithVault } from '../support/vault.js';
import { secretsUrl } from '../secrets/fixtures.js';
import { send, realPostgres, startServerProcess } from './server-process.js';

const TOKEN = 'metrics-token-0123456789abcdef';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * A strict reader of the Prometheus text format (0.0.4): every line is a
 * `# HELP`, a `# TYPE` or a sample `name{label="value",…} number`; anything
 * else fails the test.
 */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  const name = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const sample = new RegExp(`^(${name})(?:\\{(.*)\\})? (\\S+)(?: \\d+)?$`);
  const label = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(?:,|$)/;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
      assert.match(
        line,
        new RegExp(`^# (HELP ${name} .*|TYPE ${name} (counter|gauge|histogram|summary|untyped))$`),
      );
      continue;
    }
    const match = sample.exec(line);
    assert.ok(match, `not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    let rest = match[2] ?? '';
    while (rest.length > 0) {
      const l = label.exec(rest);
      assert.ok(l, `bad labels in: ${line}`);
      labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
      rest = rest.slice(l[0].length);
    }
    // Values are Go floats: NaN and ±Inf in any case (prom-client writes `Nan`).
    const raw = match[3]!;
    const value = /^nan$/i.test(raw)
      ? NaN
      : /^[+-]?inf$/i.test(raw)
        ? (raw.startsWith('-') ? -1 : 1) * Infinity
        : Number(raw);
    assert.ok(!Number.isNaN(value) || /^nan$/i.test(raw), `bad value in: ${line}`);
    samples.push({ name: match[1]!, labels, value });
  }
  return samples;
}

const valueOf = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);

describe('metrics with METRICS_TOKEN (public port)', () => {
  let t: TestApp;
  const scrape = async (app = t) => {
    const res = await app.request({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    return parseExposition(res.body);
  };
  before(async () => {
    t = await startTestApp('sqlite', {
      env: { METRICS_TOKEN: TOKEN, RATE_LIMIT_ANONYMOUS: '2' },
    });
  });
  after(async () => t.close());

  it('refuses a missing or wrong token with a Form A 401, without spending a budget', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789abcdef', TOKEN]) {
      const res = await t.request({
        method: 'GET',
        url: '/metrics',
        headers: authorization ? { authorization } : {},
      });
      assert.equal(res.statusCode, 401);
      const error = (res.data as { error: { code: string; request_id: string } }).error;
      assert.equal(error.code, 'unauthenticated');
      assert.equal(res.headers['x-ratelimit-limit'], undefined);
    }
  });

  it('counts requests by route template and status, refusals by budget, and the listing cache', async () => {
    const first = await scrape();
    const project = await projectWithVault(t);
    for (let i = 0; i < 3; i++) await t.request({ method: 'GET', url: '/healthz' });
    // Budget of 2 per minute for requests without a credential: the third is refused.
    for (let i = 0; i < 3; i++) await t.request({ method: 'GET', url: '/v1/me' });
    await t.request({
      method: 'GET',
      url: `/v1/projects/${project.id}/no-such-thing/x`,
      headers: project.admin.headers,
    });
    for (let i = 0; i < 2; i++) {
      const res = await t.request({
        method: 'GET',
        url: secretsUrl(project, 'development'),
        headers: project.admin.headers,
      });
      assert.equal(res.statusCode, 200);
    }

    const now = await scrape();
    const moved = (name: string, labels: Record<string, string> = {}) =>
      valueOf(now, name, labels) - valueOf(first, name, labels);
    assert.equal(moved('coffer_http_requests_total', { route: '/healthz', status: '200' }), 3);
    assert.equal(moved('coffer_http_requests_total', { route: '/v1/me', status: '401' }), 2);
    assert.equal(moved('coffer_http_requests_total', { route: '/v1/me', status: '429' }), 1);
    assert.equal(moved('coffer_rate_limited_total', { credential: 'anonymous' }), 1);
    assert.equal(
      moved('coffer_http_request_duration_seconds_count', {
        route: '/v1/projects/:project_id/environments/:env/secrets',
        status: '200',
      }),
      2,
    );
    // The histogram's buckets are cumulative and end at the count.
    const listing = { route: '/v1/projects/:project_id/environments/:env/secrets', status: '200' };
    const buckets = [
      0.001,
      0.0025,
      0.005,
      0.01,
      0.025,
      0.05,
      0.1,
      0.25,
      0.5,
      1,
      2.5,
      5,
      10,
      '+Inf',
    ];
    const counts = buckets.map((le) =>
      valueOf(now, 'coffer_http_request_duration_seconds_bucket', { ...listing, le: String(le) }),
    );
    counts.slice(1).forEach((n, i) => assert.ok(n >= counts[i]!, `bucket ${buckets[i + 1]}`));
    assert.equal(
      counts.at(-1),
      valueOf(now, 'coffer_http_request_duration_seconds_count', listing),
    );
    assert.ok(valueOf(now, 'coffer_http_request_duration_seconds_sum', listing) > 0);
    assert.ok(moved('coffer_http_requests_total', { route: 'unmatched', status: '404' }) >= 1);
    assert.equal(moved('coffer_listing_cache_misses_total'), 1);
    assert.equal(moved('coffer_listing_cache_hits_total'), 1);
    for (const name of [
      'coffer_outbox_pending',
      'coffer_outbox_delivery_failures_total',
      'coffer_audit_buffer_events',
      'process_cpu_user_seconds_total',
      'nodejs_heap_size_used_bytes',
    ]) {
      assert.ok(
        now.some((s) => s.name === name),
        `${name} is exported`,
      );
    }
    // Templates and codes only: no raw URL, id, name or address in any label.
    for (const s of now) {
      for (const value of Object.values(s.labels)) {
        assert.doesNotMatch(value, /proj_|usr_|env_|@|no-such-thing/, `${s.name} ${value}`);
      }
    }
  });

  it('keeps each app its own registry', async () => {
    const other = await startTestApp('sqlite', { env: { METRICS_TOKEN: TOKEN } });
    try {
      await other.request({ method: 'GET', url: '/healthz' });
      const samples = await scrape(other);
      assert.equal(valueOf(samples, 'coffer_http_requests_total', { route: '/healthz' }), 1);
      // …and /metrics is not in the OpenAPI document.
      const doc = await other.request({ method: 'GET', url: '/v1/openapi.json' });
      assert.equal(doc.statusCode, 200);
      assert.doesNotMatch(doc.body, /metrics/);
    } finally {
      await other.close();
    }
  });
});

describe('metrics off (the default)', () => {
  it('serves nothing on the public port', async () => {
    const t = await startTestApp('sqlite');
    try {
      const res = await t.request({ method: 'GET', url: '/metrics' });
      assert.equal(res.statusCode, 404);
      assert.equal((res.data as { error: { code: string } }).error.code, 'not_found');
    } finally {
      await t.close();
    }
  });
});

describe('metrics with METRICS_PORT (real process)', () => {
  it('serves them on a listener of their own, and nothing on the public port', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'coffer-metrics-'));
    const server = await startServerProcess({
      DATA_DIR: dataDir,
      TLS: 'off',
      TRUST_PROXY: 'true',
      DASHBOARD: 'off',
      METRICS_PORT: '0',
    });
    try {
      const line = await server.waitFor(/^Coffer metrics on /);
      const url = /^Coffer metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)$/.exec(line)?.[1];
      assert.ok(url, line);
      await send(`${server.url}/healthz`);
      const scraped = await send(url);
      assert.equal(scraped.status, 200);
      const samples = parseExposition(scraped.body);
      assert.equal(valueOf(samples, 'coffer_http_requests_total', { route: '/healthz' }), 1);
      assert.equal((await send(url.replace('/metrics', '/other'))).status, 404);
      const publicPort = await send(`${server.url}/metrics`);
      assert.equal(publicPort.status, 404);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('metrics on PostgreSQL', () => {
  it('export the pool: total, idle and waiting', onlyOn('postgres'), async (t) => {
    if (!realPostgres(t)) return;
    const app = await startTestApp('postgres', { env: { METRICS_TOKEN: TOKEN } });
    try {
      await app.request({ method: 'GET', url: '/readyz' });
      const res = await app.request({
        method: 'GET',
        url: '/metrics',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      const samples = parseExposition(res.body);
      for (const state of ['total', 'idle', 'waiting']) {
        assert.ok(
          samples.some((s) => s.name === 'coffer_db_pool_connections' && s.labels.state === state),
          state,
        );
      }
      assert.ok(valueOf(samples, 'coffer_db_pool_connections', { state: 'total' }) >= 1);
    } finally {
      await app.close();
    }
  });
});
