import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import {
  derivePasswordKeys,
  deriveRecoveryKeys,
  generateKdfParams,
  parseRecoveryKey,
  ready,
  toBase64url,
  wrapPrivateKeys,
  type KdfParams,
} from '@coffer/sdk';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { TEST_KDF_COST, logIn, signUp } from '../support/users.js';

/** Every value of every column of every table, as text. */
async function everyStoredValue(t: TestApp): Promise<{ where: string; text: string }[]> {
  const db = t.testDb.db.kysely;
  const tables =
    t.testDb.dialect === 'sqlite'
      ? (
          await sql<{
            name: string;
          }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(
            db,
          )
        ).rows.map((r) => r.name)
      : (
          await sql<{
            name: string;
          }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(
            db,
          )
        ).rows.map((r) => r.name);
  assert.ok(
    tables.includes('users') && tables.includes('sessions') && tables.includes('audit_events'),
  );
  const out: { where: string; text: string }[] = [];
  for (const table of tables) {
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db))
      .rows;
    for (const row of rows) {
      for (const [column, value] of Object.entries(row)) {
        if (value === null || value === undefined) continue;
        const text =
          value instanceof Uint8Array ? Buffer.from(value).toString('hex') : String(value);
        out.push({ where: `${table}.${column}`, text });
      }
    }
  }
  return out;
}

const encodings = (bytes: Uint8Array) => [
  toBase64url(bytes),
  Buffer.from(bytes).toString('base64'),
  Buffer.from(bytes).toString('hex'),
];

for (const dialect of DIALECTS) {
  describe(`identity: what the server stores (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      await ready();
      t = await startTestApp(dialect);
    });
    after(async () => t.close());

    it('no password, private key, recovery key or raw auth key appears in any column of any table', async () => {
      const user = await signUp(t, { password: 'Tr0ub4dor&3-unique-password' });
      const second = await logIn(t, user.email, user.password);
      assert.equal(second.res.statusCode, 200);

      // A password change and a recovery write the key columns again.
      const keysRes = await t.request({
        method: 'GET',
        url: '/v1/me/keys',
        headers: { cookie: user.cookie },
      });
      const params = (keysRes.data as { data: { kdf_params: KdfParams } }).data.kdf_params;
      const current = derivePasswordKeys(user.password, params);
      const nextParams = generateKdfParams(TEST_KDF_COST);
      const next = derivePasswordKeys('an-even-better-password-42', nextParams);
      const change = await t.request({
        method: 'PUT',
        url: '/v1/me/password',
        headers: user.headers,
        body: {
          current_auth_key: current.authKey,
          kdf_params: nextParams,
          auth_key: next.authKey,
          wrapped_private_keys: wrapPrivateKeys(user.keys, next.wrapKey, 'password'),
        },
      });
      assert.equal(change.statusCode, 204, change.body);
      const recoveryBytes = parseRecoveryKey(user.recoveryKey);
      const recovery = deriveRecoveryKeys(recoveryBytes);

      const forbidden: [string, string][] = [
        ['password', user.password],
        ['new password', 'an-even-better-password-42'],
        ['recovery key', user.recoveryKey],
        ['recovery key (compact)', user.recoveryKey.replaceAll('-', '')],
        ...encodings(recoveryBytes).map((e): [string, string] => ['recovery key bytes', e]),
        ...encodings(user.keys.encryption.secretKey).map((e): [string, string] => [
          'X25519 private key',
          e,
        ]),
        ...encodings(user.keys.signing.secretKey).map((e): [string, string] => [
          'Ed25519 private key',
          e,
        ]),
        ...encodings(user.keys.signing.secretKey.slice(0, 32)).map((e): [string, string] => [
          'Ed25519 seed',
          e,
        ]),
        ['auth key', current.authKey],
        ['new auth key', next.authKey],
        ['recovery auth key', recovery.authKey],
        ...encodings(current.wrapKey).map((e): [string, string] => ['wrap key', e]),
        ...encodings(recovery.wrapKey).map((e): [string, string] => ['recovery wrap key', e]),
        ['session token', user.cookie.slice('coffer_session='.length)],
      ];
      const stored = await everyStoredValue(t);
      assert.ok(
        stored.some((v) => v.where === 'users.wrapped_private_keys'),
        'the scan sees the users table',
      );
      for (const { where, text } of stored) {
        for (const [what, value] of forbidden) {
          assert.ok(!text.includes(value), `${what} found in ${where}`);
        }
      }
    });
  });
}
