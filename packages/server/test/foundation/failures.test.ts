import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { DIALECTS, onlyOn } from '../support/db.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { signUp } from '../support/users.js';
import { createProject } from '../support/projects.js';
import { insertBearer } from './credentials.js';
import { LogCapture } from './log-capture.js';
import { realPostgres } from './server-process.js';

/** What a 500 body may say: nothing but the generic message and the request id. */
function assertGeneric500(res: TestResponse): void {
  assert.equal(res.statusCode, 500, res.body);
  const body = res.data as { error: Record<string, unknown> };
  assert.deepEqual(Object.keys(body), ['error']);
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'request_id']);
  assert.equal(body.error.code, 'internal_error');
  assert.equal(body.error.request_id, res.headers['x-request-id']);
  assert.match(String(body.error.message), /^An unexpected error occurred/);
  // Nothing of the cause: table names, SQL, driver names, stack frames, file paths.
  assert.doesNotMatch(
    res.body,
    /projects|api_keys|relation|no such table|select|sqlite|postgres|kysely|stack|\.ts|\bat\b/i,
  );
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    assert.match(String(res.headers[name]), /^\d+$/, name);
  }
}

/** Drops a table under the running app, as an operator's mistake or a failed migration would. */
async function dropTable(t: TestApp, table: string): Promise<void> {
  const cascade = t.testDb.dialect === 'postgres' ? sql` cascade` : sql``;
  await sql`drop table ${sql.table(table)}${cascade}`.execute(t.testDb.db.kysely);
}

for (const dialect of DIALECTS) {
  describe(`unexpected failures (${dialect})`, () => {
    let t: TestApp;
    afterEach(async () => t.close());

    it('a query failing inside a handler is a generic 500, logged with its request id', async () => {
      const logs = new LogCapture();
      t = await startTestApp(dialect, { deps: { logger: logs.options() } });
      const user = await signUp(t);
      await createProject(t, user);
      await dropTable(t, 'projects');

      const res = await t.request({ method: 'GET', url: '/v1/projects', headers: user.headers });
      assertGeneric500(res);
      // The operator gets the cause, under the same request id the client saw.
      const logged = logs.lines.find(
        (l) => l.level >= 50 && l.reqId === res.headers['x-request-id'],
      );
      assert.ok(logged, 'the failure is logged with the request id');
      assert.match(JSON.stringify(logged.err), /projects/);
    });

    it('a failing credential lookup is a generic 500 with the rate-limit headers', async () => {
      t = await startTestApp(dialect);
      const user = await signUp(t);
      const projectId = (await createProject(t, user)).id;
      const token = await insertBearer(t, 'api_key', projectId, user.id);
      await dropTable(t, 'api_keys');
      const res = await t.request({
        method: 'GET',
        url: '/v1/projects',
        // A well-formed key never used before: the resolver must ask the database.
        headers: { authorization: `Bearer ${token}` },
      });
      assertGeneric500(res);
    });

    it('a closed database: 500 for API calls, 503 from /readyz, /healthz still 200', async () => {
      t = await startTestApp(dialect);
      await t.testDb.db.close();
      const res = await t.request({
        method: 'POST',
        url: '/v1/auth/prelogin',
        body: { email: 'someone@example.test' },
      });
      assertGeneric500(res);

      const ready = await t.request({ method: 'GET', url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      const body = ready.data as { error: { code: string; message: string; request_id: string } };
      assert.equal(body.error.code, 'service_unavailable');
      assert.equal(body.error.request_id, ready.headers['x-request-id']);
      assert.doesNotMatch(ready.body, /sqlite|postgres|kysely|destroyed|not open/i);

      const alive = await t.request({ method: 'GET', url: '/healthz' });
      assert.equal(alive.statusCode, 200);
    });
  });
}

describe('PostgreSQL connections ended by the server', onlyOn('postgres'), () => {
  it('a terminated idle connection neither crashes the process nor fails later requests', async (t) => {
    // PGlite runs in-process: it has no connections a server could end.
    const url = realPostgres(t);
    if (!url) return;
    const app = await startTestApp('postgres');
    t.after(() => app.close());
    const user = await signUp(app);
    assert.equal(
      (await app.request({ method: 'GET', url: '/v1/projects', headers: user.headers })).statusCode,
      200,
    );
    // What a PostgreSQL restart or an operator's pg_terminate_backend does to idle connections.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const database = new URL(app.testDb.databaseUrl!).pathname.slice(1);
    const { rows } = await admin.query(
      'select pg_terminate_backend(pid) as ended from pg_stat_activity where datname = $1',
      [database],
    );
    await admin.end();
    assert.ok(rows.length > 0, 'the app had pooled connections to end');

    // The pool notices the ended connections asynchronously; allow it a moment.
    let status = 0;
    for (let attempt = 0; attempt < 20 && status !== 200; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      status = (await app.request({ method: 'GET', url: '/v1/projects', headers: user.headers }))
        .statusCode;
    }
    assert.equal(status, 200);
  });
});
