import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { LogBuffer } from '../../src/http/log-destination.js';
import { send, startServerProcess, type ServerProcess } from './server-process.js';

/** A destination that keeps each write it receives, as stdout would receive them. */
function collector() {
  const writes: string[] = [];
  return { writes, write: (chunk: string) => writes.push(chunk) };
}

const line = (level: number, msg: string) => `{"level":${level},"msg":"${msg}"}\n`;

describe('the log buffer in front of stdout', () => {
  it('holds info lines and writes them together, in order, after its delay', async () => {
    const target = collector();
    const buffer = new LogBuffer(target, { maxDelayMs: 20 });
    buffer.write(line(30, 'one'));
    buffer.write(line(20, 'two'));
    assert.deepEqual(target.writes, [], 'nothing written while the lines wait for company');
    // Waits for the delay to pass (not a timing assertion: the write must happen at some point).
    for (let i = 0; i < 100 && target.writes.length === 0; i++) await sleep(20);
    assert.deepEqual(target.writes, [line(30, 'one') + line(20, 'two')]);
  });

  it('writes at once when the pending lines reach its size', () => {
    const target = collector();
    const buffer = new LogBuffer(target, { maxBytes: 100, maxDelayMs: 60_000 });
    const long = line(30, 'x'.repeat(40));
    buffer.write(long);
    assert.equal(target.writes.length, 0);
    buffer.write(long);
    buffer.write(line(30, 'after'));
    assert.deepEqual(target.writes, [long + long]);
    buffer.flush();
    assert.deepEqual(target.writes, [long + long, line(30, 'after')]);
  });

  it('writes a warning or worse at once, after every line held before it', () => {
    for (const level of [40, 50, 60, 100]) {
      const target = collector();
      const buffer = new LogBuffer(target, { maxDelayMs: 60_000 });
      buffer.write(line(30, 'before'));
      buffer.write(line(level, 'urgent'));
      assert.deepEqual(
        target.writes,
        [line(30, 'before') + line(level, 'urgent')],
        `level ${level}`,
      );
    }
  });

  it('drops what waits and every later line once closed (its reader went away)', () => {
    const target = collector();
    const buffer = new LogBuffer(target, { maxDelayMs: 60_000 });
    buffer.write(line(30, 'held'));
    buffer.close();
    buffer.write(line(50, 'after'));
    buffer.flush();
    assert.deepEqual(target.writes, []);
  });

  it('never holds a line whose shape it does not know', () => {
    const target = collector();
    const buffer = new LogBuffer(target, { maxDelayMs: 60_000 });
    buffer.write('plain text\n');
    assert.deepEqual(target.writes, ['plain text\n']);
  });
});

describe('the server process writes every log line to stdout (real process)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coffer-log-buffer-'));
  let server: ServerProcess;
  before(
    async () =>
      (server = await startServerProcess({ DATA_DIR: dataDir, TLS: 'off', TRUST_PROXY: 'true' })),
  );
  after(async () => {
    await server.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints where it listens after the log lines written before (Fastify’s own)', () => {
    const { stdout } = server.output();
    const listening = stdout.indexOf('"msg":"Server listening at ');
    assert.ok(listening >= 0, stdout);
    assert.ok(listening < stdout.indexOf('Coffer listening on'), stdout);
  });

  it('writes a request’s access line while it runs, without waiting for more traffic', async () => {
    const res = await send(`${server.url}/healthz`);
    assert.equal(res.status, 200);
    const id = String(res.headers['x-request-id']);
    // Resolves when the line reaches stdout; the test's own timeout bounds the wait.
    const written = await server.waitFor(new RegExp(`"reqId":"${id}".*"request completed"`));
    assert.match(written, /"statusCode":200/);
  });

  it('has written every request’s line when it exits after SIGTERM, the shutdown’s lines last', async () => {
    const ids: string[] = [];
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => send(`${server.url}/healthz`)),
      );
      for (const res of answers) ids.push(String(res.headers['x-request-id']));
    }
    // Signalled right after the last answer: these lines are still in the buffer.
    const exit = await server.stop('SIGTERM');
    assert.equal(exit.code, 0);
    const lines = server.logs();
    for (const id of ids) {
      const mine = lines.filter((l) => l.reqId === id && l.msg === 'request completed');
      assert.equal(mine.length, 1, `one access line for ${id}`);
    }
    const messages = lines.map((l) => l.msg);
    const shutdown = messages.indexOf(
      'shutting down: no new connections, finishing in-flight requests',
    );
    assert.ok(shutdown > 0);
    assert.equal(
      messages.at(-1),
      'in-flight requests finished and database closed; exiting',
      'the exit line is the last one',
    );
    const lastAccess = messages.lastIndexOf('request completed');
    assert.ok(lastAccess < shutdown, 'every access line precedes the shutdown');
  });
});

describe('a server whose stdout is no longer read (real process)', () => {
  it('keeps answering and exits cleanly on SIGTERM, its log lines dropped', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'coffer-log-epipe-'));
    const server = await startServerProcess({ DATA_DIR: dataDir, TLS: 'off', TRUST_PROXY: 'true' });
    try {
      // What `coffer-server start | head -1` does once head has its line: the pipe's reader closes.
      server.child.stdout!.destroy();
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(
          Array.from({ length: 30 }, () => send(`${server.url}/healthz`)),
        );
        assert.deepEqual(
          answers.map((res) => res.status),
          answers.map(() => 200),
        );
        // Past the buffer's delay, so its writes meet the closed pipe.
        await sleep(150);
      }
      const exit = await server.stop('SIGTERM');
      assert.deepEqual(exit, { code: 0, signal: null }, server.output().stderr);
    } finally {
      await server.stop('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
