import { envelopeEpoch } from '@coffer/sdk';
import type { Kysely } from 'kysely';
import type { SharedDeps } from '../../shared-deps.js';
import { environmentWriter } from '../../db/environment-write.js';
import type { Database } from '../../db/schema.js';
import { AppError, notFound, staleEpoch, validation } from '../../errors.js';
import type { ListParams, Page } from '../../http/pagination.js';
import { isId, newId } from '../../ids.js';
import { auditRows, type Actor, type AuditBuffer, type AuditEntry } from '../audit/audit.js';
import {
  callerIn,
  contextOf,
  requireReader,
  requireWriter,
  resolveEnvironment,
  resolveEnvironmentWith,
  type EnvironmentContext,
} from '../../access/environment-access.js';
import {
  findEnvironmentWithMembership,
  type EnvironmentWithMembership,
} from '../../access/access.repo.js';
import { TokenCache } from '../../db/change-tokens.js';
import { etagOf, ListingCache, type CachedListing } from './listing-cache.js';
import * as repo from './secrets.repo.js';
import { resultShape } from '../idempotency/body-strings.js';
import {
  MAX_BATCH_ITEMS,
  type BatchInput,
  type PutSecretInput,
  type RollbackInput,
  type SecretObject,
  type SecretSort,
  type SecretVersionObject,
  type VersionSort,
} from './secrets.schemas.js';

const toSecret = (row: repo.SecretRow, withValue: boolean): SecretObject => ({
  id: row.id,
  environment_id: row.environment_id,
  name: row.name,
  version: row.version,
  ...(withValue ? { value: row.value } : {}),
  comment: row.comment,
  created_at: row.created_at,
  updated_at: row.updated_at,
  updated_by: row.updated_by,
});

/** The properties of `toSecret(row, true)`, in its order. */
const SECRET_PROPERTIES = [
  'id',
  'environment_id',
  'name',
  'version',
  'value',
  'comment',
  'created_at',
  'updated_at',
  'updated_by',
] as const;

/**
 * How the results of `put` and `remove` (their environment write's, `write`
 * below) are laid out, for their routes to store them under an idempotency
 * key by position (`idempotencyResultShape`): a put's row then holds about
 * 80 characters of its result instead of 300. The audit chain's statement
 * is needed only at the commit, and a removal's result is nothing.
 */
export const PUT_RESULT_SHAPE = resultShape(
  'secret-put.1',
  [
    'environmentId',
    ...SECRET_PROPERTIES.map((property) => `result.secret.${property}`),
    'result.created',
  ],
  { auditChain: '' },
);
export const REMOVE_RESULT_SHAPE = resultShape('secret-remove.1', ['environmentId'], {
  result: undefined,
  auditChain: '',
});

const toVersion = (row: repo.SecretVersionRow, withValue: boolean): SecretVersionObject => ({
  id: row.id,
  secret_id: row.secret_id,
  version: row.version,
  ...(withValue ? { value: row.value } : {}),
  created_at: row.created_at,
  created_by: row.created_by,
});

function checkExpectedVersion(field: string, expected: number | undefined, current: number): void {
  if (expected === undefined || expected === current) return;
  const message =
    current === 0
      ? `The secret does not exist (expected version ${expected})`
      : `The secret is at version ${current}, not ${expected}: reload it before writing`;
  throw new AppError('version_conflict', message, [
    { field, issue: 'stale', current_version: current },
  ]);
}

const isToken = (context: EnvironmentContext) => context.access.principal.kind !== 'session';

interface ListingResult {
  listing: CachedListing;
  /** Audits the listing as a read (tokens only): call it when its body is sent, not for a 304. */
  countRead(): void;
}

interface SecretsServiceDeps extends Pick<
  SharedDeps,
  'db' | 'clock' | 'listingCache' | 'changeTokens'
> {
  /** Where reads by tokens are audited, in batches (see `AuditBuffer`). */
  readAudit: AuditBuffer;
}

/** An audit event of a secret change; the project and target type are filled in by `write`. */
type SecretAudit = Omit<AuditEntry, 'projectId' | 'targetType'>;

/**
 * What a secret change did besides changing `secrets`: the versions and audit
 * events it appends, written by `write` together with the revision bump.
 */
interface Change<T> {
  result: T;
  /** A secret row for `write` to write with the rest (one statement on PostgreSQL). */
  secret?: repo.SecretWrite | undefined;
  versions: repo.SecretVersionRow[];
  audit: SecretAudit[];
}

/** What `write` hands a change: the environment it may write, the key epoch, the time, the secret. */
interface WriteTarget {
  context: EnvironmentContext;
  epoch: number;
  now: Date;
  /** The secret `write` was asked for by name (locked on PostgreSQL); undefined for a batch or a new name. */
  existing: repo.SecretRow | undefined;
}

/** Bounds of the hot reads' lookups kept under a change token (entries; characters of values). */
const MAX_CACHED_LOOKUPS = 10_000;
const MAX_CACHED_VALUE_CHARS = 16_000_000;

export function secretsService(ctx: SecretsServiceDeps) {
  const db = ctx.db.kysely;
  const cache = ctx.listingCache;
  const writer = environmentWriter(ctx.db);
  const tokens = ctx.changeTokens;
  /**
   * The lookups of the two hottest reads, kept while the project's change
   * token holds (`db/change-tokens.ts`): an environment with the caller's
   * membership, and the same with one secret. Only a caller who is a member is
   * kept (a refusal is never cached).
   */
  const caches = {
    access: new TokenCache<EnvironmentWithMembership>(MAX_CACHED_LOOKUPS, MAX_CACHED_LOOKUPS),
    secret: new TokenCache<EnvironmentWithMembership & { secret: repo.SecretRow | undefined }>(
      MAX_CACHED_LOOKUPS,
      MAX_CACHED_VALUE_CHARS,
    ),
  };
  /** The key of `caches.secret`: one secret as one user reads it. */
  const secretKey = (projectId: string, ref: string, userId: string, name: string) =>
    `${projectId}/${ref}/${userId}/${name}`;
  /** Response bodies of `get`, by the row they were made from: kept as long as the row is cached. */
  const bodies = new WeakMap<repo.SecretRow, string>();

  /**
   * `find`'s row from `cache` when the project's change token is the one it
   * was stored under; otherwise from the database, stored under the token read
   * BEFORE the query (so a write committed meanwhile makes it a miss later,
   * never a stale hit).
   */
  async function cachedLookup<R extends EnvironmentWithMembership>(
    lookups: TokenCache<R>,
    projectId: string,
    key: string,
    find: () => Promise<R | undefined>,
    weight: (row: R) => number = () => 1,
  ): Promise<R | undefined> {
    const token = tokens === null ? null : await tokens.current(projectId);
    if (token === null) return find();
    const cached = lookups.get(key, token);
    if (cached !== undefined) return cached;
    const row = await find();
    if (row !== undefined && row.member_role !== null) lookups.set(key, token, row, weight(row));
    return row;
  }

  /**
   * Audits a read of values by an API key or CI token (names only), off the
   * request's path; `sameAs` identifies the content, so repeated identical reads
   * are counted in one event (see `AuditBuffer`).
   */
  function auditTokenRead(
    actor: Actor,
    context: EnvironmentContext,
    entry: Omit<AuditEntry, 'projectId'>,
    sameAs: string,
  ) {
    if (context.scope === null || !isToken(context)) return;
    const event = { projectId: context.access.projectId, ...entry };
    ctx.readAudit.record(actor, event, ctx.clock.now(), sameAs);
  }

  /** `auditTokenRead` of one secret's value. */
  function auditSecretRead(actor: Actor, context: EnvironmentContext, row: repo.SecretRow) {
    auditTokenRead(
      actor,
      context,
      {
        action: 'secret.read',
        targetType: 'secret',
        targetId: row.id,
        data: { environment_id: row.environment_id, name: row.name, version: row.version },
      },
      `v${row.version}`,
    );
  }

  /**
   * Every secret change: in the environment write runner (`db/environment-write.ts`),
   * resolve the environment, the caller's access, the key epoch and the named
   * secret on the committed state; require write access; run the change; store its
   * secret row, versions and audit events. Cached listings go after commit.
   * ARCHITECTURE.md ("Locking") says why it is shaped so.
   */
  async function write<T>(
    actor: Actor,
    projectId: string,
    ref: string,
    name: string | null,
    change: (trx: Kysely<Database>, target: WriteTarget) => Promise<Change<T>>,
  ): Promise<T> {
    callerIn(actor.principal, projectId); // strangers never take the project's lock
    if (!isId('project', projectId)) throw notFound('Project');
    const { environmentId, result } = await writer.runEnvironmentWrite(
      projectId,
      async (trx) => {
        const { context, row } = await resolveEnvironmentWith(
          trx,
          actor.principal,
          projectId,
          (userId) => repo.findWriteTarget(trx, ctx.db.dialect, projectId, ref, userId, name),
        );
        requireWriter(context);
        const now = ctx.clock.now();
        const { result, secret, versions, audit } = await change(trx, {
          context,
          epoch: Number(row.vault_epoch),
          now,
          existing: row.secret,
        });
        const auditChain = await repo.appendChange(trx, ctx.db.dialect, {
          secret,
          versions,
          audit: auditRows(
            actor,
            audit.map((entry) => ({ projectId, targetType: 'secret', ...entry })),
            now,
          ),
        });
        return { environmentId: context.environment.id, result, auditChain };
      },
      actor.writeClaim,
    );
    cache.invalidateEnvironments([environmentId]);
    return result;
  }

  async function existingSecret(handle: Kysely<Database>, environmentId: string, name: string) {
    const row = await repo.findSecret(handle, environmentId, name);
    if (!row) throw notFound('Secret');
    return row;
  }

  return {
    /** The hot reads' lookups (their hits and misses are in the metrics). */
    caches,

    /**
     * One page of an environment's secrets, as cached serialized bytes. The
     * same bytes serve every caller of the same variant: values for readers,
     * names and metadata for everyone else.
     */
    async list(
      actor: Actor,
      projectId: string,
      ref: string,
      params: ListParams<SecretSort>,
      serialize: (page: Page<SecretObject>) => string,
    ): Promise<ListingResult> {
      const { context } = await resolveEnvironmentWith(db, actor.principal, projectId, (userId) =>
        cachedLookup(caches.access, projectId, `${projectId}/${ref}/${userId}`, () =>
          findEnvironmentWithMembership(db, projectId, ref, userId),
        ),
      );
      const { environment } = context;
      const reader = context.scope !== null;
      const key = ListingCache.keyOf({
        environmentId: environment.id,
        revision: environment.revision,
        variant: reader ? 'values' : 'names',
        ...params,
      });
      let listing = cache.get(key);
      if (!listing) {
        const rows = await repo.listSecrets(db, environment.id, params);
        const total = await repo.countSecrets(db, environment.id);
        const body = Buffer.from(
          serialize({ items: rows.map((row) => toSecret(row, reader)), total }),
        );
        listing = { body, etag: etagOf(body), names: rows.map((row) => row.name) };
        cache.set(key, projectId, environment.id, listing);
      }
      const read = listing;
      const countRead = () =>
        auditTokenRead(
          actor,
          context,
          {
            action: 'secrets.listed',
            targetType: 'environment',
            targetId: environment.id,
            data: { names: read.names, page: params.page },
          },
          read.etag,
        );
      return { listing, countRead };
    },

    /**
     * A secret with its value, as the response body `serialize` (the route's
     * own serializer) makes of it: once per cached lookup, so a cache hit
     * serializes nothing.
     */
    async get(
      actor: Actor,
      projectId: string,
      ref: string,
      name: string,
      serialize: (secret: SecretObject) => string,
    ): Promise<string> {
      // Environment, access and the secret in one query: reading a value is the hottest write-free path.
      const { context, row: found } = await resolveEnvironmentWith(
        db,
        actor.principal,
        projectId,
        (userId) =>
          cachedLookup(
            caches.secret,
            projectId,
            secretKey(projectId, ref, userId, name),
            () => repo.findSecretWithMembership(db, projectId, ref, userId, name),
            // The value is kept twice: in the row and in its serialized body.
            (row) => 1 + 2 * (row.secret?.value.length ?? 0),
          ),
      );
      requireReader(context);
      const row = found.secret;
      if (!row) throw notFound('Secret');
      auditSecretRead(actor, context, row);
      let body = bodies.get(row);
      if (body === undefined) {
        body = serialize(toSecret(row, true));
        bodies.set(row, body);
      }
      return body;
    },

    /**
     * `get`'s answer when this instance holds all of it: the lookup cached under
     * the project's current change token, a caller who may read the value, and
     * the body serialized from that row. Otherwise undefined, with nothing
     * audited or counted, and the caller asks `get`. The cached-read path
     * (`http/cached-reads.ts`) answers with it without Fastify.
     */
    async cachedGet(
      actor: Actor,
      projectId: string,
      ref: string,
      name: string,
    ): Promise<string | undefined> {
      const caller = actor.principal;
      if (tokens === null || caller === null) return undefined;
      if (caller.kind !== 'session' && caller.projectId !== projectId) return undefined;
      const token = await tokens.current(projectId);
      if (token === null) return undefined;
      const found = caches.secret.peek(secretKey(projectId, ref, caller.userId, name), token);
      const row = found?.secret;
      if (!row || found.member_role === null) return undefined;
      const body = bodies.get(row);
      if (body === undefined) return undefined;
      const context = contextOf(caller, projectId, found, found.member_role);
      if (context.scope === null) return undefined;
      caches.secret.hits++;
      auditSecretRead(actor, context, row);
      return body;
    },

    /** Creates or updates; `created` tells the route 201 from 200. */
    async put(
      actor: Actor,
      projectId: string,
      ref: string,
      name: string,
      input: PutSecretInput,
    ): Promise<{ secret: SecretObject; created: boolean }> {
      return write(actor, projectId, ref, name, async (_trx, target) => {
        const { context, epoch, now, existing } = target;
        const environmentId = context.environment.id;
        const valueEpoch = envelopeEpoch(input.value);
        if (valueEpoch !== epoch) throw staleEpoch('value', epoch);
        checkExpectedVersion('expected_version', input.expected_version, existing?.version ?? 0);
        const at = now.toISOString();
        const row: repo.SecretRow = existing
          ? {
              ...existing,
              value: input.value,
              epoch: valueEpoch,
              version: existing.version + 1,
              comment: input.comment ?? existing.comment,
              updated_at: at,
              updated_by: context.access.userId,
            }
          : {
              id: newId('secret'),
              project_id: projectId,
              environment_id: environmentId,
              name,
              version: 1,
              value: input.value,
              epoch: valueEpoch,
              comment: input.comment ?? '',
              created_at: at,
              updated_at: at,
              updated_by: context.access.userId,
            };
        return {
          result: { secret: toSecret(row, true), created: !existing },
          secret: { row, created: !existing },
          versions: [versionOf(row)],
          audit: [
            {
              action: existing ? 'secret.updated' : 'secret.created',
              targetId: row.id,
              data: { environment_id: environmentId, name, version: row.version },
            },
          ],
        };
      });
    },

    /** Deletes a secret with every version of it. */
    async remove(actor: Actor, projectId: string, ref: string, name: string): Promise<void> {
      await write(actor, projectId, ref, name, async (trx, { existing: row }) => {
        if (!row) throw notFound('Secret');
        await repo.deleteSecrets(trx, [row.id]);
        return {
          result: undefined,
          versions: [],
          audit: [
            {
              action: 'secret.deleted',
              targetId: row.id,
              data: { environment_id: row.environment_id, name, version: row.version },
            },
          ],
        };
      });
    },

    async versions(
      actor: Actor,
      projectId: string,
      ref: string,
      name: string,
      params: ListParams<VersionSort>,
    ) {
      const context = await resolveEnvironment(db, actor.principal, projectId, ref);
      const reader = context.scope !== null;
      const secret = await existingSecret(db, context.environment.id, name);
      const rows = await repo.listVersions(db, secret.id, params);
      const total = await repo.countVersions(db, secret.id);
      auditTokenRead(
        actor,
        context,
        {
          action: 'secret.versions_listed',
          targetType: 'secret',
          targetId: secret.id,
          data: {
            environment_id: secret.environment_id,
            name,
            versions: rows.map((r) => r.version),
          },
        },
        rows.map((r) => r.id).join(','),
      );
      return { items: rows.map((row) => toVersion(row, reader)), total };
    },

    /**
     * Makes an old version's value current again as a NEW version. The old
     * envelope is copied as is, so it must be under the current key epoch.
     */
    async rollback(
      actor: Actor,
      projectId: string,
      ref: string,
      name: string,
      input: RollbackInput,
    ): Promise<SecretObject> {
      return write(actor, projectId, ref, name, async (trx, target) => {
        const { context, epoch, now, existing: secret } = target;
        if (!secret) throw notFound('Secret');
        checkExpectedVersion('expected_version', input.expected_version, secret.version);
        const old = await repo.findVersion(trx, secret.id, input.version);
        if (!old) {
          throw new AppError('not_found', `Version ${input.version} of ${name} not found`, [
            { field: 'version', issue: 'not_found' },
          ]);
        }
        if (old.epoch !== epoch) {
          throw staleEpoch(
            'version',
            epoch,
            `Version ${input.version} is encrypted under key epoch ${old.epoch}, not the current ${epoch}; write its value again instead`,
          );
        }
        const row: repo.SecretRow = {
          ...secret,
          value: old.value,
          epoch: old.epoch,
          version: secret.version + 1,
          updated_at: now.toISOString(),
          updated_by: context.access.userId,
        };
        return {
          result: toSecret(row, true),
          secret: { row, created: false },
          versions: [versionOf(row)],
          audit: [
            {
              action: 'secret.rolled_back',
              targetId: row.id,
              data: {
                environment_id: row.environment_id,
                name,
                from_version: input.version,
                version: row.version,
              },
            },
          ],
        };
      });
    },

    /**
     * Writes and deletes many secrets in one transaction: all or nothing. An
     * error names the item (`secrets.3.value`, `delete.0`).
     */
    async batch(actor: Actor, projectId: string, ref: string, input: BatchInput) {
      const items = input.secrets ?? [];
      const deletes = input.delete ?? [];
      const count = items.length + deletes.length;
      if (count === 0) throw validation('secrets', 'too_few', 'Give secrets to write or delete');
      if (count > MAX_BATCH_ITEMS) {
        throw validation('secrets', 'too_many', `At most ${MAX_BATCH_ITEMS} items per batch`);
      }
      const seen = new Set<string>();
      const fields = [
        ...items.map((item, i) => [item.name, `secrets.${i}.name`] as const),
        ...deletes.map((name, i) => [name, `delete.${i}`] as const),
      ];
      for (const [name, field] of fields) {
        if (seen.has(name))
          throw validation(field, 'duplicate', `${name} appears twice in the batch`);
        seen.add(name);
      }

      return write(actor, projectId, ref, null, async (trx, { context, epoch, now }) => {
        const environmentId = context.environment.id;
        items.forEach((item, i) => {
          if (envelopeEpoch(item.value) !== epoch) throw staleEpoch(`secrets.${i}.value`, epoch);
        });
        const existing = new Map(
          (await repo.findSecretsByName(trx, environmentId, [...seen], writer.lockRows)).map(
            (r) => [r.name, r],
          ),
        );
        items.forEach((item, i) =>
          checkExpectedVersion(
            `secrets.${i}.expected_version`,
            item.expected_version,
            existing.get(item.name)?.version ?? 0,
          ),
        );
        const deleted = deletes.map((name, i) => {
          const row = existing.get(name);
          if (!row) {
            throw new AppError('not_found', `Secret ${name} not found`, [
              { field: `delete.${i}`, issue: 'not_found' },
            ]);
          }
          return row;
        });

        const at = now.toISOString();
        const written = items.map((item): repo.SecretWrite => {
          const old = existing.get(item.name);
          const fresh = {
            value: item.value,
            epoch,
            updated_at: at,
            updated_by: context.access.userId,
          };
          return old
            ? {
                row: {
                  ...old,
                  ...fresh,
                  version: old.version + 1,
                  comment: item.comment ?? old.comment,
                },
                created: false,
              }
            : {
                row: {
                  ...fresh,
                  id: newId('secret'),
                  project_id: projectId,
                  environment_id: environmentId,
                  name: item.name,
                  version: 1,
                  comment: item.comment ?? '',
                  created_at: at,
                },
                created: true,
              };
        });
        await repo.deleteSecrets(
          trx,
          deleted.map((r) => r.id),
        );
        await repo.insertSecrets(
          trx,
          written.filter((w) => w.created).map((w) => w.row),
        );
        for (const { row } of written.filter((w) => !w.created)) {
          await repo.updateSecret(trx, row);
        }
        const audit = (action: string, row: repo.SecretRow): SecretAudit => ({
          action,
          targetId: row.id,
          data: {
            environment_id: environmentId,
            name: row.name,
            version: row.version,
            batch: true,
          },
        });
        return {
          result: {
            secrets: written.map((w) => toSecret(w.row, true)),
            deleted: deleted.map((r) => r.name),
          },
          versions: written.map((w) => versionOf(w.row)),
          audit: [
            ...written.map((w) => audit(w.created ? 'secret.created' : 'secret.updated', w.row)),
            ...deleted.map((row) => audit('secret.deleted', row)),
          ],
        };
      });
    },
  };
}

/** The history row of a secret's current state. */
function versionOf(row: repo.SecretRow): repo.SecretVersionRow {
  return {
    id: newId('secretVersion'),
    secret_id: row.id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    version: row.version,
    value: row.value,
    epoch: row.epoch,
    created_at: row.updated_at,
    created_by: row.updated_by,
  };
}

export type SecretsService = ReturnType<typeof secretsService>;
