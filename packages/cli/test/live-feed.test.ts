// The change feed (GET /v1/projects/{id}/events) against REAL server
// processes: every event kind and what it never carries, token scopes, a
// revoked token's stream, resuming with Last-Event-ID across a restart, and a
// change through one instance reaching a watcher on another (PostgreSQL and
// Redis). Changes are made with the built `coffer` binary, as a user would.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  reachable,
  serviceMissing,
  startPublicServer,
} from '../../server/test/foundation/server-process.js';
import { ok } from './support/flow.js';
import {
  buildOnce,
  createPostgresDatabase,
  runCli,
  startAgain,
  startServer,
  tempDir,
  userEnv,
  type TestServer,
} from './support/harness.js';
import { openStream, sendJson, type Frame, type OpenStream } from './support/sse.js';

const POSTGRES_URL = process.env.COFFER_TEST_DATABASE_URL || null;
const REDIS_URL = process.env.COFFER_TEST_REDIS_URL || 'redis://127.0.0.1:6379';

const bearerOf = (credential: string) => credential.split('.')[0]!;
const auth = (credential: string) => ({ authorization: `Bearer ${bearerOf(credential)}` });
const history = (s: OpenStream) => s.frames.filter((f) => f.id !== null && !isNotice(f));
const isNotice = (f: Frame) => ['ready', 'reset', 'end'].includes(f.event);

/** A signed-up admin with a project linked in a working directory, on `server`. */
async function adminOn(server: TestServer, project: string) {
  const home = tempDir('feed-home');
  const work = tempDir('feed-work');
  const url = server.url;
  const as = (args: string[], input?: string) =>
    runCli(args, {
      env: { ...userEnv(server, home), COFFER_SERVER: url },
      cwd: work,
      ...(input !== undefined ? { input } : {}),
    });
  const email = `ada-${randomBytes(4).toString('hex')}@example.test`;
  ok(
    await as(
      ['signup', '--email', email, '--name', 'Ada', '--password-stdin'],
      'a long password\n',
    ),
    'signup',
  );
  const created = ok(await as(['projects', 'create', project, '--json']), 'projects create');
  const projectId = (JSON.parse(created.stdout) as { id: string }).id;
  ok(await as(['setup', '--project', projectId, '--env', 'production']), 'setup');
  /** The user's session cookie, as the CLI stored it (what the dashboard would send). */
  const cookie = () => {
    const session = JSON.parse(
      readFileSync(join(home, '.config', 'coffer', 'session.json'), 'utf8'),
    ) as { cookie: string };
    return { cookie: `coffer_session=${session.cookie}` };
  };
  return { as, projectId, cookie };
}

async function apiKey(
  as: (args: string[]) => ReturnType<typeof runCli>,
  name: string,
  role: string,
  scopes: string[],
  extra: string[] = [],
): Promise<string> {
  const args = ['api-keys', 'create', '--name', name, '--role', role, ...extra];
  for (const scope of scopes) args.push('--scope', scope);
  return ok(await as(args), `api-keys create ${name}`).stdout.trim();
}

/** The stream ends with `end` and `reason`, closes, and its credential cannot open another (401). */
async function endsForGood(
  stream: OpenStream,
  reason: string,
  reopen: () => Promise<{ status: number }>,
): Promise<void> {
  const end = await stream.waitFor((f) => f.event === 'end', 15_000, 'end');
  assert.deepEqual(end.data, { type: 'end', reason, reconnect: false });
  await stream.closed;
  assert.equal((await reopen()).status, 401);
}

/** A server of the suite's own (heartbeats every second) with an admin and a project on it. */
function serverWithProject(project: string) {
  const it = {} as { server: TestServer; ca: string; admin: Awaited<ReturnType<typeof adminOn>> };
  before(async () => {
    buildOnce();
    it.server = await startServer({ EVENTS_HEARTBEAT_MS: '1000' });
    it.ca = readFileSync(it.server.caFile, 'utf8');
    it.admin = await adminOn(it.server, project);
  });
  after(async () => it.server?.cleanup());
  return it;
}

/** Revokes the API key named `name` with the admin's `coffer api-keys revoke`. */
async function revokeKey(as: (args: string[]) => ReturnType<typeof runCli>, name: string) {
  const keys = JSON.parse(ok(await as(['api-keys', 'list', '--json']), 'list').stdout) as {
    id: string;
    name: string;
  }[];
  ok(await as(['api-keys', 'revoke', keys.find((k) => k.name === name)!.id]), `revoke ${name}`);
}

describe('the change feed on one server (SQLite)', () => {
  const it = serverWithProject('Feed');

  test('every event kind arrives in order, and none carries a value or a ciphertext', async () => {
    const { server, ca, admin } = it;
    const { as, projectId } = admin;
    const key = await apiKey(as, 'reader', 'developer', ['production:read']);
    // The admin's own session sees every environment, new ones included.
    const stream = await openStream(
      server.url,
      ca,
      `/v1/projects/${projectId}/events`,
      admin.cookie(),
    );
    assert.equal(stream.status, 200);
    assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
    await stream.waitFor((f) => f.event === 'ready', 20_000, 'ready');

    const VALUES = ['sentinel-one-4f1c', 'sentinel-two-9ab2', 'sentinel-three-77d0'];
    ok(await as(['secrets', 'set', 'LOG_LEVEL', VALUES[0]!]), 'set');
    ok(await as(['secrets', 'set', 'LOG_LEVEL', VALUES[1]!]), 'set again');
    ok(
      await as(['secrets', 'import', '-'], `A_ONE=${VALUES[2]}\nA_TWO=${VALUES[2]}\n`),
      'import (one batch)',
    );
    ok(await as(['secrets', 'rollback', 'LOG_LEVEL', '1']), 'rollback');
    ok(await as(['secrets', 'delete', 'A_TWO', '--yes']), 'delete');
    // The ciphertexts as stored, read back with the key: none may appear in the feed.
    const listing = await sendJson(
      server.url,
      ca,
      'GET',
      `/v1/projects/${projectId}/environments/production/secrets`,
      auth(key),
    );
    const envelopes = (listing.body as { data: { value: string }[] }).data.map((s) => s.value);
    assert.ok(envelopes.length >= 2);

    ok(await as(['envs', 'create', 'QA']), 'envs create');
    ok(await as(['envs', 'rename', 'qa', 'UAT']), 'envs rename');
    ok(await as(['envs', 'delete', 'qa', '--yes']), 'envs delete');
    ok(await as(['members', 'invite', 'bob@example.test', '--role', 'developer']), 'invite');
    ok(await as(['members', 'set-role', 'bob@example.test', 'viewer']), 'set-role');
    ok(await as(['members', 'remove', 'bob@example.test']), 'remove');
    ok(await as(['vault', 'rekey']), 'rekey');
    await apiKey(as, 'short-lived', 'developer', ['staging:read']);
    await revokeKey(as, 'short-lived');
    ok(await as(['projects', 'delete', projectId, '--yes']), 'projects delete');

    const end = await stream.waitFor((f) => f.event === 'end', 20_000, 'end');
    assert.deepEqual(end.data, { type: 'end', reason: 'project_deleted', reconnect: false });
    await stream.closed;

    const kinds = history(stream).map((f) => f.event);
    for (const kind of [
      'secrets.changed',
      'environment.created',
      'environment.renamed',
      'environment.deleted',
      'member.added',
      'member.role_changed',
      'member.removed',
      'vault.rekeyed',
      'token.revoked',
      'project.deleted',
    ]) {
      assert.ok(kinds.includes(kind), `${kind} in ${kinds.join(', ')}`);
    }
    // Ids increase; each frame's id line is its JSON id; its event line its type.
    const ids = history(stream).map((f) => Number(f.id));
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => a - b),
    );
    assert.equal(new Set(ids).size, ids.length);
    for (const f of history(stream)) {
      assert.equal(f.data.id, Number(f.id));
      assert.equal(f.data.type, f.event);
    }
    // The batch import is one event naming both secrets.
    const changed = history(stream).filter((f) => f.event === 'secrets.changed');
    assert.deepEqual(
      changed.map((f) => f.data.names),
      [['LOG_LEVEL'], ['LOG_LEVEL'], ['A_ONE', 'A_TWO'], ['LOG_LEVEL'], ['A_TWO']],
    );
    assert.deepEqual(
      (changed[3]!.data.changes as { change: string }[]).map((c) => c.change),
      ['rolled_back'],
    );
    assert.deepEqual(changed[0]!.data.environment, {
      id: (changed[0]!.data.environment as { id: string }).id,
      slug: 'production',
    });
    assert.deepEqual(changed[0]!.data.actor, {
      kind: 'user',
      user_id: (changed[0]!.data.actor as { user_id: string }).user_id,
      name: 'Ada',
    });

    // Never a value, never a ciphertext (nor a long piece of one), in any frame.
    const body = stream.text();
    for (const value of VALUES) assert.ok(!body.includes(value), `a value leaked: ${value}`);
    for (const envelope of envelopes) {
      for (let i = 0; i + 24 <= envelope.length; i += 12) {
        assert.ok(!body.includes(envelope.slice(i, i + 24)), 'a piece of ciphertext leaked');
      }
    }
    assert.doesNotMatch(body, /"value"|"ciphertext"|"wrapped|"envelope"/);
  });
});

describe('the change feed: scopes, revocation, resuming across a restart (SQLite)', () => {
  const it = serverWithProject('Scopes');

  test('a token never receives an event of an environment outside its scopes', async () => {
    const { server, ca, admin } = it;
    const { as, projectId } = admin;
    const stagingOnly = await apiKey(as, 'staging-only', 'developer', ['staging:read']);
    const stream = await openStream(server.url, ca, `/v1/projects/${projectId}/events`, {
      ...auth(stagingOnly),
    });
    await stream.waitFor((f) => f.event === 'ready');
    ok(await as(['secrets', 'set', 'PROD_SECRET', 'p', '--env', 'production']), 'set production');
    ok(await as(['envs', 'rename', 'production', 'Live']), 'rename production');
    ok(await as(['secrets', 'set', 'STAGING_SECRET', 's', '--env', 'staging']), 'set staging');
    ok(await as(['secrets', 'set', 'DEV_SECRET', 'd', '--env', 'development']), 'set development');
    ok(await as(['secrets', 'set', 'STAGING_SECRET', 's2', '--env', 'staging']), 'set staging');
    // The second staging write arrived: everything before it was handed out too.
    await stream.waitFor(
      (f) =>
        f.event === 'secrets.changed' &&
        (f.data.changes as { version: number }[])[0]!.version === 2,
    );
    const seen = history(stream);
    assert.deepEqual(
      seen.map((f) => [f.event, (f.data.environment as { slug: string }).slug]),
      [
        ['secrets.changed', 'staging'],
        ['secrets.changed', 'staging'],
      ],
    );
    assert.ok(!stream.text().includes('PROD_SECRET') && !stream.text().includes('DEV_SECRET'));
    stream.close();

    // Asking for an environment outside its scopes is refused before the stream opens.
    const refused = await sendJson(
      server.url,
      ca,
      'GET',
      `/v1/projects/${projectId}/events?environment=production`,
      auth(stagingOnly),
    );
    assert.equal(refused.status, 403);
    assert.equal((refused.body as { error: { code: string } }).error.code, 'forbidden');
    ok(await as(['envs', 'rename', 'production', 'Production']), 'rename back');
  });

  test('a revoked token’s stream ends, saying why', async () => {
    const { server, ca, admin } = it;
    const { as, projectId } = admin;
    const key = await apiKey(as, 'to-revoke', 'developer', ['staging:read']);
    const stream = await openStream(server.url, ca, `/v1/projects/${projectId}/events`, {
      ...auth(key),
    });
    await stream.waitFor((f) => f.event === 'ready');
    await revokeKey(as, 'to-revoke');
    await endsForGood(stream, 'credential_revoked', () =>
      sendJson(server.url, ca, 'GET', `/v1/projects/${projectId}/events`, auth(key)),
    );
  });

  test('a token’s stream ends when the token expires, saying why', async () => {
    const { server, ca, admin } = it;
    const { as, projectId } = admin;
    const key = await apiKey(as, 'short-lived', 'developer', ['staging:read'], ['--expires', '4s']);
    const stream = await openStream(server.url, ca, `/v1/projects/${projectId}/events`, {
      ...auth(key),
    });
    await stream.waitFor((f) => f.event === 'ready');
    // Checked with each heartbeat (every second on this server), so within a few seconds of the expiry.
    await endsForGood(stream, 'credential_expired', () =>
      sendJson(server.url, ca, 'GET', `/v1/projects/${projectId}/events`, auth(key)),
    );
  });

  test('limits: a credential’s streams beyond EVENTS_MAX_STREAMS_PER_CREDENTIAL get a Form A 429', async () => {
    const { server, ca, admin } = it;
    const { as, projectId } = admin;
    const key = await apiKey(as, 'many', 'developer', ['staging:read']);
    const open: OpenStream[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        const s = await openStream(server.url, ca, `/v1/projects/${projectId}/events`, auth(key));
        assert.equal(s.status, 200);
        open.push(s);
      }
      const refused = await sendJson(
        server.url,
        ca,
        'GET',
        `/v1/projects/${projectId}/events`,
        auth(key),
      );
      assert.equal(refused.status, 429);
      const error = (refused.body as { error: { code: string; details: { issue: string }[] } })
        .error;
      assert.equal(error.code, 'rate_limited');
      assert.equal(error.details[0]!.issue, 'credential_limit');
    } finally {
      for (const s of open) s.close();
    }
  });

  test('a watcher killed and resumed with Last-Event-ID misses nothing across a server restart', async () => {
    const { server, ca, admin } = it;
    const { as, projectId } = admin;
    const key = await apiKey(as, 'resumer', 'developer', ['staging:read']);
    const first = await openStream(server.url, ca, `/v1/projects/${projectId}/events`, auth(key));
    await first.waitFor((f) => f.event === 'ready');
    ok(await as(['secrets', 'set', 'R1', 'one', '--env', 'staging']), 'R1');
    const r1 = await first.waitFor((f) => f.event === 'secrets.changed');
    first.close(); // the watcher is killed

    ok(await as(['secrets', 'set', 'R2', 'two', '--env', 'staging']), 'R2 while away');
    // The server restarts (same data), and another change is made. A stream
    // open meanwhile is ended by the shutdown with a reconnect hint.
    const open = await openStream(server.url, ca, `/v1/projects/${projectId}/events`, auth(key));
    await open.waitFor((f) => f.event === 'ready');
    await server.stop();
    await open.closed;
    const ended = open.frames.at(-1)!;
    assert.deepEqual(ended.data, { type: 'end', reason: 'shutdown', reconnect: true });
    assert.match(ended.raw, /^retry: \d+\n/);
    const restarted = await startAgain(server, { EVENTS_HEARTBEAT_MS: '1000' });
    try {
      ok(await as(['secrets', 'set', 'R3', 'three', '--env', 'staging']), 'R3 after restart');
      ok(await as(['secrets', 'set', 'R1', 'one again', '--env', 'staging']), 'R1 again');
      const resumed = await openStream(server.url, ca, `/v1/projects/${projectId}/events`, {
        ...auth(key),
        'last-event-id': r1.id!,
      });
      await resumed.waitFor((f) => f.event === 'ready');
      assert.deepEqual(
        history(resumed).map((f) => f.data.names),
        [['R2'], ['R3'], ['R1']],
      );
      assert.ok(history(resumed).every((f) => Number(f.id) > Number(r1.id)));
      // ?since= does the same; an id the project never had answers a reset.
      const reset = await openStream(
        server.url,
        ca,
        `/v1/projects/${projectId}/events?since=999999`,
        auth(key),
      );
      const notice = await reset.waitFor((f) => f.event === 'reset');
      assert.equal(notice.data.reason, 'unknown_id');
      resumed.close();
      reset.close();
    } finally {
      restarted.kill('SIGTERM');
      await new Promise((resolve) => restarted.once('exit', resolve));
    }
  });
});

describe('the change feed across two instances (PostgreSQL and Redis)', () => {
  let available = false;
  let servers: { url: string; ca: string; stop(): Promise<void> }[] = [];
  let database: Awaited<ReturnType<typeof createPostgresDatabase>> | null = null;
  before(async () => {
    if (!POSTGRES_URL || !(await reachable(REDIS_URL))) return;
    available = true;
    buildOnce();
    database = await createPostgresDatabase(POSTGRES_URL);
    const env = {
      DATABASE_URL: database.url,
      REDIS_URL,
      REDIS_KEY_PREFIX: `coffer-feed-${randomBytes(6).toString('hex')}:`,
      // No poll to fall back on: only the Redis notification can bring the change.
      EVENTS_POLL_MS: '3600000',
    };
    for (let i = 0; i < 2; i++) {
      const dataDir = tempDir(`feed-pg-${i}`);
      const { child, url } = await startPublicServer(dataDir, env);
      servers.push({
        url,
        ca: readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8'),
        stop: async () => {
          child.kill('SIGTERM');
          await new Promise((resolve) => child.once('exit', resolve));
        },
      });
    }
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    servers = [];
    await database?.drop();
  });

  test('a change written through instance A reaches a watcher on instance B', async (t) => {
    if (!available)
      return serviceMissing(
        t,
        'PostgreSQL (COFFER_TEST_DATABASE_URL) and Redis (COFFER_TEST_REDIS_URL)',
      );
    const [a, b] = servers as [(typeof servers)[0], (typeof servers)[0]];
    const serverA = { url: a.url, caFile: '' } as TestServer;
    const caFile = join(tempDir('feed-ca'), 'a.pem');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(caFile, a.ca);
    serverA.caFile = caFile;
    const admin = await adminOn(serverA, 'Two instances');
    const key = await apiKey(admin.as, 'watcher', 'developer', ['production:read']);
    const onB = await openStream(b.url, b.ca, `/v1/projects/${admin.projectId}/events`, auth(key));
    await onB.waitFor((f) => f.event === 'ready');
    ok(await admin.as(['secrets', 'set', 'CROSS', 'instance']), 'set through A');
    const frame = await onB.waitFor(
      (f) => f.event === 'secrets.changed',
      10_000,
      'the change on B',
    );
    // With the poll an hour away, only Redis can have carried it.
    assert.deepEqual(frame.data.names, ['CROSS']);
    onB.close();
  });
});
