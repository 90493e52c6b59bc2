import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { ChangeTokens } from './db/change-tokens.js';
import type { Db } from './db/database.js';
import type { ListingCache } from './domains/secrets/listing-cache.js';

/**
 * The infrastructure every part is built from, once per app, in `compose.ts`.
 * Services take the part of it they use (`Pick<Infra, 'db' | 'clock'>`).
 */
export interface Infra {
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
