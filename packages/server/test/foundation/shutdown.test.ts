import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { send, startServerProcess, type ServerProcess } from './server-process.js';

const BODY = JSON.stringify({ email: 'slow-upload@example.test' });

/**
 * A request whose body arrives in two parts: headers and half the body now,
 * the rest when `finish()` is called. Until then it is in flight on the server.
 */
function slowUpload(url: string, options: RequestOptions) {
  let resolveResponse!: (r: { status: number; body: string; connection: string }) => void;
  let rejectResponse!: (err: Error) => void;
  const response = new Promise<{ status: number; body: string; connection: string }>(
    (resolve, reject) => ((resolveResponse = resolve), (rejectResponse = reject)),
  );
  const req = request(
    `${url}/v1/auth/prelogin`,
    {
      ...options,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) },
    },
    (res: IncomingMessage) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () =>
        resolveResponse({
          status: res.statusCode ?? 0,
          body,
          connection: String(res.headers.connection),
        }),
      );
    },
  );
  req.on('error', rejectResponse);
  req.write(BODY.slice(0, 10));
  return {
    response,
    finish: () => req.end(BODY.slice(10)),
  };
}

async function eventuallyRefused(url: string, ca: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      await send(`${url}/healthz`, { ca });
    } catch (err) {
      // Refused, or reset if the kernel accepted it just as the listener closed.
      assert.match(String((err as Error).message), /ECONNREFUSED|ECONNRESET|socket hang up/);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail('new connections are still accepted after SIGTERM');
}

describe('graceful shutdown on SIGTERM (real process)', () => {
  let server: ServerProcess;
  let dataDir: string;
  afterEach(async () => {
    await server.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('stops accepting, finishes the in-flight request, closes the database and exits 0', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'coffer-shutdown-'));
    // At debug the server logs each request as it arrives: how the test knows it has the headers.
    server = await startServerProcess({ DATA_DIR: dataDir, LOG_LEVEL: 'debug' });
    const ca = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
    // A kept-alive client: its connection stays open between requests.
    const agent = new Agent({ keepAlive: true, ca });
    const idle = await new Promise<number>((resolve, reject) =>
      request(`${server.url}/healthz`, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
        .on('error', reject)
        .end(),
    );
    assert.equal(idle, 200);

    const upload = slowUpload(server.url, { agent });
    await server.waitFor(/"url":"\/v1\/auth\/prelogin"/); // the server has the headers
    server.child.kill('SIGTERM');
    await server.waitFor(/shutting down/);
    await eventuallyRefused(server.url, ca);
    assert.equal(server.child.exitCode, null, 'still running while the upload is in flight');

    upload.finish();
    const answer = await upload.response;
    assert.equal(answer.status, 200, answer.body);
    assert.ok((JSON.parse(answer.body) as { data: { kdf_params: unknown } }).data.kdf_params);

    const exit = await server.exited;
    agent.destroy();
    assert.deepEqual(exit, { code: 0, signal: null });
    const messages = server.logs().map((l) => l.msg);
    const completed = messages.lastIndexOf('request completed');
    const closed = messages.indexOf('in-flight requests finished and database closed; exiting');
    assert.ok(closed > completed && completed > 0, messages.join('\n'));
  });

  it('after SHUTDOWN_GRACE_MS, a request that never completes is cut and the server still exits 0', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'coffer-shutdown-'));
    server = await startServerProcess({
      DATA_DIR: dataDir,
      SHUTDOWN_GRACE_MS: '300',
      LOG_LEVEL: 'debug',
    });
    const ca = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
    const stalled = slowUpload(server.url, { ca, agent: false });
    const outcome = stalled.response.then(
      () => 'answered',
      () => 'connection closed',
    );
    await server.waitFor(/"url":"\/v1\/auth\/prelogin"/);
    server.child.kill('SIGTERM');

    const exit = await server.exited;
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.equal(await outcome, 'connection closed');
    const messages = server.logs().map((l) => l.msg ?? '');
    assert.ok(messages.some((m) => m.includes('did not finish within SHUTDOWN_GRACE_MS')));
    assert.ok(messages.includes('in-flight requests finished and database closed; exiting'));
  });
});
