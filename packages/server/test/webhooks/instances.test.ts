import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase, type Db } from '../../src/db/database.js';
import { createTestDb, onlyOn, POSTGRES_URL, type TestDb } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { as, dataOf, eventually } from '../support/http.js';
import { signUp, type TestUser } from '../support/users.js';
import { serviceMissing } from '../foundation/server-process.js';
import { startReceiver, type Receiver } from './receiver.js';

const ENV = {
  OUTBOX_POLL_MS: '10',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_ALLOW_HTTP: 'true',
};

// Two server instances, each with its own connection pool, on one PostgreSQL
// database: both workers poll every 10 ms and race for the same queues. Each
// queue is claimed by one of them at a time, so every delivery is sent once
// and in order.
describe('webhooks on two instances sharing PostgreSQL', onlyOn('postgres'), () => {
  let testDb: TestDb | null = null;
  let second: Db | null = null;
  let a: TestApp;
  let b: TestApp;
  let admin: TestUser;
  const receivers: Receiver[] = [];

  before(async () => {
    if (!POSTGRES_URL) return;
    testDb = await createTestDb('postgres');
    second = await openDatabase({ kind: 'postgres', url: testDb.databaseUrl!, maxConnections: 5 });
    a = await startTestApp('postgres', { env: ENV, testDb });
    b = await startTestApp('postgres', { env: ENV, testDb: { ...testDb, db: second } });
    admin = await signUp(a);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await second?.close();
    await testDb?.cleanup();
    await Promise.all(receivers.map((r) => r.close()));
  });

  it('sends every delivery once, in order per webhook, whichever instance queued it', async (t) => {
    if (!POSTGRES_URL)
      return serviceMissing(t, 'A real PostgreSQL server (COFFER_TEST_DATABASE_URL)');
    const { id: projectId } = dataOf(
      await as(a, admin, 'POST', '/v1/projects', { name: 'two' }),
      201,
    );
    const hooks: { id: string; receiver: Receiver }[] = [];
    for (let i = 0; i < 3; i++) {
      const receiver = await startReceiver(() => ({ status: 200 }));
      receivers.push(receiver);
      const hook = dataOf(
        await as(a, admin, 'POST', `/v1/projects/${projectId}/webhooks`, { url: receiver.url }),
        201,
      );
      hooks.push({ id: hook.id, receiver });
    }
    const queued = new Map<string, string[]>(hooks.map((h) => [h.id, []]));
    for (let n = 0; n < 12; n++) {
      for (const hook of hooks) {
        const app = n % 2 === 0 ? a : b;
        const d = dataOf(
          await as(app, admin, 'POST', `/v1/projects/${projectId}/webhooks/${hook.id}/test`),
          202,
        );
        queued.get(hook.id)!.push(d.id);
      }
    }
    for (const hook of hooks) {
      await eventually(
        async () => hook.receiver.received.length >= 12,
        `12 deliveries to ${hook.id}`,
      );
      // Let a duplicate, if any, arrive before counting.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const ids = hook.receiver.received.map((r) => r.headers['webhook-id']);
      assert.deepEqual(ids, queued.get(hook.id), 'each once, in the order queued');
    }
  });
});
