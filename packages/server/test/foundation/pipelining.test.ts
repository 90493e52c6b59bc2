import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { as, dataOf } from '../support/http.js';
import { envelope, projectWithVault, type VaultProject } from '../support/vault.js';

/** Writes `bytes` in ONE write on a new connection and returns all it reads until the server closes. */
function exchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
    socket.on('connect', () => socket.write(bytes));
    socket.setTimeout(10_000, () => reject(new Error(`no close; read so far:\n${text}`)));
  });
}

const GARBAGE = 'NOT\x00HTTP \x01\x02\r\n\r\n';

/** The status lines of the answers in `text`, in the order they came. */
const statusLines = (text: string) =>
  [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));

for (const dialect of DIALECTS) {
  describe(`${dialect}: a valid request followed by malformed bytes in the same segment`, () => {
    let t: TestApp;
    let port: number;
    let project: VaultProject;
    before(async () => {
      t = await startTestApp(dialect);
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      port = (t.app.server.address() as { port: number }).port;
      project = await projectWithVault(t);
    });
    after(() => t.close());

    const request = (method: string, path: string, body?: string) =>
      `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nCookie: ${project.admin.headers.cookie}\r\nOrigin: ${project.admin.headers.origin}\r\n` +
      (body === undefined
        ? '\r\n'
        : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);

    it('PUT: its answer first, then the 400, then close; the write executed once', async () => {
      const env = project.env.development;
      const path = `/v1/projects/${project.id}/environments/${env.id}/secrets/PIPELINED`;
      const body = JSON.stringify({ value: envelope(project, env.id, 'PIPELINED', 'one') });
      const text = await exchange(port, request('PUT', path, body) + GARBAGE);
      assert.deepEqual(statusLines(text), [201, 400], text);
      const refusal = text.slice(text.lastIndexOf('HTTP/1.1 400'));
      assert.match(refusal, /connection: close/i);
      assert.match(refusal, /"code":"validation_error"/);
      const versions = dataOf<unknown[]>(
        await as(t, project.admin, 'GET', `${path}/versions`),
        200,
      );
      assert.equal(versions.length, 1);
    });

    it('a request without Host: Form A 400 with its request id and rate-limit headers', async () => {
      for (const path of ['/v1/projects', '/v1/nowhere', '/healthz']) {
        const text = await exchange(
          port,
          `GET ${path} HTTP/1.1\r\nConnection: close\r\nCookie: ${project.admin.headers.cookie}\r\n\r\n`,
        );
        assert.deepEqual(statusLines(text), [400], text);
        const [head, body] = text.split('\r\n\r\n');
        assert.match(head!, /x-request-id: req_/i);
        if (path !== '/healthz') assert.match(head!, /x-ratelimit-remaining: \d+/i);
        const error = (JSON.parse(body!) as { error: { code: string; details: unknown } }).error;
        assert.equal(error.code, 'validation_error');
        assert.deepEqual(error.details, [{ field: 'host', issue: 'required' }]);
      }
      // HTTP/1.0 does not require it.
      const old = await exchange(port, 'GET /healthz HTTP/1.0\r\n\r\n');
      assert.deepEqual(statusLines(old.replace('HTTP/1.0', 'HTTP/1.1')), [200], old);
    });

    it('DELETE: its answer first, then the 400, then close; deleted', async () => {
      const env = project.env.staging;
      const path = `/v1/projects/${project.id}/environments/${env.id}/secrets/GONE`;
      const put = await t.request({
        method: 'PUT',
        url: path,
        headers: project.admin.headers,
        body: { value: envelope(project, env.id, 'GONE', 'x') },
      });
      assert.equal(put.statusCode, 201, put.body);
      const text = await exchange(port, request('DELETE', path) + GARBAGE);
      assert.deepEqual(statusLines(text), [204, 400], text);
      const gone = await as(t, project.admin, 'GET', `${path}/versions`);
      assert.equal(gone.statusCode, 404, gone.body);
    });
  });
}
