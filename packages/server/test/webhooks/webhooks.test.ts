import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { LOG_RETENTION_MS } from '../../src/domains/webhooks/delivery-worker.js';
import { createTestDb, DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { as, dataOf, errorOf, eventually } from '../support/http.js';
import { addMember } from '../support/projects.js';
import { signUp, type TestUser } from '../support/users.js';
import { projectWithVault, type VaultProject } from '../support/vault.js';
import { createApiKey, putSecret } from '../vault/support.js';
import { startReceiver, type Received, type Receiver } from './receiver.js';

/** Receivers on 127.0.0.1 over http: what the operator switches allow. */
const ALLOW_LOCAL = {
  OUTBOX_POLL_MS: '20',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_RETRY_BASE_MS: '1000',
};

interface Created {
  id: string;
  secret: string;
  url: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Delivery = any;

const headersOf = (r: Received) => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});

for (const dialect of DIALECTS) {
  describe(`webhooks (${dialect})`, () => {
    let t: TestApp;
    let project: VaultProject;
    let admin: TestUser;
    const receivers: Receiver[] = [];

    before(async () => {
      t = await startTestApp(dialect, { env: ALLOW_LOCAL });
      project = await projectWithVault(t);
      admin = project.admin;
    });
    after(async () => {
      await t.close();
      await Promise.all(receivers.map((r) => r.close()));
    });

    const receiver = async (...args: Parameters<typeof startReceiver>) => {
      const r = await startReceiver(...args);
      receivers.push(r);
      return r;
    };
    const create = async (url: string, extra: Record<string, unknown> = {}): Promise<Created> =>
      dataOf(
        await as(t, admin, 'POST', `/v1/projects/${project.id}/webhooks`, { url, ...extra }),
        201,
      );
    const sendTest = async (id: string): Promise<Delivery> =>
      dataOf(await as(t, admin, 'POST', `/v1/projects/${project.id}/webhooks/${id}/test`), 202);
    const deliveries = async (id: string, query = 'order=asc'): Promise<Delivery[]> =>
      dataOf(
        await as(t, admin, 'GET', `/v1/projects/${project.id}/webhooks/${id}/deliveries?${query}`),
        200,
      );
    const deliveryOf = async (hook: string, id: string) =>
      (await deliveries(hook)).find((d) => d.id === id);
    const settled = (hook: string, id: string, status: string) =>
      eventually(async () => {
        const d = await deliveryOf(hook, id);
        return d?.status === status ? d : undefined;
      }, `delivery ${id} ${status}`);

    it('delivers a test event signed as Standard Webhooks do, verified by the reference implementation', async () => {
      const r = await receiver();
      const hook = await create(r.url, { description: 'CI deploys' });
      assert.match(hook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      const shown = dataOf(
        await as(t, admin, 'GET', `/v1/projects/${project.id}/webhooks/${hook.id}`),
        200,
      );
      assert.equal(shown.secret, undefined, 'the secret is shown once, at creation');
      assert.equal(shown.enabled, true);

      const queued = await sendTest(hook.id);
      assert.equal(queued.status, 'pending');
      const done = await settled(hook.id, queued.id, 'delivered');
      assert.equal(r.received.length, 1);
      const [request] = r.received;
      assert.equal(request!.headers['webhook-id'], queued.id);
      assert.equal(request!.headers['content-type'], 'application/json');
      const verified = new Webhook(hook.secret).verify(request!.body, headersOf(request!)) as {
        type: string;
        data: { webhook_id: string; project_id: string };
      };
      assert.equal(verified.type, 'webhook.test');
      assert.equal(verified.data.webhook_id, hook.id);
      assert.equal(verified.data.project_id, project.id);
      // Another secret does not verify it: the check above is not vacuous.
      const other = `whsec_${randomBytes(32).toString('base64')}`;
      assert.throws(
        () => new Webhook(other).verify(request!.body, headersOf(request!)),
        WebhookVerificationError,
      );
      assert.equal(done.attempts, 1);
      assert.equal(done.log.length, 1);
      assert.equal(done.log[0].outcome, 'delivered');
      assert.equal(done.log[0].status_code, 200);
      assert.equal(typeof done.log[0].duration_ms, 'number');
    });

    it('delivers the change feed: a secret write arrives as secrets.changed with names, never a value or ciphertext', async () => {
      const r = await receiver();
      const hook = await create(r.url, { environments: ['production'] });
      const value = `value-${randomBytes(8).toString('hex')}`;
      const written = await putSecret(
        t,
        project,
        admin.headers,
        project.env.production,
        'DATABASE_URL',
        value,
      );
      assert.equal(written.statusCode, 201, written.body);
      // Another environment: outside this webhook's filter.
      await putSecret(t, project, admin.headers, project.env.staging, 'STAGING_ONLY', value);
      await putSecret(t, project, admin.headers, project.env.production, 'LOG_LEVEL', 'debug');
      await eventually(async () => r.received.length >= 2, 'two events delivered');
      const stored = await t.testDb.db.kysely
        .selectFrom('secrets')
        .select('value')
        .where('name', '=', 'DATABASE_URL')
        .executeTakeFirstOrThrow();
      const bodies = r.received.map((q) => {
        const event = new Webhook(hook.secret).verify(q.body, headersOf(q)) as {
          type: string;
          data: { environment: { id: string }; names: string[]; id: number };
        };
        assert.ok(!q.body.includes(value), 'no value');
        assert.ok(!q.body.includes('debug'), 'no value');
        assert.ok(!q.body.includes(stored.value), 'no ciphertext');
        assert.ok(!q.body.includes(stored.value.slice(0, 40)), 'no part of the ciphertext');
        return event;
      });
      assert.deepEqual(
        bodies.map((e) => [e.type, e.data.environment.id, e.data.names]),
        [
          ['secrets.changed', project.env.production.id, ['DATABASE_URL']],
          ['secrets.changed', project.env.production.id, ['LOG_LEVEL']],
        ],
      );
      assert.ok(bodies[0]!.data.id < bodies[1]!.data.id, 'in the feed order');
      const logged = await eventually(async () => {
        const list = await deliveries(hook.id);
        return list.every((d) => d.status === 'delivered') ? list : undefined;
      }, 'both marked delivered');
      assert.deepEqual(
        logged.map((d) => [d.event_kind, d.event_id, d.status]),
        bodies.map((e) => ['secrets.changed', String(e.data.id), 'delivered']),
      );
      // Stored payloads hold no value either.
      const payloads = await t.testDb.db.kysely
        .selectFrom('webhook_deliveries')
        .select('payload')
        .where('webhook_id', '=', hook.id)
        .execute();
      for (const p of payloads)
        assert.ok(!p.payload.includes(value) && !p.payload.includes(stored.value));
    });

    it('sends only the event kinds asked for; a new webhook starts from now', async () => {
      await putSecret(t, project, admin.headers, project.env.development, 'BEFORE', 'x');
      const r = await receiver();
      const hook = await create(r.url, { event_kinds: ['environment.created'] });
      await putSecret(t, project, admin.headers, project.env.development, 'IGNORED', 'x');
      const env = dataOf(
        await as(t, admin, 'POST', `/v1/projects/${project.id}/environments`, { name: 'QA' }),
        201,
      );
      await eventually(async () => r.received.length >= 1, 'the environment event');
      const event = JSON.parse(r.received[0]!.body) as {
        type: string;
        data: { environment: { id: string } };
      };
      assert.equal(event.type, 'environment.created');
      assert.equal(event.data.environment.id, env.id);
      // Give the worker a pass to be sure nothing else follows.
      const d = await sendTest(hook.id);
      await settled(hook.id, d.id, 'delivered');
      assert.deepEqual(
        r.received.map((q) => JSON.parse(q.body).type),
        ['environment.created', 'webhook.test'],
      );
    });

    it('the Node snippet of docs/webhooks.md verifies a real request and refuses a tampered one', async () => {
      const docs = readFileSync(new URL('../../../../docs/webhooks.md', import.meta.url), 'utf8');
      const snippet = /```js\n(import \{ createHmac[\s\S]*?)```/.exec(docs)?.[1];
      assert.ok(snippet, 'the node:crypto snippet is in the docs');
      const file = join(t.testDb.dataDir, 'verify.mjs');
      writeFileSync(file, snippet);
      const { verifyCofferWebhook } = (await import(pathToFileURL(file).href)) as {
        verifyCofferWebhook: (secret: string, headers: object, body: string) => { type: string };
      };
      const r = await receiver();
      const hook = await create(r.url);
      const queued = await sendTest(hook.id);
      await settled(hook.id, queued.id, 'delivered');
      const [request] = r.received;
      assert.equal(
        verifyCofferWebhook(hook.secret, request!.headers, request!.body).type,
        'webhook.test',
      );
      assert.throws(
        () =>
          verifyCofferWebhook(hook.secret, request!.headers, request!.body.replace('test', 'tent')),
        /bad signature/,
      );
    });

    it('retries after the receiver fails (500, then 200): same webhook-id, each attempt in the log', async () => {
      const r = await receiver((n) =>
        n === 0 ? { status: 500, body: 'database down '.repeat(100) } : { status: 204 },
      );
      const hook = await create(r.url);
      const queued = await sendTest(hook.id);
      const failed = await eventually(async () => {
        const d = await deliveryOf(hook.id, queued.id);
        // The row and its log commit together; the row is read first.
        return d?.last_status_code === 500 ? d : undefined;
      }, 'the first attempt logged');
      assert.equal(failed.status, 'pending');
      assert.equal(failed.log[0].outcome, 'failed');
      assert.equal(failed.log[0].status_code, 500);
      assert.ok(failed.log[0].response_excerpt.length <= 200, 'only a short excerpt is kept');
      assert.match(failed.log[0].response_excerpt, /^database down/);
      const wait = Date.parse(failed.next_attempt_at) - t.clock.now().getTime();
      assert.ok(wait >= 500 && wait <= 1000, `first retry after base/2..base, got ${wait} ms`);

      t.clock.advance(1000);
      const done = await settled(hook.id, queued.id, 'delivered');
      assert.deepEqual(
        done.log.map((a: { attempt: number; outcome: string; status_code: number }) => [
          a.attempt,
          a.outcome,
          a.status_code,
        ]),
        [
          [1, 'failed', 500],
          [2, 'delivered', 204],
        ],
      );
      assert.equal(r.received.length, 2);
      assert.equal(r.received[0]!.headers['webhook-id'], r.received[1]!.headers['webhook-id']);
      assert.equal(r.received[0]!.body, r.received[1]!.body, 'the same body each time');
      new Webhook(hook.secret).verify(r.received[1]!.body, headersOf(r.received[1]!));
    });

    it('sends in order per webhook: a later event waits for the one before it', async () => {
      const r = await receiver((n) => (n < 2 ? { status: 503 } : { status: 200 }));
      const hook = await create(r.url);
      const first = await sendTest(hook.id);
      // The failed attempt recorded (its retry scheduled) before the clock moves.
      const failedAttempts = (n: number) =>
        eventually(async () => {
          const d = await deliveryOf(hook.id, first.id);
          return d?.log.length === n && d.last_status_code === 503 ? d : undefined;
        }, `attempt ${n} of the first event recorded`);
      await failedAttempts(1);
      const second = await sendTest(hook.id);
      const third = await sendTest(hook.id);
      // Only the head is attempted while it fails.
      t.clock.advance(1000);
      await failedAttempts(2);
      t.clock.advance(2000);
      await settled(hook.id, third.id, 'delivered');
      const ids = r.received.map((q) => q.headers['webhook-id']);
      assert.deepEqual(ids, [first.id, first.id, first.id, second.id, third.id]);
    });

    it('does not follow redirects: a 3xx is a failed attempt, the target is never called', async () => {
      const target = await receiver();
      const r = await receiver(() => ({ status: 307, headers: { location: target.url } }));
      const hook = await create(r.url);
      const queued = await sendTest(hook.id);
      const d = await eventually(async () => {
        const x = await deliveryOf(hook.id, queued.id);
        return x?.log.length === 1 ? x : undefined;
      }, 'the attempt logged');
      assert.equal(d.log[0].outcome, 'failed');
      assert.equal(d.log[0].status_code, 307);
      assert.match(d.log[0].error, /redirects are not followed/);
      assert.equal(target.received.length, 0);
    });

    it('rotating the secret signs with both during the overlap; either verifies', async () => {
      const r = await receiver();
      const hook = await create(r.url);
      const rotated = dataOf(
        await as(t, admin, 'POST', `/v1/projects/${project.id}/webhooks/${hook.id}/rotate-secret`),
        200,
      );
      assert.notEqual(rotated.secret, hook.secret);
      assert.ok(rotated.previous_secret_expires_at > t.clock.now().toISOString());
      const queued = await sendTest(hook.id);
      await settled(hook.id, queued.id, 'delivered');
      const request = r.received.at(-1)!;
      assert.equal(String(request.headers['webhook-signature']).split(' ').length, 2);
      new Webhook(rotated.secret).verify(request.body, headersOf(request));
      new Webhook(hook.secret).verify(request.body, headersOf(request));

      dataOf(
        await as(t, admin, 'POST', `/v1/projects/${project.id}/webhooks/${hook.id}/rotate-secret`, {
          overlap_seconds: 0,
        }),
        200,
      );
      const again = await sendTest(hook.id);
      await settled(hook.id, again.id, 'delivered');
      assert.equal(String(r.received.at(-1)!.headers['webhook-signature']).split(' ').length, 1);
    });

    it('gives up on a receiver that never answers within WEBHOOK_TIMEOUT_MS', async () => {
      const slow = await startTestApp(dialect, {
        env: { ...ALLOW_LOCAL, WEBHOOK_TIMEOUT_MS: '300' },
      });
      try {
        const owner = await signUp(slow);
        const { id: projectId } = dataOf(
          await as(slow, owner, 'POST', '/v1/projects', { name: 'slow' }),
          201,
        );
        const r = await receiver(() => ({ status: 200, hang: true }));
        const hook: Created = dataOf(
          await as(slow, owner, 'POST', `/v1/projects/${projectId}/webhooks`, { url: r.url }),
          201,
        );
        dataOf(
          await as(slow, owner, 'POST', `/v1/projects/${projectId}/webhooks/${hook.id}/test`),
          202,
        );
        const [d] = await eventually(async () => {
          const list: Delivery[] = dataOf(
            await as(
              slow,
              owner,
              'GET',
              `/v1/projects/${projectId}/webhooks/${hook.id}/deliveries`,
            ),
            200,
          );
          return list[0]?.log.length ? list : undefined;
        }, 'the timed-out attempt');
        assert.equal(d.log[0].outcome, 'failed');
        assert.match(d.log[0].error, /no complete answer within 300 ms/);
      } finally {
        await slow.close();
      }
    });

    it('disables a webhook that fails for the whole retry window, with an audit event', async () => {
      const failing = await startTestApp(dialect, {
        env: {
          ...ALLOW_LOCAL,
          WEBHOOK_RETRY_BASE_MS: '100',
          WEBHOOK_RETRY_WINDOW_SECONDS: '2',
          METRICS_TOKEN: 'metrics-token-for-webhooks',
        },
      });
      try {
        const owner = await signUp(failing);
        const { id: projectId } = dataOf(
          await as(failing, owner, 'POST', '/v1/projects', { name: 'failing' }),
          201,
        );
        const r = await receiver(() => ({ status: 500 }));
        const base = `/v1/projects/${projectId}/webhooks`;
        const hook: Created = dataOf(await as(failing, owner, 'POST', base, { url: r.url }), 201);
        dataOf(await as(failing, owner, 'POST', `${base}/${hook.id}/test`), 202);
        dataOf(await as(failing, owner, 'POST', `${base}/${hook.id}/test`), 202);
        const disabled = await eventually(async () => {
          failing.clock.advance(150);
          const w = dataOf(await as(failing, owner, 'GET', `${base}/${hook.id}`), 200);
          return w.enabled ? undefined : w;
        }, 'the webhook disabled');
        assert.equal(disabled.disabled_reason, 'failing');
        assert.ok(disabled.failing_since);
        const list: Delivery[] = dataOf(
          await as(failing, owner, 'GET', `${base}/${hook.id}/deliveries`),
          200,
        );
        assert.ok(
          list.every((d) => d.status === 'failed'),
          'nothing left queued',
        );
        assert.ok(
          list.some((d) => d.log.length > 2),
          'it was retried before',
        );
        const audit = await failing.testDb.db.kysely
          .selectFrom('audit_events')
          .selectAll()
          .where('action', '=', 'webhook.disabled')
          .where('target_id', '=', hook.id)
          .execute();
        assert.equal(audit.length, 1);
        assert.equal(audit[0]!.actor_id, null);
        assert.equal(JSON.parse(audit[0]!.data).reason, 'failing');
        const metrics = await failing.request({
          method: 'GET',
          url: '/metrics',
          headers: { authorization: 'Bearer metrics-token-for-webhooks' },
        });
        const failed = /^coffer_webhook_failed_attempts_total (\d+)$/m.exec(metrics.body)?.[1];
        assert.ok(Number(failed) > 2, metrics.body);
        assert.match(metrics.body, /^coffer_webhook_deliveries_pending 0$/m);
        // A disabled webhook takes no test event until an admin enables it.
        errorOf(await as(failing, owner, 'POST', `${base}/${hook.id}/test`), 422, 'unprocessable');
        const enabled = dataOf(
          await as(failing, owner, 'PATCH', `${base}/${hook.id}`, { enabled: true }),
          200,
        );
        assert.equal(enabled.disabled_reason, null);
        assert.equal(enabled.failing_since, null);
      } finally {
        await failing.close();
      }
    });

    it('a developer, a viewer and an API key are refused (403); a non-member sees 404', async () => {
      const r = await receiver();
      const hook = await create(r.url);
      const base = `/v1/projects/${project.id}/webhooks`;
      const { user: developer } = await addMember(t, admin, project.id, 'developer');
      const { user: viewer } = await addMember(t, admin, project.id, 'viewer');
      const adminKey = await createApiKey(t, project, 'admin', {});
      const requests: [method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown][] =
        [
          ['GET', base],
          ['POST', base, { url: r.url }],
          ['GET', `${base}/${hook.id}`],
          ['PATCH', `${base}/${hook.id}`, { enabled: false }],
          ['DELETE', `${base}/${hook.id}`],
          ['POST', `${base}/${hook.id}/rotate-secret`],
          ['POST', `${base}/${hook.id}/test`],
          ['GET', `${base}/${hook.id}/deliveries`],
        ];
      for (const caller of [developer, viewer, adminKey.headers]) {
        for (const [method, url, body] of requests) {
          const error = errorOf(await as(t, caller, method, url, body), 403, 'forbidden');
          assert.ok(error.message.length > 0);
        }
      }
      const stranger = await signUp(t);
      errorOf(await as(t, stranger, 'GET', `${base}/${hook.id}`), 404, 'not_found');
      errorOf(await as(t, null, 'GET', base), 401, 'unauthenticated');
      // Still there and unchanged.
      assert.equal(dataOf(await as(t, admin, 'GET', `${base}/${hook.id}`), 200).enabled, true);
    });

    it('changes, lists and deletes; environments by slug are stored as ids; unknown ones are named', async () => {
      const r = await receiver();
      const hook = await create(r.url, {
        environments: ['production'],
        event_kinds: ['secrets.changed'],
      });
      const base = `/v1/projects/${project.id}/webhooks`;
      const shown = dataOf(await as(t, admin, 'GET', `${base}/${hook.id}`), 200);
      assert.deepEqual(shown.environments, [project.env.production.id]);
      assert.deepEqual(shown.event_kinds, ['secrets.changed']);
      const unknown = errorOf(
        await as(t, admin, 'PATCH', `${base}/${hook.id}`, { environments: ['nope'] }),
        422,
        'unprocessable',
      );
      assert.deepEqual(unknown.details[0], {
        field: 'environments.0',
        issue: 'not_found',
        value: 'nope',
      });
      const changed = dataOf(
        await as(t, admin, 'PATCH', `${base}/${hook.id}`, { description: 'ops', enabled: false }),
        200,
      );
      assert.equal(changed.description, 'ops');
      assert.equal(changed.disabled_reason, 'admin');
      const listed = await as(t, admin, 'GET', base);
      assert.ok(dataOf<Created[]>(listed, 200).some((w) => w.id === hook.id));
      assert.ok(!listed.body.includes('whsec_'), 'a listing never holds a secret');
      assert.equal((await as(t, admin, 'DELETE', `${base}/${hook.id}`)).statusCode, 204);
      errorOf(await as(t, admin, 'GET', `${base}/${hook.id}`), 404, 'not_found');
      const actions = (
        await t.testDb.db.kysely
          .selectFrom('audit_events')
          .select(['action', 'data'])
          .where('target_id', '=', hook.id)
          .orderBy('chain_seq')
          .execute()
      ).map((e) => e.action);
      assert.deepEqual(actions, ['webhook.created', 'webhook.updated', 'webhook.deleted']);
    });
  });

  describe(`webhook delivery log retention (${dialect})`, () => {
    it('keeps finished deliveries for 30 days, then forgets them with their attempts', async () => {
      const t = await startTestApp(dialect, { env: ALLOW_LOCAL });
      const r = await startReceiver();
      try {
        const owner = await signUp(t);
        const { id: projectId } = dataOf(
          await as(t, owner, 'POST', '/v1/projects', { name: 'retention' }),
          201,
        );
        const base = `/v1/projects/${projectId}/webhooks`;
        const hook: Created = dataOf(await as(t, owner, 'POST', base, { url: r.url }), 201);
        const queued = dataOf(await as(t, owner, 'POST', `${base}/${hook.id}/test`), 202);
        const stored = (table: 'webhook_deliveries' | 'webhook_attempts') =>
          t.testDb.db.kysely
            .selectFrom(table)
            .select('id')
            .where(table === 'webhook_deliveries' ? 'id' : 'delivery_id', '=', queued.id)
            .execute();
        await eventually(async () => (await stored('webhook_attempts')).length === 1, 'delivered');
        t.clock.advance(LOG_RETENTION_MS - 60_000);
        await new Promise((resolve) => setTimeout(resolve, 200)); // several polls
        assert.equal((await stored('webhook_deliveries')).length, 1, 'kept a minute before');
        t.clock.advance(120_000);
        await eventually(
          async () => (await stored('webhook_deliveries')).length === 0,
          'the delivery forgotten',
        );
        assert.equal((await stored('webhook_attempts')).length, 0, 'its attempts go with it');
      } finally {
        await r.close();
        await t.close();
      }
    });
  });

  describe(`webhook signing secrets at rest (${dialect}, WEBHOOK_SECRET_KEY)`, () => {
    it('are stored encrypted under the key, still sign, and say so when the key is gone', async () => {
      const key = randomBytes(32).toString('base64');
      const testDb = await createTestDb(dialect);
      const t = await startTestApp(dialect, {
        env: { ...ALLOW_LOCAL, WEBHOOK_SECRET_KEY: key },
        testDb,
      });
      const r = await startReceiver();
      try {
        const owner = await signUp(t);
        const { id: projectId } = dataOf(
          await as(t, owner, 'POST', '/v1/projects', { name: 'sealed' }),
          201,
        );
        const base = `/v1/projects/${projectId}/webhooks`;
        const hook: Created = dataOf(await as(t, owner, 'POST', base, { url: r.url }), 201);
        const row = await t.testDb.db.kysely
          .selectFrom('webhooks')
          .select('secret')
          .where('id', '=', hook.id)
          .executeTakeFirstOrThrow();
        assert.match(row.secret, /^aesgcm:/);
        assert.ok(!row.secret.includes(hook.secret.slice('whsec_'.length, 20)));
        dataOf(await as(t, owner, 'POST', `${base}/${hook.id}/test`), 202);
        await eventually(async () => r.received.length === 1, 'the signed test event');
        new Webhook(hook.secret).verify(r.received[0]!.body, headersOf(r.received[0]!));

        // The same database served without the key: the attempt fails and says why.
        await t.close();
        const keyless = await startTestApp(dialect, { env: ALLOW_LOCAL, testDb });
        try {
          dataOf(await as(keyless, owner, 'POST', `${base}/${hook.id}/test`), 202);
          const d = await eventually(async () => {
            const list: Delivery[] = dataOf(
              await as(keyless, owner, 'GET', `${base}/${hook.id}/deliveries`),
              200,
            );
            return list[0]?.log.length ? list[0] : undefined;
          }, 'the failed attempt');
          assert.match(d.log[0].error, /WEBHOOK_SECRET_KEY/);
          assert.equal(r.received.length, 1, 'nothing unsigned was sent');
        } finally {
          await keyless.close();
        }
      } finally {
        await r.close();
        await t.close().catch(() => undefined);
        await testDb.cleanup();
      }
    });
  });

  describe(`webhook addresses (${dialect}, no operator switches)`, () => {
    let t: TestApp;
    let admin: TestUser;
    let projectId: string;
    before(async () => {
      t = await startTestApp(dialect, { env: { OUTBOX_POLL_MS: '20' } });
      admin = await signUp(t);
      projectId = dataOf(await as(t, admin, 'POST', '/v1/projects', { name: 'ssrf' }), 201).id;
    });
    after(async () => t.close());

    const refused = async (url: string, status: number, issue: string) => {
      const error = errorOf(
        await as(t, admin, 'POST', `/v1/projects/${projectId}/webhooks`, { url }),
        status,
      );
      assert.equal(error.details[0].field, 'url', url);
      assert.equal(error.details[0].issue, issue, `${url}: ${error.message}`);
      return error;
    };

    it('refuses loopback, private, link-local, shared, metadata and v4-mapped addresses, naming the reason', async () => {
      const loopback = await refused('https://127.0.0.1/hook', 422, 'loopback_address');
      assert.match(loopback.message, /loopback.*WEBHOOK_ALLOW_PRIVATE=true/);
      await refused('https://localhost:8443/hook', 422, 'loopback_address');
      await refused('https://[::1]/hook', 422, 'loopback_address');
      await refused('https://[::ffff:127.0.0.1]/hook', 422, 'loopback_address');
      await refused('https://[::ffff:a9fe:a9fe]/', 422, 'metadata_address');
      await refused('https://10.1.2.3/', 422, 'private_address');
      await refused('https://192.168.1.10/', 422, 'private_address');
      await refused('https://172.16.0.1/', 422, 'private_address');
      await refused('https://[fd12:3456::1]/', 422, 'private_address');
      await refused('https://169.254.10.10/', 422, 'link_local_address');
      await refused('https://[fe80::1]/', 422, 'link_local_address');
      await refused('https://100.64.0.1/', 422, 'shared_address');
      const metadata = await refused(
        'https://169.254.169.254/latest/meta-data',
        422,
        'metadata_address',
      );
      assert.doesNotMatch(metadata.message, /WEBHOOK_ALLOW_PRIVATE/, 'no switch allows it');
      await refused('https://0.0.0.0/', 422, 'unspecified_address');
      await refused('https://224.0.0.1/', 422, 'multicast_address');
      await refused('https://[64:ff9b::7f00:1]/', 422, 'loopback_address');
    });

    it('requires https unless the operator allows http; refuses credentials in the URL', async () => {
      const http = await refused('http://93.184.215.14/hook', 422, 'https_required');
      assert.match(http.message, /WEBHOOK_ALLOW_HTTP=true/);
      await refused('https://user:pw@93.184.215.14/', 422, 'credentials');
      await refused('ftp://93.184.215.14/', 422, 'scheme');
      await refused('not a url', 400, 'invalid');
      await refused('https://no-such-host.invalid/', 422, 'unresolvable');
    });

    it('checks again at delivery time: a receiver allowed when registered is refused once the operator withdraws the switch', async () => {
      const r = await startReceiver();
      const allowed = await startTestApp(dialect, {
        env: { OUTBOX_POLL_MS: '20', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_ALLOW_HTTP: 'true' },
        testDb: t.testDb,
      });
      let hookId: string;
      try {
        hookId = dataOf(
          await as(allowed, admin, 'POST', `/v1/projects/${projectId}/webhooks`, { url: r.url }),
          201,
        ).id;
      } finally {
        await allowed.close();
      }
      try {
        // This app (no switches) shares the database: the stored URL is refused when sent.
        const base = `/v1/projects/${projectId}/webhooks/${hookId}`;
        dataOf(await as(t, admin, 'POST', `${base}/test`), 202);
        const [d] = await eventually(async () => {
          const list: Delivery[] = dataOf(await as(t, admin, 'GET', `${base}/deliveries`), 200);
          return list[0]?.log.length ? list : undefined;
        }, 'the refused attempt');
        assert.equal(d.log[0].outcome, 'failed');
        assert.match(d.log[0].error, /^refused: /);
        assert.equal(r.received.length, 0, 'nothing reached the receiver');
      } finally {
        await r.close();
      }
    });
  });
}
