import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { prepareSignUp, ready } from '@coffer/sdk';
import { createTestDb, onlyOn } from '../support/db.js';
import { TEST_KDF_COST } from '../support/users.js';
import { send, realPostgres, startServerProcess, type ServerProcess } from './server-process.js';

const ENV = {
  KDF_MIN_OPS: '1',
  KDF_MIN_MEM_KIB: '8192',
  RATE_LIMIT_SESSION: '100000',
  RATE_LIMIT_AUTH: '100000',
  LOG_LEVEL: 'warn',
};

const WRITES = 40;
/** Killed as soon as this many writes are acknowledged; the rest are in flight. */
const KILL_AFTER = 25;

async function logIn(server: ServerProcess, ca: string, email: string, authKey: string) {
  const res = await send(`${server.url}/v1/auth/login`, {
    method: 'POST',
    ca,
    body: { email, auth_key: authKey },
  });
  assert.equal(res.status, 200, res.body);
  const cookie = String(res.headers['set-cookie']).split(';')[0]!;
  return { cookie, origin: server.url };
}

/**
 * Acknowledged writes over HTTPS, `kill -9` while more are in flight, restart on
 * the same storage: every write that got its 201 is there.
 */
async function survivesKill(env: Record<string, string>, dataDir: string): Promise<void> {
  await ready();
  let server = await startServerProcess({ ...ENV, ...env, DATA_DIR: dataDir });
  const ca = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
  const email = `durable-${process.pid}@example.test`;
  const { body } = prepareSignUp({
    email,
    name: 'Durable',
    password: 'pw-durable',
    kdfCost: TEST_KDF_COST,
  });
  const signup = await send(`${server.url}/v1/auth/signup`, { method: 'POST', ca, body });
  assert.equal(signup.status, 201, signup.body);
  const session = await logIn(server, ca, email, body.auth_key);

  const acknowledged: string[] = [];
  let killed!: Promise<unknown>;
  const killedOnce = new Promise<void>((resolve) => {
    const writes = Array.from({ length: WRITES }, (_, i) =>
      send(`${server.url}/v1/projects`, {
        method: 'POST',
        ca,
        headers: session,
        body: { name: `durable ${i}` },
      }).then(
        (res) => {
          if (res.status !== 201) return;
          acknowledged.push((res.json as { data: { id: string } }).data.id);
          if (acknowledged.length === KILL_AFTER) {
            killed = server.stop('SIGKILL');
            resolve();
          }
        },
        () => undefined, // cut by the kill: never acknowledged
      ),
    );
    void Promise.all(writes).then(() => resolve());
  });
  await killedOnce;
  const exit = (await killed) as { signal: string | null };
  assert.equal(exit.signal, 'SIGKILL');
  const seen = [...acknowledged];
  assert.ok(seen.length >= KILL_AFTER);

  server = await startServerProcess({ ...ENV, ...env, DATA_DIR: dataDir });
  try {
    const again = await logIn(server, ca, email, body.auth_key);
    const list = await send(`${server.url}/v1/projects?per_page=100`, { ca, headers: again });
    assert.equal(list.status, 200, list.body);
    const stored = new Set((list.json as { data: { id: string }[] }).data.map((p) => p.id));
    const lost = seen.filter((id) => !stored.has(id));
    assert.deepEqual(lost, [], `${lost.length} of ${seen.length} acknowledged writes lost`);
  } finally {
    await server.stop();
  }
}

describe('durability: acknowledged writes survive kill -9 (real process)', () => {
  it('SQLite (the embedded default)', onlyOn('sqlite'), async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'coffer-durable-'));
    try {
      await survivesKill({}, dataDir);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('PostgreSQL (DATABASE_URL)', onlyOn('postgres'), async (t) => {
    if (!realPostgres(t)) return;
    const database = await createTestDb('postgres');
    try {
      await survivesKill({ DATABASE_URL: database.databaseUrl! }, database.dataDir);
    } finally {
      await database.cleanup();
    }
  });
});
