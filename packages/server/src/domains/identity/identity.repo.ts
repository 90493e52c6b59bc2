import type { Kysely } from 'kysely';
import type { Database, SessionTable, UserTable } from '../../db/schema.js';
import { toCount } from '../../db/database.js';
import { offsetOf, type ListParams } from '../../http/pagination.js';

type Db = Kysely<Database>;

export type UserRow = UserTable;
export type SessionRow = SessionTable;

export const findUserByEmail = (db: Db, email: string) =>
  db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();

export const findUserById = (db: Db, id: string) =>
  db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();

/** What other domains show of a user: no credentials, no keys. */
export type UserSummary = Pick<UserRow, 'id' | 'email' | 'name' | 'status'>;

/** A user's summary by id or by (normalized) e-mail address. */
export const findUserSummary = (
  db: Db,
  by: 'id' | 'email',
  value: string,
): Promise<UserSummary | undefined> =>
  db
    .selectFrom('users')
    .select(['id', 'email', 'name', 'status'])
    .where(by, '=', value)
    .executeTakeFirst();

/** A user's public keys: encryption (X25519) and signing (Ed25519). */
export const findUserKeys = (db: Db, id: string) =>
  db
    .selectFrom('users')
    .select(['id', 'public_key', 'signing_public_key'])
    .where('id', '=', id)
    .executeTakeFirst();

export async function countActiveUsers(db: Db): Promise<number> {
  const row = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('status', '=', 'active')
    .executeTakeFirstOrThrow();
  return toCount(row.n as number | string);
}

export const insertUser = (db: Db, row: UserRow) => db.insertInto('users').values(row).execute();

/**
 * Creates the `invited` user an invitation points to, unless a concurrent
 * request just did (the e-mail is unique); returns whichever row exists.
 */
export async function ensureInvitedUser(
  db: Db,
  user: { id: string; email: string; name: string; at: string },
): Promise<UserSummary> {
  await db
    .insertInto('users')
    .values({
      id: user.id,
      email: user.email,
      name: user.name,
      status: 'invited',
      email_verified: 0,
      created_at: user.at,
      updated_at: user.at,
    })
    .onConflict((oc) => oc.column('email').doNothing())
    .execute();
  const row = await findUserSummary(db, 'email', user.email);
  if (!row) throw new Error(`invited user ${user.email} vanished`);
  return row;
}

/** The user proved their address (with an invitation's token). */
export async function markEmailVerified(db: Db, userId: string, at: string): Promise<void> {
  await db
    .updateTable('users')
    .set({ email_verified: 1, updated_at: at })
    .where('id', '=', userId)
    .execute();
}

/** Credentials and keys of a user who signs up (fills an `invited` row in place, keeping its id). */
export type AccountFields = Pick<
  UserRow,
  | 'name'
  | 'status'
  | 'email_verified'
  | 'kdf_params'
  | 'auth_key_hash'
  | 'recovery_auth_key_hash'
  | 'public_key'
  | 'signing_public_key'
  | 'wrapped_private_keys'
  | 'recovery_wrapped_private_keys'
  | 'updated_at'
>;

/** Only touches a row that is still `invited`, so two sign-ups for one invitee cannot both win. */
export async function activateInvitedUser(
  db: Db,
  id: string,
  fields: AccountFields,
): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set(fields)
    .where('id', '=', id)
    .where('status', '=', 'invited')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

type PasswordFields = Pick<
  UserRow,
  'kdf_params' | 'auth_key_hash' | 'wrapped_private_keys' | 'updated_at'
>;

/** Compare-and-set on the auth key hash, so two concurrent password changes cannot both apply. */
export async function replacePassword(
  db: Db,
  userId: string,
  expectedAuthKeyHash: string,
  fields: PasswordFields,
): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set(fields)
    .where('id', '=', userId)
    .where('auth_key_hash', '=', expectedAuthKeyHash)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** A pending, unexpired invitation of this user proven by its token hash. */
export const findPendingInvitation = (db: Db, tokenHash: string, userId: string, now: string) =>
  db
    .selectFrom('members')
    .select(['id', 'project_id'])
    .where('invitation_token_hash', '=', tokenHash)
    .where('user_id', '=', userId)
    .where('status', '=', 'pending')
    .where('invitation_expires_at', '>', now)
    .executeTakeFirst();

export const insertSession = (db: Db, row: SessionRow) =>
  db.insertInto('sessions').values(row).execute();

export const findSessionOfUser = (db: Db, userId: string, sessionId: string) =>
  db
    .selectFrom('sessions')
    .select(['id', 'token_hash'])
    .where('id', '=', sessionId)
    .where('user_id', '=', userId)
    .executeTakeFirst();

export const deleteSession = (db: Db, sessionId: string) =>
  db.deleteFrom('sessions').where('id', '=', sessionId).execute();

/** Deletes the user's sessions except `keep` (none kept when null); returns the deleted ids. */
export async function deleteSessionsOfUser(
  db: Db,
  userId: string,
  keep: string | null,
): Promise<string[]> {
  let query = db.selectFrom('sessions').select('id').where('user_id', '=', userId);
  if (keep) query = query.where('id', '!=', keep);
  const ids = (await query.execute()).map((r) => r.id);
  if (ids.length > 0) await db.deleteFrom('sessions').where('id', 'in', ids).execute();
  return ids;
}

type SessionSort = 'created_at' | 'last_used_at' | 'expires_at';

export async function listSessionsOfUser(
  db: Db,
  userId: string,
  now: string,
  params: ListParams<SessionSort>,
): Promise<{ rows: SessionRow[]; total: number }> {
  const base = db
    .selectFrom('sessions')
    .where('user_id', '=', userId)
    .where('expires_at', '>', now);
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy(params.sort, params.order)
      .orderBy('id', params.order)
      .limit(params.per_page)
      .offset(offsetOf(params))
      .execute(),
    base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: toCount(count.n as number | string) };
}

export const readSetting = async (db: Db, name: string): Promise<string | undefined> =>
  (
    await db
      .selectFrom('server_settings')
      .select('value')
      .where('name', '=', name)
      .executeTakeFirst()
  )?.value;

/** Inserts a setting; throws a unique violation when it exists (a one-time claim). */
export const insertSetting = (db: Db, name: string, value: string, now: string) =>
  db.insertInto('server_settings').values({ name, value, created_at: now }).execute();

/** Inserts unless another instance already did; the stored value wins either way. */
export async function insertSettingIfAbsent(
  db: Db,
  name: string,
  value: string,
  now: string,
): Promise<string> {
  await db
    .insertInto('server_settings')
    .values({ name, value, created_at: now })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  return (await readSetting(db, name))!;
}
