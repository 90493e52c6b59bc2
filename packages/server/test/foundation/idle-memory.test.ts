import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Pool } from 'undici';
import { operatorNodeFlags, startServerProcess } from './server-process.js';

const MIB = 1024 * 1024;
const dataDir = mkdtempSync(join(tmpdir(), 'coffer-idle-memory-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

/** The young generation's size and the process's resident memory, as `/metrics` reports them. */
async function memory(metricsUrl: string): Promise<{ young: number; rss: number }> {
  const text = await (await fetch(metricsUrl)).text();
  const read = (pattern: RegExp) => {
    const match = pattern.exec(text);
    assert.ok(match, `${pattern} in /metrics`);
    return Number(match[1]);
  };
  return {
    young: read(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)/m),
    rss: read(/^process_resident_memory_bytes (\d+)/m),
  };
}

test('a server run as npm start runs it gives the memory a load grew back once it is idle', async (t) => {
  const flags = operatorNodeFlags();
  assert.ok(flags.includes('--expose-gc'), `npm start's node flags: ${flags.join(' ')}`);
  const server = await startServerProcess(
    {
      DATA_DIR: dataDir,
      TLS: 'off',
      TRUST_PROXY: 'true',
      METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_ANONYMOUS: '1000000',
    },
    [],
    flags,
  );
  t.after(() => server.stop());
  const metricsUrl = /^Coffer metrics on (\S+)/.exec(
    await server.waitFor(/^Coffer metrics on /),
  )![1]!;

  // Requests from 20 connections at once, as the young generation sees them
  // under load: each in flight survives a scavenge or two.
  const pool = new Pool(server.url, { connections: 20 });
  t.after(() => pool.close());
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      for (let i = 0; i < 1_000; i++) {
        const answer = await pool.request({ path: '/v1/projects', method: 'GET' });
        await answer.body.dump();
        assert.equal(answer.statusCode, 401);
      }
    }),
  );
  const loaded = await memory(metricsUrl);
  assert.ok(loaded.young > 4 * MIB, `young generation after the load: ${loaded.young / MIB} MiB`);

  // Idle: within a few of the server's 5 s checks, the young generation is back
  // to its start and the process holds less memory than under the load. (V8
  // sometimes shrinks the young generation by itself first and, on Node 24,
  // keeps its pages until the server's collection returns them: wait for both.)
  let idle = loaded;
  const released = (now: typeof loaded) => now.young <= 2 * MIB && now.rss < loaded.rss;
  for (let waited = 0; waited < 60_000 && !released(idle); waited += 2_000) {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    idle = await memory(metricsUrl);
  }
  assert.ok(idle.young <= 2 * MIB, `young generation when idle: ${idle.young / MIB} MiB`);
  assert.ok(
    idle.rss < loaded.rss,
    `resident memory: ${loaded.rss / MIB} MiB after the load, ${idle.rss / MIB} MiB idle`,
  );
});
