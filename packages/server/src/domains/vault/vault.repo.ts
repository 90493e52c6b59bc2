import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../../db/database.js';
import type { Database, VaultGrantTable } from '../../db/schema.js';
import type { Role, Scopes } from '../../http/principal.js';
import { minRole } from '../../access/project-access.js';

// All SQL of the vault: grants, the re-key snapshot and the re-key writes.
// Every function takes the database handle first so it runs inside the caller's
// transaction when given one.

type Db = Kysely<Database>;

export type GrantRow = VaultGrantTable;
export type RecipientType = GrantRow['recipient_type'];

export async function vaultState(db: Db, projectId: string) {
  return db
    .selectFrom('projects')
    .select(['vault_epoch', 'rekey_recommended'])
    .where('id', '=', projectId)
    .executeTakeFirst();
}

/** A recipient's grants at one epoch, each with its granter's Ed25519 public key (a user's or an API key's). */
export async function grantsOf(
  db: Db,
  projectId: string,
  epoch: number,
  recipientType: RecipientType,
  recipientId: string,
) {
  return db
    .selectFrom('vault_grants as g')
    .leftJoin('users as u', 'u.id', 'g.granter_id')
    .leftJoin('api_keys as k', 'k.id', 'g.granter_id')
    .selectAll('g')
    .select((eb) =>
      eb.fn
        .coalesce('u.signing_public_key', 'k.signing_public_key')
        .as('granter_signing_public_key'),
    )
    .select(['u.public_key as granter_public_key', 'u.email as granter_email'])
    .where('g.project_id', '=', projectId)
    .where('g.epoch', '=', epoch)
    .where('g.recipient_type', '=', recipientType)
    .where('g.recipient_id', '=', recipientId)
    .orderBy('g.environment_id')
    .execute();
}

export async function hasProjectKeyGrant(
  db: Db,
  projectId: string,
  epoch: number,
  userId: string,
): Promise<boolean> {
  const row = await db
    .selectFrom('vault_grants')
    .select('id')
    .where('project_id', '=', projectId)
    .where('epoch', '=', epoch)
    .where('kind', '=', 'project_key')
    .where('recipient_id', '=', userId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Active admins and developers: the members who hold (or await) the project key. */
function vaultMembersQuery(db: Db, projectId: string) {
  return db
    .selectFrom('members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select([
      'm.id as member_id',
      'm.role',
      'u.id as user_id',
      'u.email',
      'u.name',
      'u.public_key',
      'u.signing_public_key',
      'm.introduction_sealed_secret',
      'm.introduction_proof',
    ])
    .where('m.project_id', '=', projectId)
    .where('m.status', '=', 'active')
    .where('m.role', 'in', ['admin', 'developer'])
    .where('u.public_key', 'is not', null)
    .where('u.signing_public_key', 'is not', null);
}

export type VaultMemberRow = Awaited<ReturnType<typeof vaultMembers>>[number];

export async function vaultMembers(db: Db, projectId: string) {
  return vaultMembersQuery(db, projectId).orderBy('u.id').execute();
}

/** Vault members without a project-key grant at `epoch`. */
export async function membersAwaitingGrant(db: Db, projectId: string, epoch: number) {
  return vaultMembersQuery(db, projectId)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('vault_grants as g')
            .select('g.id')
            .whereRef('g.recipient_id', '=', 'u.id')
            .where('g.project_id', '=', projectId)
            .where('g.epoch', '=', epoch)
            .where('g.kind', '=', 'project_key'),
        ),
      ),
    )
    .orderBy('u.id')
    .execute();
}

/**
 * The project-key grants of one epoch, each with its granter's keys: who held
 * the key at that epoch, which a re-key re-grants (members still awaiting a
 * grant stay pending), and what lets the re-keying client check each
 * recipient's keys against the grant they were given.
 */
export async function projectKeyGrantsAt(db: Db, projectId: string, epoch: number) {
  return db
    .selectFrom('vault_grants as g')
    .leftJoin('users as u', 'u.id', 'g.granter_id')
    .select([
      'g.recipient_id',
      'g.epoch',
      'g.sealed_key',
      'g.signature',
      'g.granter_id',
      'u.signing_public_key as granter_signing_public_key',
      'u.public_key as granter_public_key',
      'u.email as granter_email',
    ])
    .where('g.project_id', '=', projectId)
    .where('g.epoch', '=', epoch)
    .where('g.kind', '=', 'project_key')
    .where('g.recipient_type', '=', 'user')
    .orderBy('g.recipient_id')
    .execute();
}

export async function deleteRecipientGrants(
  db: Db,
  projectId: string,
  epoch: number,
  recipientType: RecipientType,
  recipientIds: readonly string[],
): Promise<void> {
  if (recipientIds.length === 0) return;
  await db
    .deleteFrom('vault_grants')
    .where('project_id', '=', projectId)
    .where('epoch', '=', epoch)
    .where('recipient_type', '=', recipientType)
    .where('recipient_id', 'in', recipientIds)
    .execute();
}

/** A user's grants in a project: gone when they become a viewer or leave. */
export async function deleteUserGrants(db: Db, projectId: string, userId: string): Promise<void> {
  await db
    .deleteFrom('vault_grants')
    .where('project_id', '=', projectId)
    .where('recipient_type', '=', 'user')
    .where('recipient_id', '=', userId)
    .execute();
}

/** Every grant, at any epoch, of these API keys and CI tokens (their ids never collide). */
export async function deleteGrantsOf(db: Db, projectId: string, recipientIds: readonly string[]) {
  if (recipientIds.length === 0) return;
  await db
    .deleteFrom('vault_grants')
    .where('project_id', '=', projectId)
    .where('recipient_id', 'in', recipientIds)
    .execute();
}

/** The token grants of an environment's key, which would otherwise outlive the environment. */
export async function deleteEnvironmentGrants(
  db: Db,
  projectId: string,
  environmentId: string,
): Promise<void> {
  await db
    .deleteFrom('vault_grants')
    .where('project_id', '=', projectId)
    .where('environment_id', '=', environmentId)
    .execute();
}

/** Inserts in chunks that stay under both dialects' bound-parameter limits. */
export async function insertGrants(db: Db, rows: readonly GrantRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .insertInto('vault_grants')
      .values(rows.slice(i, i + 500))
      .execute();
  }
}

export async function initializeVault(db: Db, projectId: string): Promise<void> {
  await db
    .updateTable('projects')
    .set({ vault_epoch: 1 })
    .where('id', '=', projectId)
    .where('vault_epoch', '=', 0)
    .execute();
}

// ---- introductions --------------------------------------------------------

/**
 * Pending and active members whose invitation carries an introduction sealed
 * under the project key: a re-key must re-seal each under the new epoch.
 */
export async function introductionsOf(db: Db, projectId: string) {
  return db
    .selectFrom('members')
    .select(['id as member_id', 'user_id', 'introduction_sealed_secret as sealed_secret'])
    .where('project_id', '=', projectId)
    .where('status', 'in', ['pending', 'active'])
    .where('introduction_sealed_secret', 'is not', null)
    .orderBy('id')
    .execute() as Promise<{ member_id: string; user_id: string; sealed_secret: string }[]>;
}

export async function resealIntroductions(
  db: Db,
  projectId: string,
  sealed: readonly { member_id: string; sealed_secret: string }[],
): Promise<void> {
  for (const s of sealed) {
    await db
      .updateTable('members')
      .set({ introduction_sealed_secret: s.sealed_secret })
      .where('project_id', '=', projectId)
      .where('id', '=', s.member_id)
      .execute();
  }
}

/** A re-key that re-sealed none: the old seals are unreadable once the old grants go. */
export async function clearIntroductionSeals(db: Db, projectId: string): Promise<void> {
  await db
    .updateTable('members')
    .set({ introduction_sealed_secret: null, introduction_inviter_proof: null })
    .where('project_id', '=', projectId)
    .where('introduction_sealed_secret', 'is not', null)
    .execute();
}

// ---- snapshot -------------------------------------------------------------

export async function environmentsOf(db: Db, projectId: string) {
  return db
    .selectFrom('environments')
    .select(['id', 'name', 'slug'])
    .where('project_id', '=', projectId)
    .orderBy('id')
    .execute();
}

/** Every stored secret version, history included, with its secret's name: one query. */
export async function allVersions(db: Db, projectId: string) {
  return db
    .selectFrom('secret_versions as v')
    .innerJoin('secrets as s', 's.id', 'v.secret_id')
    .select([
      'v.id',
      'v.secret_id',
      'v.environment_id',
      's.name',
      'v.version',
      'v.epoch',
      'v.value',
    ])
    .where('v.project_id', '=', projectId)
    .orderBy('v.id')
    .execute();
}

interface LiveToken {
  type: 'api_key' | 'ci_token';
  id: string;
  name: string;
  role: Role;
  scopes: Scopes;
  public_key: string;
  signing_public_key: string | null;
  expires_at: string | null;
  /** Whose key signed its grants at creation: the user, or the API key that minted a CI token. */
  signed_by: string;
}

/**
 * API keys and CI tokens that can still decrypt: not revoked, not expired, their
 * creator still an active member, and an effective role above viewer (a viewer
 * holds no key). Scopes are narrowed to environments that still exist.
 */
export async function liveTokens(db: Db, projectId: string, now: string): Promise<LiveToken[]> {
  const live = (table: 'api_keys' | 'ci_tokens') =>
    db
      .selectFrom(table)
      .where('project_id', '=', projectId)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .orderBy('id');
  const columns = [
    'id',
    'name',
    'created_by',
    'scopes',
    'public_key',
    'signing_public_key',
    'expires_at',
  ] as const;
  const [keys, ciTokens, keyRoles, environments, creators] = await Promise.all([
    live('api_keys').select(columns).execute(),
    live('ci_tokens')
      .select([...columns, 'created_by_api_key'])
      .execute(),
    db.selectFrom('api_keys').select(['id', 'role']).where('project_id', '=', projectId).execute(),
    db.selectFrom('environments').select('id').where('project_id', '=', projectId).execute(),
    db
      .selectFrom('members')
      .select(['user_id', 'role'])
      .where('project_id', '=', projectId)
      .where('status', '=', 'active')
      .execute(),
  ]);
  const keyRole = new Map(keyRoles.map((k) => [k.id, k.role]));
  const existing = new Set(environments.map((e) => e.id));
  const creatorRole = new Map(creators.map((m) => [m.user_id, m.role]));
  const liveScopes = (json: string): Scopes =>
    Object.fromEntries(Object.entries(JSON.parse(json) as Scopes).filter(([e]) => existing.has(e)));
  const out: LiveToken[] = [];
  for (const [type, rows] of [
    ['api_key', keys.map((k) => ({ ...k, role: keyRole.get(k.id)!, signed_by: k.created_by }))],
    // CI tokens act as developers within their scopes (projects/access.ts).
    [
      'ci_token',
      ciTokens.map(({ created_by_api_key, ...c }) => ({
        ...c,
        role: 'developer' as Role,
        signed_by: created_by_api_key ?? c.created_by,
      })),
    ],
  ] as const) {
    for (const { created_by, scopes, ...token } of rows) {
      const creator = creatorRole.get(created_by);
      if (!creator) continue;
      const role = minRole(token.role, creator);
      if (role === 'viewer') continue;
      out.push({ type, ...token, role, scopes: liveScopes(scopes) });
    }
  }
  return out;
}

// ---- re-key ---------------------------------------------------------------

export async function versionIds(db: Db, projectId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('secret_versions')
    .select('id')
    .where('project_id', '=', projectId)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Writes the re-encrypted envelopes. One `UPDATE … FROM (VALUES …)` per chunk,
 * the same statement on both dialects (SQLite ≥ 3.33 has UPDATE … FROM; a CTE
 * names the columns portably), so 10,000 versions take a handful of round trips.
 */
export async function updateVersionValues(
  db: Db,
  projectId: string,
  epoch: number,
  versions: readonly { id: string; value: string }[],
  dialect: DialectName,
): Promise<number> {
  if (dialect === 'postgres') {
    // Two array parameters, whatever the count: no statement size or parameter limit.
    const result = await sql`
      update secret_versions
         set value = incoming.value, epoch = ${epoch}
        from unnest(${versions.map((v) => v.id)}::text[], ${versions.map((v) => v.value)}::text[])
             as incoming(id, value)
       where secret_versions.id = incoming.id
         and secret_versions.project_id = ${projectId}`.execute(db);
    return Number(result.numAffectedRows ?? 0);
  }
  // SQLite: 2 parameters per row, under its 32,766 limit per statement.
  let updated = 0;
  for (let i = 0; i < versions.length; i += 8000) {
    const rows = versions.slice(i, i + 8000);
    const values = sql.join(rows.map((r) => sql`(${r.id}, ${r.value})`));
    const result = await sql`
      with incoming(id, value) as (values ${values})
      update secret_versions
         set value = incoming.value, epoch = ${epoch}
        from incoming
       where secret_versions.id = incoming.id
         and secret_versions.project_id = ${projectId}`.execute(db);
    updated += Number(result.numAffectedRows ?? 0);
  }
  return updated;
}

/** Copies each secret's current version (now re-encrypted) into `secrets.value`/`epoch`. */
export async function syncCurrentValues(db: Db, projectId: string): Promise<void> {
  await sql`
    update secrets
       set value = v.value, epoch = v.epoch
      from secret_versions v
     where v.secret_id = secrets.id
       and v.version = secrets.version
       and secrets.project_id = ${projectId}`.execute(db);
}

export async function secretsNotAtEpoch(db: Db, projectId: string, epoch: number) {
  const row = await db
    .selectFrom('secrets')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('project_id', '=', projectId)
    .where('epoch', '!=', epoch)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function deleteAllGrants(db: Db, projectId: string): Promise<void> {
  await db.deleteFrom('vault_grants').where('project_id', '=', projectId).execute();
}

export async function advanceEpoch(db: Db, projectId: string, epoch: number) {
  await db
    .updateTable('projects')
    .set({ vault_epoch: epoch, rekey_recommended: 0 })
    .where('id', '=', projectId)
    .execute();
}

/** Every listing of the project changes: bump each environment's revision (the cache key). */
export async function bumpAllRevisions(db: Db, projectId: string) {
  const rows = await db
    .updateTable('environments')
    .set((eb) => ({ revision: eb('revision', '+', 1) }))
    .where('project_id', '=', projectId)
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}
