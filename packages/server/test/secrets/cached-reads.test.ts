import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { eventually } from '../support/http.js';
import { projectWithVault, type VaultProject } from '../support/vault.js';
import { createToken, putSecret, secretsUrl } from './fixtures.js';
import { testRedis } from '../foundation/server-process.js';

// The cached-read path (src/http/cached-reads.ts) answers a warm read of one
// secret without Fastify. Over real sockets (app.inject never reaches it): its
// answer is Fastify's, header for header, with the same log line, metrics and
// audit; whatever it cannot answer gets Fastify's answer, counted once.

const REDIS_URL = process.env.COFFER_TEST_REDIS_URL || 'redis://127.0.0.1:6379';
const METRICS_TOKEN = randomBytes(16).toString('hex');

interface Answer {
  status: number;
  /** Header names (lower case) and values, in the order they came. */
  headers: [string, string][];
  body: string;
}

const header = (answer: Answer, name: string) => answer.headers.find(([n]) => n === name)?.[1];

for (const dialect of DIALECTS) {
  describe(`the cached-read path (${dialect})`, () => {
    let t: TestApp;
    let redis: Redis | null = null;
    let port: number;
    let project: VaultProject;
    let missing: string | null = null;
    const lines: Record<string, unknown>[] = [];

    before(async () => {
      const env = {
        METRICS_TOKEN,
        LOG_LEVEL: 'info',
        RATE_LIMIT_CI_TOKEN: '6',
        REDIS_KEY_PREFIX: `coffer-test-${randomBytes(6).toString('hex')}:`,
      };
      const logger = {
        stream: new Writable({
          write(chunk: Buffer, _encoding, done) {
            for (const line of chunk.toString().split('\n'))
              if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
            done();
          },
        }),
      };
      if (dialect === 'postgres') {
        // On PostgreSQL the change tokens, and so every cached read, need Redis.
        ({ redis, missing } = await testRedis(REDIS_URL));
        if (missing) return;
      }
      t = await startTestApp(dialect, { env, deps: { redis, logger } });
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      port = (t.app.server.address() as { port: number }).port;
      project = await projectWithVault(t);
      const dev = project.env.development;
      await putSecret(t, project, dev, 'API_URL', 'https://example.test', project.admin.headers);
    });
    after(async () => {
      await t?.close();
      await redis?.quit();
    });

    const get = (path: string, headers: Record<string, string>, method = 'GET') =>
      new Promise<Answer>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path, method, headers }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => {
            const pairs: [string, string][] = [];
            for (let i = 0; i < res.rawHeaders.length; i += 2)
              pairs.push([res.rawHeaders[i]!.toLowerCase(), res.rawHeaders[i + 1]!]);
            resolve({ status: res.statusCode!, headers: pairs, body });
          });
        });
        req.on('error', reject);
        req.end();
      });
    /** An API key with `scope` on the development environment. */
    const devKey = (scope: 'read' | 'read_write') =>
      createToken(t, project, 'api_key', { [project.env.development.id]: scope });
    const scrape = async () =>
      (
        await t.request({
          method: 'GET',
          url: '/metrics',
          headers: { authorization: `Bearer ${METRICS_TOKEN}` },
        })
      ).body;
    const answered = async () => {
      const text = await scrape();
      return Number(/^coffer_cached_reads_total (\d+)/m.exec(text)?.[1]);
    };

    it("answers a warm read as Fastify's route does, header for header", async (c) => {
      if (missing) return c.skip(`needs ${missing}`);
      const key = await devKey('read');
      const path = secretsUrl(project, 'development', '/API_URL');
      const before = await answered();
      const first = await get(path, key.headers); // Fastify: fills the caches
      assert.equal(await answered(), before);
      const second = await get(path, key.headers);
      const third = await get(path, key.headers);
      assert.equal(await answered(), before + 2, 'the second and third reads took the cached path');

      assert.equal(first.status, 200);
      assert.equal(second.status, 200);
      assert.equal(second.body, first.body);
      assert.equal(third.body, first.body);
      assert.deepEqual(
        second.headers.map(([name]) => name),
        first.headers.map(([name]) => name),
      );
      const differ = new Set(['x-request-id', 'x-ratelimit-remaining', 'date']);
      for (const [name, value] of first.headers)
        if (!differ.has(name)) assert.equal(header(second, name), value, name);
      assert.match(header(second, 'x-request-id')!, /^req_/);
      assert.notEqual(header(second, 'x-request-id'), header(first, 'x-request-id'));
      assert.equal(
        Number(header(second, 'x-ratelimit-remaining')),
        Number(header(first, 'x-ratelimit-remaining')) - 1,
      );
      assert.equal(
        Number(header(third, 'x-ratelimit-remaining')),
        Number(header(second, 'x-ratelimit-remaining')) - 1,
      );

      // The access log: one line per read, the same fields whichever path answered.
      const line = (answer: Answer) =>
        lines.find((l) => l.reqId === header(answer, 'x-request-id') && l.msg);
      const [a, b] = [line(first), line(second)];
      assert.ok(a && b, 'both reads logged');
      assert.deepEqual(Object.keys(b), Object.keys(a));
      const common = ({ reqId, time, responseTime, ...rest }: Record<string, unknown>) => {
        assert.equal(typeof reqId, 'string');
        assert.equal(typeof time, 'number');
        assert.equal(typeof responseTime, 'number');
        return rest;
      };
      assert.deepEqual(common(b), common(a));
      assert.deepEqual(b.res, { statusCode: 200 });
      assert.equal(b.msg, 'request completed');
      assert.ok(!JSON.stringify(lines).includes('https://example.test'), 'no value logged');
      assert.ok(!JSON.stringify(lines).includes(key.headers.authorization.slice(7)));

      // Metrics count them under the route, and the audit holds all three reads.
      const metrics = await scrape();
      assert.match(
        metrics,
        /^coffer_http_requests_total\{method="GET",route="\/v1\/projects\/:project_id\/environments\/:env\/secrets\/:name",status="200"\} [3-9]/m,
      );
      const reads = await eventually(async () => {
        const res = await t.request({
          method: 'GET',
          url: `/v1/projects/${project.id}/audit-events?action=secret.read`,
          headers: project.admin.headers,
        });
        const events = (
          res.data as {
            data: { credential: { id: string } | null; ip: string; data: { count?: number } }[];
          }
        ).data.filter((e) => e.credential?.id === key.id);
        const count = events.reduce((sum, e) => sum + (e.data.count ?? 1), 0);
        return count === 3 ? events : undefined;
      }, 'three reads audited');
      for (const event of reads) assert.equal(event.ip, '127.0.0.1');
    });

    it('a read after an acknowledged write returns the new value, every time', async (c) => {
      if (missing) return c.skip(`needs ${missing}`);
      const key = await devKey('read_write');
      const path = secretsUrl(project, 'development', '/ROTATED');
      const before = await answered();
      for (let i = 0; i < 20; i++) {
        const value = `value ${i}`;
        await putSecret(t, project, project.env.development, 'ROTATED', value, key.headers);
        const first = await get(path, key.headers);
        const again = await get(path, key.headers);
        for (const read of [first, again]) {
          assert.equal(read.status, 200);
          assert.equal(
            (JSON.parse(read.body) as { data: { version: number } }).data.version,
            i + 1,
          );
        }
      }
      assert.ok((await answered()) >= before + 20, 'the repeated reads took the cached path');
    });

    it("hands on what it cannot answer: Fastify's answer, the request counted once", async (c) => {
      if (missing) return c.skip(`needs ${missing}`);
      const staging = await createToken(t, project, 'api_key', {
        [project.env.staging.id]: 'read',
      });
      const key = await devKey('read');
      const dev = (rest: string) => secretsUrl(project, 'development', rest);
      const before = await answered();
      const twice = async (path: string, headers: Record<string, string>, method = 'GET') => {
        const a = await get(path, headers, method);
        const b = await get(path, headers, method);
        assert.equal(b.status, a.status, path);
        const withoutId = (body: string) => body.replace(/"request_id":"[^"]+"/, '');
        assert.equal(withoutId(b.body), withoutId(a.body), path);
        if (header(a, 'x-ratelimit-remaining') !== undefined) {
          assert.equal(
            Number(header(b, 'x-ratelimit-remaining')),
            Number(header(a, 'x-ratelimit-remaining')) - 1,
            `${path}: counted once`,
          );
        }
        return b;
      };
      // No scope on the environment, no such secret, another project.
      assert.equal((await twice(dev('/API_URL'), staging.headers)).status, 403);
      assert.equal((await twice(dev('/NOPE'), key.headers)).status, 404);
      const other = await projectWithVault(t);
      const elsewhere = secretsUrl(other, 'development', '/API_URL');
      assert.equal((await twice(elsewhere, key.headers)).status, 404);
      // Paths and methods the router would treat otherwise.
      assert.equal((await twice(`${dev('/API_URL')}?x=1`, key.headers)).status, 200);
      assert.equal((await twice(dev('/API%5FURL'), key.headers)).status, 200);
      assert.equal((await twice(dev('/API_URL'), key.headers, 'HEAD')).status, 200);
      assert.equal((await twice(dev('/API_URL/'), key.headers)).status, 404);
      // A credential the pipeline refuses: the key part sent along, a malformed header.
      assert.equal(
        (await twice(dev('/API_URL'), { authorization: `${key.headers.authorization}.abc` }))
          .status,
        401,
      );
      assert.equal(
        (await twice(dev('/API_URL'), { authorization: `Basic ${key.headers.authorization}` }))
          .status,
        401,
      );
      assert.equal(await answered(), before, 'none of them took the cached path');

      // A revoked key stops at once, whichever path it would have taken.
      assert.equal((await get(dev('/API_URL'), key.headers)).status, 200);
      const revoked = await t.request({
        method: 'DELETE',
        url: `/v1/projects/${project.id}/api-keys/${key.id}`,
        headers: project.admin.headers,
      });
      assert.equal(revoked.statusCode, 204);
      assert.equal((await get(dev('/API_URL'), key.headers)).status, 401);
    });

    it("a CI token's budget: one request each, the 429 from Fastify's path", async (c) => {
      if (missing) return c.skip(`needs ${missing}`);
      const ci = await createToken(t, project, 'ci_token', {
        [project.env.development.id]: 'read',
      });
      const path = secretsUrl(project, 'development', '/API_URL');
      const before = await answered();
      const remaining: string[] = [];
      for (let i = 0; i < 6; i++) {
        const read = await get(path, ci.headers);
        assert.equal(read.status, 200);
        remaining.push(header(read, 'x-ratelimit-remaining')!);
      }
      assert.deepEqual(remaining, ['5', '4', '3', '2', '1', '0']);
      assert.equal(await answered(), before + 5);
      const refused = await get(path, ci.headers);
      assert.equal(refused.status, 429);
      assert.equal(header(refused, 'x-ratelimit-remaining'), '0');
      assert.ok(Number(header(refused, 'retry-after')) > 0);
      assert.equal(
        (JSON.parse(refused.body) as { error: { code: string } }).error.code,
        'rate_limited',
      );
    });

    it('a request without Host gets the Form A 400', async (c) => {
      if (missing) return c.skip(`needs ${missing}`);
      const key = await devKey('read');
      const path = secretsUrl(project, 'development', '/API_URL');
      assert.equal((await get(path, key.headers)).status, 200);
      const text = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let read = '';
        socket.on('data', (chunk: Buffer) => (read += chunk.toString()));
        socket.on('error', reject);
        socket.on('close', () => resolve(read));
        socket.on('connect', () =>
          socket.write(
            `GET ${path} HTTP/1.1\r\nAuthorization: ${key.headers.authorization}\r\nConnection: close\r\n\r\n`,
          ),
        );
      });
      assert.match(text, /^HTTP\/1\.1 400/);
      assert.match(text, /"field":"host"/);
    });
  });
}
