import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Agent, fetch as undiciFetch } from 'undici';
import {
  CofferClient,
  changePassword,
  isCofferApiError,
  isCryptoError,
  logIn,
  logOut,
  me,
  recoverAccount,
  revokeSession,
  sessions,
  signUp,
  unlockKeys,
} from '../src/index.js';
// The real server, as its own tests start it: the SDK is tested against what it talks to.
import { loadConfig } from '../../server/src/config.js';
import { loadTls } from '../../server/src/http/tls.js';
import { DIALECTS } from '../../server/test/support/db.js';
import { TestClock, startTestApp, type TestApp } from '../../server/test/support/app.js';

const CHEAP = { ops_limit: 2, mem_limit_kib: 8192 };
const ACCEPT_CHEAP = { minimumKdf: CHEAP };
let counter = 0;
const email = () => `sdk-${process.pid}-${++counter}-${Date.now()}@example.test`;

/** A self-signed certificate for localhost, trusted only by the clients built here (as the CLI does with --ca). */
async function tlsMaterial() {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-sdk-tls-'));
  try {
    return (await loadTls(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' })))!;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const dialect of DIALECTS) {
  describe(`SDK auth against the real server over HTTPS (${dialect})`, () => {
    let t: TestApp;
    let baseUrl: string;
    let agent: Agent;
    const newClient = (options: Partial<ConstructorParameters<typeof CofferClient>[0]> = {}) =>
      new CofferClient({
        baseUrl,
        fetch: ((input: string, init: RequestInit) =>
          undiciFetch(input, {
            ...(init as object),
            dispatcher: agent,
          })) as unknown as typeof fetch,
        userAgent: 'coffer-sdk-test',
        ...options,
      });

    before(async () => {
      const tls = await tlsMaterial();
      agent = new Agent({ connect: { ca: tls.cert } });
      t = await startTestApp(dialect, { deps: { https: { key: tls.key, cert: tls.cert } } });
      await t.app.listen({ host: 'localhost', port: 0 });
      baseUrl = `https://localhost:${(t.app.server.address() as AddressInfo).port}`;
    });
    after(async () => {
      await t.close();
      await agent.close();
    });

    it('signUp → me → sessions → logOut; then the session is refused', async () => {
      const client = newClient();
      const address = email();
      const account = await signUp(client, {
        email: address,
        name: 'SDK User',
        password: 'hunter2-but-longer',
        kdfCost: CHEAP,
      });
      assert.match(account.recoveryKey, /^CRK-/);
      assert.equal(account.user.email, address);
      assert.ok(client.session, 'the client holds the session');

      assert.deepEqual(await me(client), account.user);
      const page = await sessions(client);
      assert.equal(page.pagination.total, 1);
      assert.equal(page.data[0]!.id, account.session.id);
      assert.equal(page.data[0]!.current, true);
      assert.equal(page.data[0]!.user_agent, 'coffer-sdk-test');

      const stolen = client.session!;
      await logOut(client);
      assert.equal(client.session, null);
      const replay = newClient({ credential: { session: stolen } });
      await assert.rejects(me(replay), (e: unknown) => {
        assert.ok(isCofferApiError(e, 'unauthenticated'));
        assert.equal(e.status, 401);
        assert.match(e.requestId ?? '', /^req_/);
        return true;
      });
    });

    it('logIn unwraps the same keys; a wrong password is a typed 401', async () => {
      const address = email();
      const account = await signUp(newClient(), {
        email: address,
        name: 'K',
        password: 'pw-1',
        kdfCost: CHEAP,
      });
      const client = newClient();
      const login = await logIn(client, { email: address, password: 'pw-1', ...ACCEPT_CHEAP });
      assert.deepEqual(login.keys.encryption.secretKey, account.keys.encryption.secretKey);
      assert.deepEqual(login.keys.signing.secretKey, account.keys.signing.secretKey);
      assert.deepEqual(await unlockKeys(client, { password: 'pw-1', ...ACCEPT_CHEAP }), login.keys);

      await assert.rejects(
        logIn(newClient(), { email: address, password: 'pw-2', ...ACCEPT_CHEAP }),
        (e: unknown) => isCofferApiError(e, 'unauthenticated') && e.status === 401,
      );
    });

    it('logIn refuses KDF parameters below the client minimum before sending anything derived', async () => {
      const address = email();
      await signUp(newClient(), { email: address, name: 'W', password: 'pw', kdfCost: CHEAP });
      // These test users have cheap parameters; the default minimum (OWASP) rejects them.
      await assert.rejects(logIn(newClient(), { email: address, password: 'pw' }), (e: unknown) =>
        isCryptoError(e, 'weak_kdf_params'),
      );
    });

    it('validation errors carry their details', async () => {
      await assert.rejects(
        signUp(newClient(), { email: 'not an e-mail', name: 'X', password: 'p', kdfCost: CHEAP }),
        (e: unknown) => {
          assert.ok(isCofferApiError(e, 'validation_error'));
          assert.equal(e.status, 400);
          assert.deepEqual(e.details, [{ field: 'email', issue: 'invalid' }]);
          return true;
        },
      );
    });

    it('changePassword keeps this session, ends the others, and the new password unwraps the same keys', async () => {
      const address = email();
      const account = await signUp(newClient(), {
        email: address,
        name: 'C',
        password: 'old-pw',
        kdfCost: CHEAP,
      });
      const laptop = newClient();
      const phone = newClient();
      await logIn(laptop, { email: address, password: 'old-pw', ...ACCEPT_CHEAP });
      const phoneLogin = await logIn(phone, {
        email: address,
        password: 'old-pw',
        ...ACCEPT_CHEAP,
      });

      await assert.rejects(
        changePassword(laptop, {
          currentPassword: 'wrong',
          newPassword: 'x',
          kdfCost: CHEAP,
          ...ACCEPT_CHEAP,
        }),
        (e: unknown) => isCryptoError(e, 'decryption_failed'),
      );
      const keys = await changePassword(laptop, {
        currentPassword: 'old-pw',
        newPassword: 'new-pw',
        kdfCost: CHEAP,
        ...ACCEPT_CHEAP,
      });
      assert.deepEqual(keys.signing.secretKey, account.keys.signing.secretKey);
      assert.equal((await me(laptop)).id, account.user.id);
      await assert.rejects(me(phone), (e: unknown) => isCofferApiError(e, 'unauthenticated'));

      const fresh = await logIn(newClient(), {
        email: address,
        password: 'new-pw',
        ...ACCEPT_CHEAP,
      });
      assert.deepEqual(fresh.keys.encryption.secretKey, account.keys.encryption.secretKey);
      await assert.rejects(
        logIn(newClient(), { email: address, password: 'old-pw', ...ACCEPT_CHEAP }),
        (e: unknown) => isCofferApiError(e, 'unauthenticated'),
      );
      // Revoking a session by id (here, one that already ended) is a typed 404.
      await assert.rejects(revokeSession(laptop, phoneLogin.session.id), (e: unknown) =>
        isCofferApiError(e, 'not_found'),
      );
    });

    it('recoverAccount restores access with the recovery key after a forgotten password', async () => {
      const address = email();
      const account = await signUp(newClient(), {
        email: address,
        name: 'R',
        password: 'forgotten',
        kdfCost: CHEAP,
      });
      const client = newClient();
      const recovered = await recoverAccount(client, {
        email: address,
        recoveryKey: account.recoveryKey.toLowerCase(),
        newPassword: 'remembered',
        kdfCost: CHEAP,
      });
      assert.deepEqual(recovered.keys.encryption.secretKey, account.keys.encryption.secretKey);
      assert.equal((await me(client)).id, account.user.id);
      const login = await logIn(newClient(), {
        email: address,
        password: 'remembered',
        ...ACCEPT_CHEAP,
      });
      assert.deepEqual(login.keys.signing.secretKey, account.keys.signing.secretKey);
    });
  });

  describe(`SDK retry on 429 against the real server (${dialect})`, () => {
    let t: TestApp;
    let baseUrl: string;
    const clock = new TestClock();
    before(async () => {
      // Plain HTTP on localhost, which the client allows; 2 auth requests per minute.
      t = await startTestApp(dialect, { clock, env: { RATE_LIMIT_AUTH: '2' } });
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    });
    after(async () => t.close());

    it('waits the Retry-After the server sends, then succeeds', async () => {
      const waits: number[] = [];
      // Waiting moves the server's clock, so the rate-limit window really passes.
      const sleep = async (ms: number) => {
        waits.push(ms);
        clock.advance(ms);
      };
      const patient = new CofferClient({ baseUrl, sleep });
      const impatient = new CofferClient({ baseUrl, sleep, retry: { maxAttempts: 1 } });
      const body = { email: 'someone@example.test' };

      await patient.request('POST', '/v1/auth/prelogin', { body });
      await patient.request('POST', '/v1/auth/prelogin', { body });
      let retryAfter = 0;
      await assert.rejects(
        impatient.request('POST', '/v1/auth/prelogin', { body }),
        (e: unknown) => {
          assert.ok(isCofferApiError(e, 'rate_limited'));
          assert.equal(e.status, 429);
          assert.ok(e.retryAfter !== null && e.retryAfter >= 1 && e.retryAfter <= 60);
          retryAfter = e.retryAfter;
          return true;
        },
      );
      assert.deepEqual(waits, [], 'maxAttempts 1 never waits');

      const result = await patient.request<{ kdf_params: { algorithm: string } }>(
        'POST',
        '/v1/auth/prelogin',
        { body },
      );
      assert.equal(result.kdf_params.algorithm, 'argon2id');
      assert.deepEqual(waits, [retryAfter * 1000]);
    });
  });
}
