import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import { claimedClock, type Clock } from './clock.js';
import { unclaimed } from './db/write-claims.js';
import type { Config } from './config.js';
import { LocalChangeTokens, RedisChangeTokens, type ChangeTokens } from './db/change-tokens.js';
import type { Db } from './db/database.js';
import type { CredentialResolver } from './http/principal.js';
import type { SharedDeps } from './shared-deps.js';
import { AuditBuffer } from './domains/audit/audit.js';
import { auditService } from './domains/audit/audit.service.js';
import { environmentsService } from './domains/environments/environments.service.js';
import { eventsService } from './domains/events/events.service.js';
import { FeedHub } from './domains/events/hub.js';
import { ChangeNotifier } from './domains/events/notifier.js';
import {
  CredentialCache,
  credentialResolver,
  shareCredentialInvalidation,
} from './domains/identity/credentials.js';
import { identityService } from './domains/identity/identity.service.js';
import { invitationsService } from './domains/members/invitations/invitations.service.js';
import { idempotencyPurge, idempotencyService } from './domains/idempotency/idempotency.service.js';
import { keyTrustService } from './domains/key-trust/key-trust.service.js';
import { OutboxWorker } from './domains/mail/outbox-worker.js';
import { invitationExpirySweep } from './domains/members/invitations/invitation-expiry.js';
import { membersService } from './domains/members/members.service.js';
import { membershipChainService } from './domains/membership-chain/membership-chain.service.js';
import { overridesService } from './domains/overrides/overrides.service.js';
import { projectsService } from './domains/projects/projects.service.js';
import { ListingCache } from './domains/secrets/listing-cache.js';
import { secretsService } from './domains/secrets/secrets.service.js';
import { tokensService } from './domains/tokens/tokens.service.js';
import { vaultService } from './domains/vault/vault.service.js';
import { WebhookWorker } from './domains/webhooks/delivery-worker.js';
import { feedSource, latestEventId } from './domains/webhooks/feed-source.js';
import { webhooksService } from './domains/webhooks/webhooks.service.js';

/**
 * What the process hands the app to build itself from: configuration, the
 * database and Redis connections it opened (and closes), the clock; nothing of
 * a domain. `compose` turns it into `SharedDeps`.
 */
export interface ProcessResources {
  config: Config;
  db: Db;
  clock: Clock;
  /** Shares listing and credential invalidations across instances when set. */
  redis?: Redis | null;
  /** Serialized environment listings; built here (on `redis` when set) when omitted. */
  listingCache?: ListingCache;
  /** How credentials become principals; the identity domain's resolver when omitted. */
  resolver?: CredentialResolver;
}

/**
 * The composition root: every service, buffer, worker and cache of one app,
 * built once from the process's resources. Route plugins receive the services they
 * call (`Services`); nothing else constructs a service.
 */
export function compose(resources: ProcessResources, log: FastifyBaseLogger) {
  const { config, db, redis } = resources;
  const clock = claimedClock(resources.clock);
  const listingCache =
    resources.listingCache ??
    new ListingCache({
      ...(redis ? { redis, channel: `${config.redisKeyPrefix}listings` } : {}),
      onError: (err) => log.warn({ err }, 'listing cache: Redis invalidation failed'),
    });
  const changeTokens = changeTokensFor(db, redis ?? null, config.redisKeyPrefix, log);
  const shared: SharedDeps = { config, db, clock, listingCache, changeTokens };

  // State of the app (never of a module): resolved credentials, the outbox
  // worker, read audits waiting to be written, the invitation expiry sweep.
  const credentials = new CredentialCache();
  // With Redis, a revoked session, API key or CI token ends on every instance at once.
  const credentialSharing = redis
    ? shareCredentialInvalidation(
        credentials,
        redis,
        `${config.redisKeyPrefix}credentials`,
        (err) => log.warn({ err }, 'credential cache: Redis invalidation failed'),
      )
    : null;
  const resolver = resources.resolver ?? credentialResolver(db.kysely, credentials);
  const outbox = new OutboxWorker({ db, clock, config, log });
  const readAudit = new AuditBuffer(db.kysely, {
    onError: (err, dropped) => log.error({ err, dropped }, 'writing read audit events failed'),
  });
  const invitationSweep = invitationExpirySweep(shared, log);
  const webhookWorker = new WebhookWorker({ db, clock, config, log, source: feedSource });
  // The change feed: told of every committed write (across instances with
  // Redis), it reads the new events from the audit log once per project.
  const notifier = new ChangeNotifier({
    redis: redis ?? null,
    channel: `${config.redisKeyPrefix}events`,
    onError: (err) => log.warn({ err }, 'change feed: Redis notification failed'),
  });
  const feedHub = new FeedHub(db.kysely, notifier, {
    pollMs: config.events.pollMs,
    onError: (err) => log.error({ err }, 'change feed: reading the audit log failed'),
  });
  // Webhooks turn the feed's new events into deliveries when a project changes.
  notifier.subscribe((projectId) => webhookWorker.wake(projectId));
  const idempotency = idempotencyService(shared);
  const idempotencySweep = idempotencyPurge(idempotency, log);

  // A service that calls another domain receives that domain's service.
  const identity = identityService({ config, db, clock, credentials });
  const projects = projectsService(shared);
  const vault = vaultService(shared);
  const tokens = tokensService({ db, clock, credentials, vault });
  const overrides = overridesService(shared);
  const members = membersService({
    db,
    clock,
    config,
    credentials,
    // The worker's run outlives the request that wakes it: not under its claim.
    wakeOutbox: () => unclaimed(() => outbox.wake()),
    identity,
    projects,
    tokens,
    vault,
    overrides,
  });
  const services = {
    identity,
    projects,
    members,
    invitations: invitationsService({ ...shared, members, identity }),
    environments: environmentsService({ ...shared, vault }),
    secrets: secretsService({ ...shared, readAudit }),
    audit: auditService(shared),
    vault,
    tokens,
    keyTrust: keyTrustService({ ...shared, identity, vault }),
    membershipChain: membershipChainService({ ...shared, identity }),
    webhooks: webhooksService({
      ...shared,
      vault,
      wakeDelivery: () => webhookWorker.wake(),
      latestEventId,
    }),
    overrides,
    events: eventsService({ ...shared, hub: feedHub }),
  };

  return {
    shared,
    services,
    credentials,
    resolver,
    outbox,
    webhookWorker,
    readAudit,
    /** The change feed's notifier (call after a write commits) and its per-project fan-out. */
    events: { notifier, hub: feedHub },
    /** Idempotency keys: the pipeline's claims (http/idempotency.ts). */
    idempotency,
    /** Starts the background work (when the app is ready). */
    start(): void {
      outbox.start();
      webhookWorker.start();
      invitationSweep.start();
      idempotencySweep.start();
    },
    /** Stops it and flushes what waits in memory (when the app closes). */
    async close(): Promise<void> {
      invitationSweep.stop();
      idempotencySweep.stop();
      await outbox.stop();
      await webhookWorker.stop();
      await readAudit.close();
      listingCache.close();
      feedHub.close();
      await notifier.close();
      await credentialSharing?.close();
    },
  };
}

/**
 * Where the change tokens live (`db/change-tokens.ts`): in this process on
 * SQLite, in Redis on PostgreSQL with Redis, nowhere on PostgreSQL alone.
 */
function changeTokensFor(
  db: Db,
  redis: Redis | null,
  prefix: string,
  log: FastifyBaseLogger,
): ChangeTokens | null {
  if (db.foreignCommits) return new LocalChangeTokens(db.foreignCommits);
  if (!redis) return null;
  return new RedisChangeTokens(redis, `${prefix}changes:`, {
    onDegraded: (err) =>
      log.warn(
        { err },
        'read caches: Redis unreachable; reads ask the database and writes to projects are refused (503) until it is back',
      ),
    onRecovered: () => log.warn('read caches: Redis is reachable again; cached reads resume'),
  });
}

type Composition = ReturnType<typeof compose>;
/** Every service, by name: what route plugins pick theirs from. */
export type Services = Composition['services'];
