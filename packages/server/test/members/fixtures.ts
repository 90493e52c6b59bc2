import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { generateBearer, ready } from '@coffer/sdk';
import { hashToken } from '../../src/domains/identity/credentials.js';
import { newId } from '../../src/ids.js';
import type { Role } from '../../src/http/principal.js';
import type { TestApp } from '../support/app.js';
import { as, errorOf, type BearerHeaders, type Caller } from '../support/http.js';
import type { TestUser } from '../support/users.js';

/** Exactly these keys, no more, no fewer. */
export function assertKeys(value: unknown, keys: readonly string[], what = 'object'): void {
  assert.ok(value !== null && typeof value === 'object', `${what} is an object`);
  assert.deepEqual(Object.keys(value).sort(), [...keys].sort(), `${what} has exactly ${keys}`);
}

/**
 * Each bad list query is a `400 validation_error` naming exactly its parameter
 * and issue. `urlOf` builds the list URL for a query string.
 */
export async function assertRejectedQueries(
  t: TestApp,
  caller: Caller,
  urlOf: (query: string) => string,
  cases: ReadonlyArray<readonly [query: string, field: string, issue: string]>,
): Promise<void> {
  for (const [query, field, issue] of cases) {
    const error = errorOf(await as(t, caller, 'GET', urlOf(query)), 400, 'validation_error');
    assert.deepEqual(error.details, [{ field, issue }], query);
  }
}

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * The token of invitation `memberId`, read as its invitee would: from the
 * `/invite?token=…` link of the e-mail that names this invitation.
 */
export function invitationTokenIn(
  mails: readonly { text: string }[],
  memberId: string,
): string | undefined {
  const mail = mails.find((m) => m.text.includes(memberId));
  return mail && /\/invite\?token=([A-Za-z0-9_-]{43})/.exec(mail.text)?.[1];
}

/**
 * An API key created straight in the database, as the vault domain's
 * `POST /projects/{p}/api-keys` would store it (hash of the bearer only), so
 * these tests do not depend on that route. `public_key` is a placeholder: no
 * grant is made, these tests never decrypt.
 */
export async function createApiKey(
  t: TestApp,
  projectId: string,
  creator: TestUser,
  role: Role,
): Promise<BearerHeaders & { id: string }> {
  await ready();
  const bearer = generateBearer('cek_');
  const id = newId('apiKey');
  await t.testDb.db.kysely
    .insertInto('api_keys')
    .values({
      id,
      project_id: projectId,
      name: `${role} key`,
      token_hash: hashToken(bearer),
      role,
      scopes: '{}',
      public_key: randomBytes(32).toString('base64url'),
      created_by: creator.id,
      created_at: t.clock.now().toISOString(),
    })
    .execute();
  return { id, authorization: `Bearer ${bearer}` };
}

/** A CI token created straight in the database (see `createApiKey`), valid for an hour. */
export async function createCiToken(
  t: TestApp,
  projectId: string,
  creator: TestUser,
): Promise<BearerHeaders & { id: string }> {
  await ready();
  const bearer = generateBearer('ci_');
  const id = newId('ciToken');
  const now = t.clock.now();
  await t.testDb.db.kysely
    .insertInto('ci_tokens')
    .values({
      id,
      project_id: projectId,
      name: 'pipeline',
      token_hash: hashToken(bearer),
      scopes: '{}',
      public_key: randomBytes(32).toString('base64url'),
      created_by: creator.id,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + 3_600_000).toISOString(),
    })
    .execute();
  return { id, authorization: `Bearer ${bearer}` };
}

/**
 * A grant stored as the vault domain would (the sealed key and signature are
 * placeholders: these tests only check who holds a grant): a user's project
 * key, or an API key's or CI token's key to one environment.
 */
async function insertGrant(
  t: TestApp,
  projectId: string,
  recipient:
    | { type: 'user'; id: string }
    | { type: 'api_key' | 'ci_token'; id: string; environmentId: string },
  granterId: string,
): Promise<void> {
  await t.testDb.db.kysely
    .insertInto('vault_grants')
    .values({
      id: newId('grant'),
      project_id: projectId,
      epoch: 1,
      kind: recipient.type === 'user' ? 'project_key' : 'environment_key',
      recipient_type: recipient.type,
      recipient_id: recipient.id,
      environment_id: recipient.type === 'user' ? null : recipient.environmentId,
      sealed_key: 'sealed',
      granter_id: granterId,
      signature: 'sig',
      created_at: t.clock.now().toISOString(),
    })
    .execute();
}

/** A user's project-key grant (see `insertGrant`). */
export const insertUserGrant = (t: TestApp, projectId: string, userId: string, granterId: string) =>
  insertGrant(t, projectId, { type: 'user', id: userId }, granterId);

/** An API key's or CI token's grant of one environment's key (see `insertGrant`). */
export const insertTokenGrant = (
  t: TestApp,
  projectId: string,
  token: { type: 'api_key' | 'ci_token'; id: string },
  environmentId: string,
  granterId: string,
) => insertGrant(t, projectId, { ...token, environmentId }, granterId);

/** How many vault grants a user holds (any project). */
export async function grantCount(t: TestApp, userId: string): Promise<number> {
  const rows = await t.testDb.db.kysely
    .selectFrom('vault_grants')
    .select('id')
    .where('recipient_id', '=', userId)
    .execute();
  return rows.length;
}

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Checks a list endpoint for every allowed `sort` in both orders against the
 * documented rule, computed here from the stored rows: values compared
 * byte-wise (keys lower-case text themselves), missing values last in both
 * orders, ties broken by id in the same order.
 */
export async function assertSortOrders<R extends { id: string }>(
  rows: readonly R[],
  keys: Record<string, (row: R) => string | null>,
  fetchIds: (sort: string, order: 'asc' | 'desc') => Promise<string[]>,
): Promise<void> {
  for (const [sort, key] of Object.entries(keys)) {
    for (const order of ['asc', 'desc'] as const) {
      const sign = order === 'asc' ? 1 : -1;
      const expected = [...rows]
        .sort((a, b) => {
          const [x, y] = [key(a), key(b)];
          if (x === null || y === null) {
            if (x !== y) return x === null ? 1 : -1;
          } else if (x !== y) return sign * byteOrder(x, y);
          return sign * byteOrder(a.id, b.id);
        })
        .map((r) => r.id);
      assert.deepEqual(await fetchIds(sort, order), expected, `sort=${sort}&order=${order}`);
    }
  }
}

// The fuzz campaign still reads it from here.
export { eventually } from '../support/http.js';
