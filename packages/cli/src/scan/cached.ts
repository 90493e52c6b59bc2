import { allEnvironments, secretListingTag, type CofferClient } from '@coffer/sdk';
import type { Context } from '../context.js';
import {
  cacheKeys,
  cachePath,
  KeyedMatcher,
  readCache,
  wipeKeys,
  type CachedScan,
  type CacheKeys,
} from './cache.js';
import { SecretScanner } from './scanner.js';

/**
 * Where the hook's keyed-hash cache is checked against the server: one round
 * trip, with no value fetched or decrypted.
 *
 * What the cache was built from is valid while (a) each scanned environment's
 * check listing (`GET …/secrets?per_page=100&sort=updated_at&order=desc`, the
 * hundred most recently changed secrets with the page count) still has the
 * ETag it had before the values were read: every write to an environment
 * (create, update, rollback, rename, delete, re-key) changes that page, since
 * the changed secret moves to its top or the count changes, and the server's
 * ETag is a hash of the page's exact bytes; a viewer's page (names only) or a
 * refusal differs too; and (b) the environments are the same: for a login (whose
 * project key opens them all) no environment was added, the ones named with
 * `--env` are still the same ones, and none was renamed (findings name them).
 * A token's environments are its scopes, fixed when it was created. Anything else, an error included, means the full path:
 * fetch, decrypt, scan, and write the cache again.
 */
export class ScanCacheAccess {
  private constructor(
    readonly keys: CacheKeys,
    readonly path: string,
    readonly descriptor: string,
    private readonly ctx: Context,
    readonly client: CofferClient,
  ) {}

  static async open(ctx: Context, envRefs: string[], minLength: number): Promise<ScanCacheAccess> {
    const material = ctx.token
      ? Buffer.from(ctx.token, 'utf8')
      : Buffer.from(ctx.requireSession().keys.encryption, 'base64url');
    const keys = cacheKeys(material);
    material.fill(0);
    const descriptor = JSON.stringify([
      ctx.server(),
      ctx.hasProjectRef() ? ctx.projectRef() : '',
      [...envRefs].sort(),
      minLength,
    ]);
    const client = await ctx.client();
    return new ScanCacheAccess(keys, cachePath(keys, descriptor), descriptor, ctx, client);
  }

  read(): CachedScan | null {
    return readCache(this.path, this.keys, this.descriptor);
  }

  /**
   * The ETag of an environment's check listing (null when it has none); with
   * `known`, whether it is unchanged (`304`) instead.
   */
  async check(projectId: string, envId: string, known?: string): Promise<string | null> {
    const { changed, etag } = await secretListingTag(
      this.client,
      projectId,
      envId,
      { page: 1, per_page: 100, sort: 'updated_at', order: 'desc' },
      known,
    );
    if (known) return changed ? null : known;
    return etag;
  }

  /** Whether the cache still holds exactly what a full scan would look for now. */
  async current(cached: CachedScan, envRefs: string[]): Promise<boolean> {
    const { projectId, environments } = cached.header;
    if (environments.some((e) => !e.etag)) return false;
    try {
      const [listing, unchanged] = await Promise.all([
        allEnvironments(this.client, projectId).then(
          (envs) => envs.map((e) => ({ id: e.id, slug: e.slug, name: e.name })),
          () => null, // a token that may not list: its environments are its grants, which never change
        ),
        Promise.all(environments.map((e) => this.check(projectId, e.id, e.etag))),
      ]);
      if (unchanged.some((etag) => etag === null)) return false;
      if (listing === null) return this.ctx.token !== null;
      const sameSlugs = environments.every(
        (e) => listing.find((l) => l.id === e.id)?.slug === e.slug,
      );
      if (!sameSlugs) return false;
      if (envRefs.length > 0) {
        // The environments named, in order, each once.
        const named: string[] = [];
        for (const ref of envRefs) {
          const env = listing.find((l) => l.id === ref || l.slug === ref || l.name === ref);
          if (!env) return false;
          if (!named.includes(env.id)) named.push(env.id);
        }
        return (
          named.length === environments.length && named.every((id, i) => id === environments[i]!.id)
        );
      }
      // A member's login opens every environment (a new one must be scanned too);
      // a token's scopes are fixed when it is created.
      return this.ctx.token !== null || listing.length === environments.length;
    } catch {
      return false;
    }
  }

  /** A scanner over the cache's keyed hashes. */
  scanner(cached: CachedScan): SecretScanner {
    return new SecretScanner({
      matcher: new KeyedMatcher(
        this.keys,
        cached.patterns.length,
        cached.anchorTags,
        cached.fullTags,
      ),
      patterns: cached.patterns,
    });
  }

  wipe(): void {
    wipeKeys(this.keys);
  }
}
