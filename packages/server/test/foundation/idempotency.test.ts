import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { serialize } from 'node:v8';
import { request as httpRequest, Agent } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { newIdempotencyKey } from '@coffer/sdk';
import {
  idempotencyService,
  keyLookup,
} from '../../src/domains/idempotency/idempotency.service.js';
import { hexOf, lookupBytes } from '../../src/domains/idempotency/idempotency.repo.js';
import {
  bodyStrings,
  fromClearJson,
  fromShaped,
  liftBodyStrings,
  requestStrings,
  SHAPED_MARK,
  toClearJson,
} from '../../src/domains/idempotency/body-strings.js';
import {
  PUT_RESULT_SHAPE,
  REMOVE_RESULT_SHAPE,
} from '../../src/domains/secrets/secrets.service.js';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { as, dataOf } from '../support/http.js';
import { logIn, signUp } from '../support/users.js';
import { envelope, projectWithVault, type VaultProject } from '../support/vault.js';
import { tokenRequest } from '../vault/support.js';

const newKey = () => randomBytes(24).toString('base64url');

/** What a client compares between two answers: status and body. */
const answerOf = (res: { statusCode: number; body: string }) => ({
  status: res.statusCode,
  body: res.body,
});

for (const dialect of DIALECTS) {
  describe(`${dialect}: Idempotency-Key on unsafe requests`, () => {
    let t: TestApp;
    let project: VaultProject;
    before(async () => {
      t = await startTestApp(dialect);
      project = await projectWithVault(t);
    });
    after(() => t.close());

    const send = (
      method: 'POST' | 'PUT' | 'PATCH' | 'DELETE',
      url: string,
      body: unknown,
      key: string,
      headers: Record<string, string> = project.admin.headers,
    ): Promise<TestResponse> =>
      t.request({
        method,
        url,
        headers: { ...headers, 'idempotency-key': key },
        ...(body !== undefined ? { body: body as object } : {}),
      });
    const secretPath = (env: string, name: string) =>
      `/v1/projects/${project.id}/environments/${env}/secrets/${name}`;
    const versionsOf = async (env: string, name: string) =>
      dataOf<unknown[]>(await as(t, project.admin, 'GET', `${secretPath(env, name)}/versions`), 200)
        .length;

    it('a PUT sent twice is executed once and answered identically', async () => {
      const env = project.env.development.id;
      const body = { value: envelope(project, env, 'TWICE', 'v') };
      const key = newKey();
      const first = await send('PUT', secretPath(env, 'TWICE'), body, key);
      const second = await send('PUT', secretPath(env, 'TWICE'), body, key);
      assert.equal(first.statusCode, 201, first.body);
      assert.deepEqual(answerOf(second), answerOf(first));
      assert.equal(second.headers['idempotent-replayed'], 'true');
      assert.equal(first.headers['idempotent-replayed'], undefined);
      assert.equal(await versionsOf(env, 'TWICE'), 1);
      // A new key is a new write.
      const third = await send('PUT', secretPath(env, 'TWICE'), body, newKey());
      assert.equal(third.statusCode, 200, third.body);
      assert.equal(await versionsOf(env, 'TWICE'), 2);
    });

    it('a comment with quotes, backslashes and other scripts is stored and replayed exactly', async () => {
      const env = project.env.development.id;
      // Shorter than the body strings left out of the row: it is in the row's JSON.
      const comment = `it's \\ "q" \\u0000 ü秘'); --`;
      const body = { value: envelope(project, env, 'QUOTED', 'v'), comment };
      const key = newKey();
      const first = await send('PUT', secretPath(env, 'QUOTED'), body, key);
      assert.equal(first.statusCode, 201, first.body);
      assert.equal(dataOf<{ comment: string }>(first, 201).comment, comment);
      const again = await send('PUT', secretPath(env, 'QUOTED'), body, key);
      assert.deepEqual(answerOf(again), answerOf(first));
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(await versionsOf(env, 'QUOTED'), 1);
      const row = await t.testDb.db.kysely
        .selectFrom('idempotency_keys')
        .select('result')
        .where('lookup', '=', lookupBytes(keyLookup(`user:${project.admin.id}`, key)))
        .executeTakeFirstOrThrow();
      assert.ok(row.result!.includes(JSON.stringify(comment).slice(1, -1)), row.result!);
    });

    it("a secret write's key does not store the value again: the repeat's body gives it back", async () => {
      const env = project.env.development.id;
      const body = { value: envelope(project, env, 'LARGE', 'v'.repeat(4000)) };
      const key = newKey();
      const first = await send('PUT', secretPath(env, 'LARGE'), body, key);
      assert.equal(first.statusCode, 201, first.body);
      const stored = await t.testDb.db.kysely
        .selectFrom('idempotency_keys')
        .select((eb) => eb.fn.max(eb.fn('length', ['result'])).as('longest'))
        .executeTakeFirstOrThrow();
      assert.ok(Number(stored.longest) < 2000, `a stored result of ${stored.longest} characters`);
      const second = await send('PUT', secretPath(env, 'LARGE'), body, key);
      assert.deepEqual(answerOf(second), answerOf(first));
      assert.equal(second.headers['idempotent-replayed'], 'true');
    });

    it('a repeat after another write changed the secret gets the first answer and changes nothing', async () => {
      const env = project.env.development.id;
      const key = newKey();
      const body = { value: envelope(project, env, 'MOVED', 'v1'), expected_version: 0 };
      const first = await send('PUT', secretPath(env, 'MOVED'), body, key);
      assert.equal(first.statusCode, 201, first.body);
      const value = { value: envelope(project, env, 'MOVED', 'v2') };
      const other = await send('PUT', secretPath(env, 'MOVED'), value, newKey());
      assert.equal(other.statusCode, 200, other.body);
      // Run again, this write would now be refused (expected_version 0): it is answered as the first time.
      const again = await send('PUT', secretPath(env, 'MOVED'), body, key);
      assert.deepEqual(answerOf(again), answerOf(first));
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(await versionsOf(env, 'MOVED'), 2);
      // A repeated DELETE of a secret it deleted: 204 again, not 404.
      const deleteKey = newKey();
      const deleted = await send('DELETE', secretPath(env, 'MOVED'), undefined, deleteKey);
      assert.equal(deleted.statusCode, 204, deleted.body);
      const deletedAgain = await send('DELETE', secretPath(env, 'MOVED'), undefined, deleteKey);
      assert.deepEqual(answerOf(deletedAgain), answerOf(deleted));
      assert.equal(deletedAgain.headers['idempotent-replayed'], 'true');
    });

    it("what a key's row holds: a secret write's metadata in clear, a rollback's and an API key's result sealed", async () => {
      const env = project.env.staging.id;
      const base = `/v1/projects/${project.id}/environments/${env}/secrets`;
      const rowFor = (key: string) =>
        t.testDb.db.kysely
          .selectFrom('idempotency_keys')
          .select(['result', 'created_at'])
          .where('lookup', '=', lookupBytes(keyLookup(`user:${project.admin.id}`, key)))
          .executeTakeFirstOrThrow();
      const storedFor = async (key: string) => (await rowFor(key)).result!;
      const v1 = envelope(project, env, 'STORED', 'first');
      const putKey = newKey();
      const putBody = { value: v1, comment: 'kept' };
      const put = await send('PUT', `${base}/STORED`, putBody, putKey);
      assert.equal(put.statusCode, 201, put.body);
      // In clear, by position (PUT_RESULT_SHAPE): the values without their
      // property names, the strings the request itself holds (the value, the
      // environment's id from the URL, the time) as marks (DEL and an index).
      const clear = await storedFor(putKey);
      const prefix = `~@${PUT_RESULT_SHAPE.name}[`;
      assert.ok(clear.startsWith(prefix), clear);
      const values = JSON.parse(clear.slice(prefix.length - 1)) as unknown[];
      const at = (path: string) => values[PUT_RESULT_SHAPE.paths.indexOf(`result.secret.${path}`)];
      assert.equal(values.length, PUT_RESULT_SHAPE.paths.length);
      assert.equal(at('name'), 'STORED');
      assert.equal(at('comment'), 'kept');
      assert.equal(at('version'), 1);
      assert.match(String(at('id')), /^sec_/);
      for (const marked of ['value', 'environment_id', 'created_at', 'updated_at'])
        assert.match(String(at(marked)), /^\x7f\d+$/, `${marked} is taken from the repeat`);
      for (const name of ['"environment_id"', '"comment"', '"secret"', 'auditChain'])
        assert.ok(!clear.includes(name), `${name} stored`);
      assert.ok(!clear.includes(v1.slice(0, 40)) && !clear.includes(v1.slice(-40)));
      assert.ok(clear.length < 120, `${clear.length} characters`);
      const putAgain = await send('PUT', `${base}/STORED`, putBody, putKey);
      assert.deepEqual(answerOf(putAgain), answerOf(put));
      // Rows in the earlier clear formats still replay: JSON with NUL marks
      // (`~`), and a dot and base64 of the serialization without the body's
      // strings (`.`).
      const { created_at } = await rowFor(putKey);
      const strings = requestStrings(putBody, `${base}/STORED`, created_at);
      const full = fromShaped(
        fromClearJson(clear.slice(prefix.length - 1), strings, SHAPED_MARK),
        PUT_RESULT_SHAPE,
      );
      const lifted = liftBodyStrings(full, bodyStrings(putBody));
      for (const earlier of [
        '~' + toClearJson(full, strings),
        '.' + serialize([lifted.value, lifted.refs]).toString('base64'),
      ]) {
        await t.testDb.db.kysely
          .updateTable('idempotency_keys')
          .set({ result: earlier })
          .where('lookup', '=', lookupBytes(keyLookup(`user:${project.admin.id}`, putKey)))
          .execute();
        const putOld = await send('PUT', `${base}/STORED`, putBody, putKey);
        assert.deepEqual(answerOf(putOld), answerOf(put));
        assert.equal(putOld.headers['idempotent-replayed'], 'true');
      }
      // A shape this server does not know (a newer server's): the write is not
      // run again, and the client is told to read the resource instead.
      await t.testDb.db.kysely
        .updateTable('idempotency_keys')
        .set({ result: clear.replace(PUT_RESULT_SHAPE.name, 'secret-put.999') })
        .where('lookup', '=', lookupBytes(keyLookup(`user:${project.admin.id}`, putKey)))
        .execute();
      const unknownShape = await send('PUT', `${base}/STORED`, putBody, putKey);
      assert.equal(unknownShape.statusCode, 409, unknownShape.body);
      assert.match(unknownShape.body, /request_in_progress/);
      assert.equal(await versionsOf(env, 'STORED'), 1);

      // A removal's result is nothing: its row holds the environment's id, marked.
      const removeKey = newKey();
      assert.equal((await send('PUT', `${base}/GONE`, putBody, newKey())).statusCode, 201);
      const removed = await send('DELETE', `${base}/GONE`, undefined, removeKey);
      assert.equal(removed.statusCode, 204, removed.body);
      assert.equal(await storedFor(removeKey), `~@${REMOVE_RESULT_SHAPE.name}["\x7f5"]`);
      const removedAgain = await send('DELETE', `${base}/GONE`, undefined, removeKey);
      assert.deepEqual(answerOf(removedAgain), answerOf(removed));
      assert.equal(removedAgain.headers['idempotent-replayed'], 'true');

      // A rollback answers with an earlier version's ciphertext, which its body
      // does not hold: sealed, and nothing of that ciphertext readable in the row.
      const v2 = envelope(project, env, 'STORED', 'second');
      assert.equal((await send('PUT', `${base}/STORED`, { value: v2 }, newKey())).statusCode, 200);
      const rollbackKey = newKey();
      const rollback = await send('POST', `${base}/STORED/rollback`, { version: 1 }, rollbackKey);
      assert.equal(rollback.statusCode, 200, rollback.body);
      assert.equal(dataOf<{ value: string }>(rollback, 200).value, v1);
      const sealed = await storedFor(rollbackKey);
      assert.match(sealed, /^[0-9A-Za-z+/=]+$/);
      const opened = Buffer.from(sealed, 'base64');
      for (const part of [v1.slice(0, 24), v1.slice(-24), 'STORED'])
        assert.ok(!opened.includes(part) && !sealed.includes(part), `${part} readable in the row`);
      const rollbackAgain = await send(
        'POST',
        `${base}/STORED/rollback`,
        { version: 1 },
        rollbackKey,
      );
      assert.deepEqual(answerOf(rollbackAgain), answerOf(rollback));
      assert.equal(rollbackAgain.headers['idempotent-replayed'], 'true');

      // A new API key's bearer part is shown once: sealed too.
      const apiKeyKey = newKey();
      const token = tokenRequest(project, 'key', { [env]: 'read' });
      const body = { ...token.body, name: 'stored sealed', role: 'developer' };
      const created = await send('POST', `/v1/projects/${project.id}/api-keys`, body, apiKeyKey);
      const { bearer } = dataOf<{ bearer: string }>(created, 201);
      const apiKeySealed = await storedFor(apiKeyKey);
      assert.match(apiKeySealed, /^[0-9A-Za-z+/=]+$/);
      assert.ok(!Buffer.from(apiKeySealed, 'base64').includes(bearer.slice(-16)));
      const createdAgain = await send(
        'POST',
        `/v1/projects/${project.id}/api-keys`,
        body,
        apiKeyKey,
      );
      assert.deepEqual(answerOf(createdAgain), answerOf(created));
    });

    it("a key that starts with its time (the SDK's) is stored under that time, and still replays", async () => {
      const env = project.env.development.id;
      const body = { value: envelope(project, env, 'TIMED', 'v') };
      const made = Date.now();
      const timed = newIdempotencyKey(made);
      const [first, second] = [
        await send('PUT', secretPath(env, 'TIMED'), body, timed),
        await send('PUT', secretPath(env, 'TIMED'), body, timed),
      ];
      assert.equal(first.statusCode, 201, first.body);
      assert.deepEqual(answerOf(second), answerOf(first));
      assert.equal(second.headers['idempotent-replayed'], 'true');
      const random = newKey();
      assert.equal((await send('PUT', secretPath(env, 'TIMED'), body, random)).statusCode, 200);
      const rows = await t.testDb.db.kysely
        .selectFrom('idempotency_keys')
        .select('lookup')
        .where('lookup', 'in', [
          lookupBytes(keyLookup(`user:${project.admin.id}`, timed)),
          lookupBytes(keyLookup(`user:${project.admin.id}`, random)),
        ])
        .execute();
      const lookups = rows.map((r) => hexOf(r.lookup)).sort((a, b) => a.length - b.length);
      assert.equal(lookups.length, 2, 'one row per key');
      // A random key: SHA-256 alone. A timed one: its time first, so rows go in time order.
      assert.match(lookups[0]!, /^[0-9a-f]{64}$/);
      assert.match(lookups[1]!, /^[0-9a-f]{76}$/);
      assert.equal(parseInt(lookups[1]!.slice(0, 12), 16), made);
      // Only the time is taken from the key: nothing of its random part is stored.
      const randomPart = timed.slice(13);
      const all = await t.testDb.db.kysely.selectFrom('idempotency_keys').selectAll().execute();
      for (const row of all) {
        const stored = [hexOf(row.lookup), hexOf(row.fingerprint), row.result, row.created_at];
        assert.ok(!stored.join(' ').includes(randomPart.slice(0, 8)));
      }
    });

    it('the same key with another body, method or URL is refused: 422 idempotency_key_reused', async () => {
      const env = project.env.development.id;
      const key = newKey();
      const first = await send(
        'PUT',
        secretPath(env, 'REUSED'),
        { value: envelope(project, env, 'REUSED', 'a') },
        key,
      );
      assert.equal(first.statusCode, 201, first.body);
      for (const [method, url, body] of [
        ['PUT', secretPath(env, 'REUSED'), { value: envelope(project, env, 'REUSED', 'b') }],
        ['PUT', secretPath(env, 'OTHER'), { value: envelope(project, env, 'OTHER', 'a') }],
        ['DELETE', secretPath(env, 'REUSED'), undefined],
      ] as const) {
        const res = await send(method, url, body, key);
        assert.equal(res.statusCode, 422, res.body);
        const error = (res.data as { error: { code: string; details: unknown } }).error;
        assert.equal(error.code, 'idempotency_key_reused');
      }
      assert.equal(await versionsOf(env, 'REUSED'), 1);
      const other = await as(t, project.admin, 'GET', `${secretPath(env, 'OTHER')}/versions`);
      assert.equal(other.statusCode, 404, other.body);
    });

    it('a repeat is compared by its bytes: the same JSON written otherwise is another request', async () => {
      const env = project.env.development.id;
      const url = secretPath(env, 'BYTES');
      const value = { value: envelope(project, env, 'BYTES', 'v') };
      const key = newKey();
      const sendText = (payload: string) =>
        t.request({
          method: 'PUT',
          url,
          headers: {
            ...project.admin.headers,
            'content-type': 'application/json',
            'idempotency-key': key,
          },
          payload,
        });
      const spaced = JSON.stringify(value, null, 2);
      const first = await sendText(spaced);
      assert.equal(first.statusCode, 201, first.body);
      const repeat = await sendText(spaced);
      assert.deepEqual(answerOf(repeat), answerOf(first));
      assert.equal(repeat.headers['idempotent-replayed'], 'true');
      const compact = await sendText(JSON.stringify(value));
      assert.equal(compact.statusCode, 422, compact.body);
      assert.equal(
        (compact.data as { error: { code: string } }).error.code,
        'idempotency_key_reused',
      );
      assert.equal(await versionsOf(env, 'BYTES'), 1);
      // Bodies are parsed as before: a `__proto__` key is refused.
      const poisoned = await sendText('{"__proto__": {"x": 1}, "value": "v"}');
      assert.equal(poisoned.statusCode, 400, poisoned.body);
    });

    it('sent concurrently (ten at once): executed once, every answer identical', async () => {
      const env = project.env.staging.id;
      const body = { value: envelope(project, env, 'RACE', 'v') };
      const key = newKey();
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => send('PUT', secretPath(env, 'RACE'), body, key)),
      );
      assert.equal(answers[0]!.statusCode, 201, answers[0]!.body);
      for (const a of answers) assert.deepEqual(answerOf(a), answerOf(answers[0]!));
      assert.equal(await versionsOf(env, 'RACE'), 1);
    });

    it('keyed, repeated and plain writes sent together (one SQLite group commit): each executed once', async () => {
      const env = project.env.staging.id;
      // Each secret's body is sealed once (a new seal is another body).
      const bodies = new Map<string, { value: string }>();
      const put = (name: string, key?: string, v = 'v') => {
        const id = `${name}:${v}`;
        if (!bodies.has(id)) bodies.set(id, { value: envelope(project, env, name, v) });
        const body = bodies.get(id)!;
        return key === undefined
          ? as(t, project.admin, 'PUT', secretPath(env, name), body)
          : send('PUT', secretPath(env, name), body, key);
      };
      const committedKey = newKey();
      const first = await put('GROUP_0', committedKey);
      assert.equal(first.statusCode, 201, first.body);
      const keys = Array.from({ length: 5 }, () => newKey());
      const [repeat, reused, ...rest] = await Promise.all([
        put('GROUP_0', committedKey),
        put('GROUP_0', committedKey, 'another value'),
        ...keys.map((key, i) => put(`GROUP_${i + 1}`, key)),
        ...[6, 7, 8].map((i) => put(`GROUP_${i}`)),
      ]);
      assert.deepEqual(answerOf(repeat!), answerOf(first));
      assert.equal(repeat!.headers['idempotent-replayed'], 'true');
      assert.equal(reused!.statusCode, 422, reused!.body);
      for (const res of rest) assert.equal(res.statusCode, 201, res.body);
      for (let i = 0; i <= 8; i++)
        assert.equal(await versionsOf(env, `GROUP_${i}`), 1, `GROUP_${i}`);
      // Each new key was recorded with its own write's result.
      for (const [i, key] of keys.entries()) {
        const again = await put(`GROUP_${i + 1}`, key);
        assert.deepEqual(answerOf(again), answerOf(rest[i]!), `GROUP_${i + 1}`);
        assert.equal(again.headers['idempotent-replayed'], 'true');
      }
    });

    it('a key is remembered for 24 hours: after that the same request is a new write, under the key anew', async () => {
      const env = project.env.development.id;
      const body = { value: envelope(project, env, 'EXPIRES', 'v') };
      const key = newKey();
      const first = await send('PUT', secretPath(env, 'EXPIRES'), body, key);
      assert.equal(first.statusCode, 201, first.body);
      t.clock.advance(23 * 60 * 60 * 1000);
      const within = await send('PUT', secretPath(env, 'EXPIRES'), body, key);
      assert.equal(within.headers['idempotent-replayed'], 'true');
      t.clock.advance(60 * 60 * 1000 + 1000);
      const after = await send('PUT', secretPath(env, 'EXPIRES'), body, key);
      assert.equal(after.statusCode, 200, after.body);
      assert.equal(after.headers['idempotent-replayed'], undefined);
      assert.equal(await versionsOf(env, 'EXPIRES'), 2);
      const again = await send('PUT', secretPath(env, 'EXPIRES'), body, key);
      assert.deepEqual(answerOf(again), answerOf(after));
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(await versionsOf(env, 'EXPIRES'), 2);
    });

    it('the purge deletes the expired keys, a stretch at a time, and keeps the live ones', async () => {
      const env = project.env.development.id;
      const put = async (name: string) => {
        const body = { value: envelope(project, env, name, 'v') };
        const res = await send('PUT', secretPath(env, name), body, newKeyOf());
        assert.ok(res.statusCode < 300, res.body);
      };
      // Keys of both kinds: the SDK's (its time first) and any other client's.
      let n = 0;
      const newKeyOf = () =>
        n++ % 2 === 0 ? newIdempotencyKey(t.clock.now().getTime()) : newKey();
      for (let i = 0; i < 7; i++) await put(`PURGED_${i}`);
      t.clock.advance(25 * 60 * 60 * 1000);
      for (let i = 0; i < 3; i++) await put(`KEPT_${i}`);
      const rows = () =>
        t.testDb.db.kysely
          .selectFrom('idempotency_keys')
          .select(['lookup', 'created_at'])
          .execute()
          .then((found) => found.map((row) => ({ ...row, lookup: hexOf(row.lookup) })));
      // Kept 24 h from the write's commit.
      const since = new Date(t.clock.now().getTime() - 24 * 60 * 60 * 1000).toISOString();
      const before = await rows();
      const expired = before.filter((row) => row.created_at <= since);
      assert.ok(expired.length >= 7, `${expired.length} expired`);
      const purged = await idempotencyService({ db: t.testDb.db, clock: t.clock }).purgeExpired(2);
      assert.equal(purged, expired.length);
      const left = await rows();
      assert.deepEqual(
        left.map((row) => row.lookup).sort(),
        before
          .filter((row) => row.created_at > since)
          .map((row) => row.lookup)
          .sort(),
      );
      assert.ok(left.length >= 3);
    });

    it('batches, rollbacks, deletes, new projects and API keys: a repeat answers as the first did', async () => {
      const env = project.env.production.id;
      const batch = {
        secrets: [
          { name: 'B1', value: envelope(project, env, 'B1', '1') },
          { name: 'B2', value: envelope(project, env, 'B2', '2') },
        ],
      };
      const base = `/v1/projects/${project.id}/environments/${env}/secrets`;
      const writes: [string, 'POST' | 'PUT' | 'PATCH' | 'DELETE', string, unknown][] = [
        ['batch', 'POST', `${base}/batch`, batch],
        ['update', 'PUT', `${base}/B1`, { value: envelope(project, env, 'B1', '1b') }],
        ['rollback', 'POST', `${base}/B1/rollback`, { version: 1 }],
        ['delete', 'DELETE', `${base}/B2`, undefined],
        ['new project', 'POST', '/v1/projects', { name: 'Idempotent' }],
        ['rename project', 'PATCH', `/v1/projects/${project.id}`, { name: 'Renamed once' }],
        [
          'new environment',
          'POST',
          `/v1/projects/${project.id}/environments`,
          { name: 'QA', slug: 'qa' },
        ],
      ];
      const differ: string[] = [];
      for (const [what, method, url, body] of writes) {
        const key = newKey();
        const first = await send(method, url, body, key);
        assert.ok(first.statusCode < 300, `${what}: ${first.statusCode} ${first.body}`);
        const again = await send(method, url, body, key);
        if (JSON.stringify(answerOf(again)) !== JSON.stringify(answerOf(first)))
          differ.push(`${what}:\n  ${first.body}\n  ${again.body}`);
        else assert.equal(again.headers['idempotent-replayed'], 'true', what);
      }
      assert.deepEqual(differ, []);
      assert.equal(await versionsOf(env, 'B1'), 3); // batch, update, rollback: once each
      const projects = dataOf<{ name: string }[]>(
        await as(t, project.admin, 'GET', '/v1/projects?per_page=100'),
        200,
      );
      assert.equal(projects.filter((p) => p.name === 'Idempotent').length, 1);
    });

    it('revoking another session twice under one key: 204 both times', async () => {
      const other = await logIn(t, project.admin.email, project.admin.password);
      assert.ok(other.sessionId, other.res.body);
      const key = newKey();
      const url = `/v1/me/sessions/${other.sessionId}`;
      const first = await send('DELETE', url, undefined, key);
      const again = await send('DELETE', url, undefined, key);
      assert.equal(first.statusCode, 204, first.body);
      assert.deepEqual(answerOf(again), answerOf(first));
      const gone = await send('DELETE', url, undefined, newKey());
      assert.equal(gone.statusCode, 404, 'without the key, a second revocation finds nothing');
    });

    it('keys belong to their credential: another user with the same key writes on its own', async () => {
      const other = await signUp(t);
      const key = newKey();
      const mine = await send('POST', '/v1/projects', { name: 'Mine' }, key);
      const theirs = await send('POST', '/v1/projects', { name: 'Mine' }, key, other.headers);
      assert.equal(mine.statusCode, 201, mine.body);
      assert.equal(theirs.statusCode, 201, theirs.body);
      assert.notEqual(dataOf(theirs).id, dataOf(mine).id);
      assert.equal(theirs.headers['idempotent-replayed'], undefined);
    });

    it('a malformed key is a 400 naming the header, and nothing is written', async () => {
      const env = project.env.development.id;
      for (const key of [
        'short',
        'x'.repeat(65),
        'sixteen chars ok but space',
        'ünïcødé-ünïcødé-ü',
      ]) {
        const res = await t.request({
          method: 'PUT',
          url: secretPath(env, 'BADKEY'),
          headers: { ...project.admin.headers, 'idempotency-key': key },
          body: { value: envelope(project, env, 'BADKEY', 'v') },
        });
        assert.equal(res.statusCode, 400, `${key}: ${res.body}`);
        const error = (res.data as { error: { details: unknown } }).error;
        assert.deepEqual(error.details, [{ field: 'Idempotency-Key', issue: 'invalid' }]);
      }
      const none = await as(t, project.admin, 'GET', `${secretPath(env, 'BADKEY')}/versions`);
      assert.equal(none.statusCode, 404, none.body);
    });

    it('two connections at once over real sockets: one write, the same answer', async () => {
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      const port = (t.app.server.address() as { port: number }).port;
      const env = project.env.development.id;
      const body = JSON.stringify({ value: envelope(project, env, 'SOCKETS', 'v') });
      const key = newKey();
      const put = () =>
        new Promise<{ statusCode: number; body: string }>((resolve, reject) => {
          const req = httpRequest(
            {
              host: '127.0.0.1',
              port,
              method: 'PUT',
              path: secretPath(env, 'SOCKETS'),
              agent: new Agent({ keepAlive: false }),
              headers: {
                ...project.admin.headers,
                'content-type': 'application/json',
                'idempotency-key': key,
              },
            },
            (res) => {
              let text = '';
              res.on('data', (c: Buffer) => (text += c.toString()));
              res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, body: text }));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      const [a, b] = await Promise.all([put(), put()]);
      assert.equal(a.statusCode, 201, a.body);
      assert.deepEqual(answerOf(b), answerOf(a));
      assert.equal(await versionsOf(env, 'SOCKETS'), 1);
    });
  });
}
