import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { Agent, fetch as undiciFetch } from 'undici';
import { CofferClient, ready, signUp } from '@coffer/sdk';
import { send, startServerProcess, type ServerProcess } from './server-process.js';

// What a real server process does at the edges of HTTP: refusals written
// before there is a request, bodies refused while the client is still sending
// them, and connections that never say anything.

const tempDir = (name: string) => mkdtempSync(join(tmpdir(), `coffer-${name}-`));

/** Writes `payload` on a fresh TLS connection and returns everything the server sent before closing. */
function rawExchange(url: string, ca: string, payload: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      { host: '127.0.0.1', port: Number(port), ca, servername: 'localhost' },
      () => socket.write(payload),
    );
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', (err) => (answer ? resolve(answer) : reject(err)));
  });
}

function parseRaw(answer: string) {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body, json: JSON.parse(body) };
}

function assertFormARefusal(
  res: { status: number; headers: Record<string, string | string[] | undefined>; json: unknown },
  status: number,
) {
  assert.equal(res.status, status);
  const error = (res.json as { error: Record<string, unknown> }).error;
  assert.ok(error, 'a Form A body');
  assert.equal(typeof error.code, 'string');
  assert.equal(typeof error.message, 'string');
  assert.match(String(error.request_id), /^req_/);
  assert.equal(error.request_id, res.headers['x-request-id']);
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
    assert.match(String(res.headers[name]), /^\d+$/, `${name} on a ${status}`);
}

/** Resolves with how long the server took to close a TLS connection the client keeps silent. */
function silentTlsLifetime(url: string, ca: string, limitMs: number): Promise<number | null> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    let connectedAt = 0;
    const socket: TLSSocket = tlsConnect(
      { host: '127.0.0.1', port: Number(port), ca, servername: 'localhost' },
      () => (connectedAt = Date.now()),
    );
    const giveUp = setTimeout(() => (socket.destroy(), resolve(null)), limitMs);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(giveUp);
      resolve(connectedAt ? Date.now() - connectedAt : 0);
    });
  });
}

describe('refusals at the edges of HTTP (real process over TLS)', () => {
  const dataDir = tempDir('edges');
  let server: ServerProcess;
  let ca: string;
  before(async () => {
    server = await startServerProcess({
      DATA_DIR: dataDir,
      HTTP_PORT: 'off',
      KDF_MIN_OPS: '1',
      KDF_MIN_MEM_KIB: '8192',
      CONNECTION_IDLE_TIMEOUT_MS: '1000',
    });
    ca = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
  });
  after(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('oversized headers and broken HTTP get a Form A body and the anonymous budget’s rate-limit headers', async () => {
    const first = parseRaw(
      await rawExchange(
        server.url,
        ca,
        `GET /v1/projects HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      ),
    );
    assertFormARefusal(first, 431);
    const garbage = parseRaw(await rawExchange(server.url, ca, 'HELLO THERE\r\n\r\n'));
    assertFormARefusal(garbage, 400);
    // Both were counted against this IP's anonymous budget, as the next request shows.
    assert.equal(
      Number(garbage.headers['x-ratelimit-remaining']),
      Number(first.headers['x-ratelimit-remaining']) - 1,
    );
    const next = await send(`${server.url}/v1/projects`, { ca });
    assert.equal(next.status, 401);
    assert.equal(
      Number(next.headers['x-ratelimit-remaining']),
      Number(garbage.headers['x-ratelimit-remaining']) - 1,
    );
  });

  it('a 3 MiB body sent with fetch to an authenticated route gets its 413, every time', async () => {
    await ready();
    const dispatcher = new Agent({ connect: { ca } });
    after(() => dispatcher.close());
    const tlsFetch = ((input: string, init?: Record<string, unknown>) =>
      undiciFetch(input, { ...init, dispatcher })) as unknown as typeof fetch;
    const client = new CofferClient({ baseUrl: server.url, fetch: tlsFetch });
    await signUp(client, {
      email: 'big-body@example.test',
      name: 'Big Body',
      password: 'a long enough password',
      kdfCost: { ops_limit: 1, mem_limit_kib: 8192 },
    });
    assert.ok(client.session, 'the client holds a session');
    const cookie = `coffer_session=${client.session}`;
    const body = JSON.stringify({ name: 'x', description: 'y'.repeat(3 * 1024 * 1024) });
    const failures: string[] = [];
    for (let i = 0; i < 20; i++) {
      try {
        const res = await tlsFetch(`${server.url}/v1/projects`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: server.url, cookie },
          body,
        });
        const json = (await res.json()) as { error?: { code?: string; request_id?: string } };
        if (res.status !== 413 || json.error?.code !== 'payload_too_large')
          failures.push(`try ${i}: ${res.status} ${JSON.stringify(json)}`);
        else if (!res.headers.get('x-ratelimit-remaining'))
          failures.push(`try ${i}: no rate-limit headers`);
      } catch (err) {
        const cause = (err as { cause?: { code?: string } }).cause;
        failures.push(`try ${i}: ${String(err)} ${cause?.code ?? ''}`);
      }
    }
    assert.deepEqual(failures, []);
  });

  it('a TLS connection that sends nothing is closed after CONNECTION_IDLE_TIMEOUT_MS', async () => {
    const lifetime = await silentTlsLifetime(server.url, ca, 6000);
    assert.notEqual(lifetime, null, 'the server closed the silent connection');
    assert.ok(lifetime! >= 800, `closed after ${lifetime} ms, not before the timeout`);
  });

  it('a TCP connection that never starts the TLS handshake is closed as well', async () => {
    const { port } = new URL(server.url);
    const closed = await new Promise<boolean>((resolve) => {
      const socket = tcpConnect(Number(port), '127.0.0.1');
      const giveUp = setTimeout(() => (socket.destroy(), resolve(false)), 6000);
      socket.on('error', () => undefined);
      socket.on('close', () => (clearTimeout(giveUp), resolve(true)));
    });
    assert.ok(closed, 'the server closed the connection');
  });

  it('a connection that sends its request in time is served', async () => {
    const res = await send(`${server.url}/healthz`, { ca });
    assert.equal(res.status, 200);
  });
});

describe('MAX_CONNECTIONS (real process over TLS)', () => {
  const dataDir = tempDir('max-conn');
  let server: ServerProcess;
  let ca: string;
  before(async () => {
    server = await startServerProcess({
      DATA_DIR: dataDir,
      HTTP_PORT: 'off',
      MAX_CONNECTIONS: '5',
    });
    ca = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
  });
  after(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses the 6th open connection and logs that the limit was reached, once', async () => {
    const { port } = new URL(server.url);
    const open = (): Promise<TLSSocket | Error> =>
      new Promise((resolve) => {
        const socket = tlsConnect(
          { host: '127.0.0.1', port: Number(port), ca, servername: 'localhost' },
          () => resolve(socket),
        );
        socket.on('error', (err) => resolve(err));
        socket.on('close', () => resolve(new Error('closed before the handshake')));
      });
    const sockets: TLSSocket[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const s = await open();
        assert.ok(!(s instanceof Error), `connection ${i + 1} opens: ${String(s)}`);
        sockets.push(s);
      }
      for (let i = 0; i < 3; i++) {
        const refused = await open();
        assert.ok(refused instanceof Error, 'a connection past the limit is refused');
      }
      const line = await server.waitFor(/connection limit reached/);
      assert.match(line, /MAX_CONNECTIONS/);
      const lines = server.logs().filter((l) => /connection limit reached/.test(l.msg ?? ''));
      assert.equal(lines.length, 1, 'one line, not one per refused connection');
    } finally {
      for (const s of sockets) s.destroy();
    }
    // Below the limit again, connections are served.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const res = await send(`${server.url}/healthz`, { ca });
    assert.equal(res.status, 200);
  });
});
