// `coffer webhooks` on the REAL built binary against a REAL server process, on
// SQLite and (when COFFER_TEST_DATABASE_URL is set) PostgreSQL: a receiver on
// 127.0.0.1 (allowed by the operator switches) gets the change feed's events
// signed as Standard Webhooks do, verified here by the reference
// implementation; a failing receiver is retried and each attempt is logged.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  buildOnce,
  createPostgresDatabase,
  runCli,
  startServer,
  tempDir,
  userEnv,
  type TestServer,
} from './support/harness.js';
import { errorLine, ok, signUpAndSetUp } from './support/flow.js';
import { serviceMissing } from '../../server/test/foundation/server-process.js';
import { startReceiver, type Receiver } from '../../server/test/webhooks/receiver.js';
import { eventually } from '../../server/test/support/http.js';
import { DIALECTS } from '../../server/test/support/db.js';

const POSTGRES_URL = process.env.COFFER_TEST_DATABASE_URL;

const SWITCHES = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_ALLOW_HTTP: 'true',
  // Long enough for the CLI to see the first attempt fail before the retry.
  WEBHOOK_RETRY_BASE_MS: '2000',
  OUTBOX_POLL_MS: '100',
};

for (const dialect of DIALECTS) {
  describe(`coffer webhooks (${dialect}, real server process)`, () => {
    let database: { url: string; drop(): Promise<void> } | null = null;
    let server: TestServer;
    let user: Record<string, string>;
    let work: string;
    let receiver: Receiver;
    const as = (args: string[], input?: string) =>
      runCli(args, { env: user, cwd: work, ...(input !== undefined ? { input } : {}) });

    before(async () => {
      if (dialect === 'postgres' && !POSTGRES_URL) return;
      buildOnce();
      if (dialect === 'postgres') database = await createPostgresDatabase(POSTGRES_URL!);
      server = await startServer({
        ...SWITCHES,
        ...(database ? { DATABASE_URL: database.url } : {}),
      });
      user = userEnv(server, tempDir('hooks-user'));
      work = tempDir('hooks-work');
      // The third request fails once: the retry is part of the journey.
      receiver = await startReceiver((n) =>
        n === 2 ? { status: 500, body: 'try again later' } : { status: 200, body: 'ok' },
      );
      await signUpAndSetUp(
        as,
        { email: `hooks-${dialect}@example.test`, name: 'Hook', password: 'hooks password 1' },
        'Hooks',
        'production',
      );
    });
    after(async () => {
      await receiver?.close();
      await server?.cleanup();
      await database?.drop();
    });

    test('create, receive a secret change and a test event, retry, rotate, disable, delete', async (t) => {
      if (dialect === 'postgres' && !POSTGRES_URL) {
        serviceMissing(t, 'A real PostgreSQL server (COFFER_TEST_DATABASE_URL)');
        return;
      }
      const created = JSON.parse(
        ok(
          await as([
            'webhooks',
            'create',
            receiver.url,
            '--env',
            'production',
            '--event',
            'secrets.changed',
            '--description',
            'deploys',
            '--json',
          ]),
          'webhooks create',
        ).stdout,
      ) as { id: string; secret: string; environments: string[] };
      assert.match(created.secret, /^whsec_/);
      assert.equal(created.environments.length, 1);

      ok(await as(['secrets', 'set', 'API_TOKEN', 'a-secret-value-123']), 'secrets set');
      await eventually(async () => receiver.received.length === 1, 'the secrets.changed event');
      const [first] = receiver.received;
      const event = new Webhook(created.secret).verify(first!.body, {
        'webhook-id': String(first!.headers['webhook-id']),
        'webhook-timestamp': String(first!.headers['webhook-timestamp']),
        'webhook-signature': String(first!.headers['webhook-signature']),
      }) as { type: string; data: { names: string[] } };
      assert.equal(event.type, 'secrets.changed');
      assert.deepEqual(event.data.names, ['API_TOKEN']);
      assert.ok(!first!.body.includes('a-secret-value-123'));

      const tested = ok(await as(['webhooks', 'test', created.id]), 'webhooks test');
      assert.match(tested.stderr, /Delivered whd_\w+: 200/);

      // The third request is refused once (500): the CLI says so, the server retries.
      const failed = await as(['webhooks', 'test', created.id]);
      const line = errorLine(failed, 1, 'webhook_failed');
      assert.match(line, /500 .*try again later/);
      const log = await eventually(async () => {
        const listed = JSON.parse(
          ok(await as(['webhooks', 'deliveries', created.id, '--json']), 'deliveries').stdout,
        ) as { status: string; log: { outcome: string; status_code: number }[] }[];
        return listed[0]?.status === 'delivered' ? listed : undefined;
      }, 'the retried test event delivered');
      assert.deepEqual(
        log[0]!.log.map((a) => [a.outcome, a.status_code]),
        [
          ['failed', 500],
          ['delivered', 200],
        ],
      );
      assert.equal(log.length, 3, 'the secret change and two test events');
      const table = ok(await as(['webhooks', 'deliveries', created.id]), 'deliveries table');
      assert.match(table.stdout, /webhook\.test\s+delivered\s+2\s+200/);

      const rotated = JSON.parse(
        ok(
          await as(['webhooks', 'rotate-secret', created.id, '--overlap', '1h', '--json']),
          'rotate',
        ).stdout,
      ) as { secret: string; previous_secret_expires_at: string };
      assert.notEqual(rotated.secret, created.secret);
      assert.ok(rotated.previous_secret_expires_at);

      const listed = ok(await as(['webhooks', 'list']), 'list');
      assert.match(listed.stdout, new RegExp(`${created.id}\\s+${receiver.url}\\s+enabled`));
      ok(await as(['webhooks', 'update', receiver.url, '--disable']), 'disable by URL');
      const shown = ok(await as(['webhooks', 'get', created.id]), 'get');
      assert.match(shown.stdout, /state\s+disabled/);
      errorLine(await as(['webhooks', 'update', created.id]), 2, 'usage');
      errorLine(await as(['webhooks', 'delete', created.id]), 1, 'confirmation_required');
      ok(await as(['webhooks', 'delete', created.id, '--yes']), 'delete');
      assert.equal(
        JSON.parse(ok(await as(['webhooks', 'list', '--json']), 'list').stdout).length,
        0,
      );
    });
  });
}
