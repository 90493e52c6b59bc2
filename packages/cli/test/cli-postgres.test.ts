// The CLI's main journey against a server on PostgreSQL (DATABASE_URL set to a
// fresh database), when the environment provides one: COFFER_TEST_DATABASE_URL.
// The same binary and flow as on SQLite, shortened to one sign-up.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  buildOnce,
  createPostgresDatabase,
  pipelineEnv,
  runCli,
  startServer,
  tempDir,
  userEnv,
  type TestServer,
} from './support/harness.js';
import { ok } from './support/flow.js';
import { serviceMissing } from '../../server/test/foundation/server-process.js';

const POSTGRES_URL = process.env.COFFER_TEST_DATABASE_URL;

if (POSTGRES_URL) {
  describe('coffer end to end (PostgreSQL)', () => {
    let database: { url: string; drop(): Promise<void> };
    let server: TestServer;
    let user: Record<string, string>;
    let work: string;
    const as = (args: string[], input?: string) =>
      runCli(args, { env: user, cwd: work, ...(input !== undefined ? { input } : {}) });

    before(async () => {
      buildOnce();
      database = await createPostgresDatabase(POSTGRES_URL);
      server = await startServer({ DATABASE_URL: database.url });
      user = userEnv(server, tempDir('pg-user'));
      work = tempDir('pg-work');
    });
    after(async () => {
      await server?.cleanup();
      await database?.drop();
    });

    test('sign up, project, secrets, .env import, run, and a pipeline with an API key', async () => {
      ok(
        await as(
          ['signup', '--email', 'pg@example.test', '--name', 'PG', '--password-stdin'],
          'a long enough password\n',
        ),
        'signup',
      );
      ok(await as(['projects', 'create', 'On Postgres']), 'projects create');
      ok(await as(['setup', '--project', 'On Postgres', '--env', 'staging']), 'setup');
      ok(await as(['secrets', 'set', 'REDIS_URL', 'redis://cache:6379']), 'set');
      writeFileSync(join(work, '.env'), 'A=1\nB="two words"\n');
      ok(await as(['secrets', 'import', '.env']), 'import');

      const node = process.execPath;
      const script =
        'process.stdout.write([process.env.REDIS_URL, process.env.A, process.env.B].join("|"))';
      const run = ok(await as(['run', '--', node, '-e', script]), 'run');
      assert.equal(run.stdout, 'redis://cache:6379|1|two words');

      const developerKey = ok(
        await as(['api-keys', 'create', '--role', 'developer', '--scope', 'staging:read']),
        'api-keys create',
      ).stdout.trim();
      const withKey = ok(
        await runCli(['run', '--', node, '-e', script], {
          env: pipelineEnv(server, developerKey),
          cwd: tempDir('pg-pipeline'),
        }),
        'pipeline run',
      );
      assert.equal(withKey.stdout, 'redis://cache:6379|1|two words');
    });
  });
} else {
  test('coffer end to end (PostgreSQL)', (t) =>
    serviceMissing(t, 'A real PostgreSQL server (COFFER_TEST_DATABASE_URL)'));
}
