import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { ChangeTokens } from './db/change-tokens.js';
import type { Db } from './db/database.js';
import type { ListingCache } from './domains/secrets/listing-cache.js';

/**
 * What the services, workers and routes of one app share, built once by
 * `compose.ts` from the process's resources (`ProcessResources`). Services take
 * the part of it they use (`Pick<SharedDeps, 'db' | 'clock'>`).
 */
export interface SharedDeps {
  config: Config;
  db: Db;
  clock: Clock;
  /** Serialized environment listings (shared over Redis when configured). */
  listingCache: ListingCache;
  /**
   * When a project's cached reads are still valid: in this process on SQLite,
   * in Redis on PostgreSQL with Redis; null on PostgreSQL alone (every read
   * asks the database, as any number of instances could be writing).
   */
  changeTokens: ChangeTokens | null;
}
