import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  SecretReferenceError,
  createProjectWithVault,
  exportSecrets,
  getSecret,
  listSecrets,
  openVault,
  readWithReferences,
  ready,
  rekey,
  setOverride,
  setSecret,
  watchSecrets,
  type SecretScope,
  type SecretsSnapshot,
  type VaultSession,
} from '../src/index.js';
import { DIALECTS } from '../../server/test/support/db.js';
import { newUser, startServer, type Member, type Server } from './vault-support.js';

// The SDK's read helpers against a real server: references across
// environments and projects fetched lazily through the reader's own access,
// and the member's overrides on top.

for (const dialect of DIALECTS) {
  describe(`read helpers resolve references and apply overrides (${dialect})`, () => {
    let server: Server;
    let admin: Member;
    let shop: string;
    let billing: string;
    let vault: VaultSession;
    let scope: SecretScope;
    let billingScope: SecretScope;
    const requests: string[] = [];

    before(async () => {
      await ready();
      server = await startServer(dialect);
      admin = await newUser(server);
      shop = (await createProjectWithVault(admin.client, admin.keys, { name: 'Shop' })).id;
      billing = (await createProjectWithVault(admin.client, admin.keys, { name: 'Billing' })).id;
      vault = await openVault(admin.client, shop, admin.keys);
      scope = { client: admin.client, projectId: shop, keys: vault };
      billingScope = {
        client: admin.client,
        projectId: billing,
        keys: await openVault(admin.client, billing, admin.keys),
      };
      await setSecret(billingScope, 'production', 'STRIPE_KEY', 'sk_${live.SUFFIX}');
      await setSecret(billingScope, 'live', 'SUFFIX', 'live_42').catch(async () => {
        // Billing has no "live" environment by default: make one.
        await admin.client.request('POST', `/v1/projects/${billing}/environments`, {
          body: { name: 'live' },
        });
        await setSecret(billingScope, 'live', 'SUFFIX', 'live_42');
      });
      await setSecret(scope, 'staging', 'HOST', 'db.staging');
      await setSecret(scope, 'production', 'PORT', '5432');
      await setSecret(scope, 'production', 'URL', 'pg://${staging.HOST}:${PORT}');
      await setSecret(scope, 'production', 'PAY', '${Billing/production.STRIPE_KEY}');
      await setSecret(scope, 'production', 'PLAIN', 'nothing to resolve');
      // Count the listing requests the client makes.
      const original = admin.client.requestPage.bind(admin.client);
      admin.client.requestPage = ((method: string, path: string, options?: unknown) => {
        requests.push(path);
        return original(method as never, path, options as never);
      }) as typeof admin.client.requestPage;
    });
    after(async () => server?.close());

    const withProjects = {
      project: async (ref: string) => (ref === 'Billing' || ref === billing ? billingScope : null),
    };

    it('resolves across environments and projects, fetching only what is referenced', async () => {
      requests.length = 0;
      assert.deepEqual(await listSecrets(scope, 'production', withProjects), {
        PAY: 'sk_live_42',
        PLAIN: 'nothing to resolve',
        PORT: '5432',
        URL: 'pg://db.staging:5432',
      });
      const listings = requests.filter((p) => p.endsWith('/secrets')).sort();
      assert.deepEqual(
        listings,
        [
          `/v1/projects/${billing}/environments/live/secrets`,
          `/v1/projects/${billing}/environments/production/secrets`,
          `/v1/projects/${shop}/environments/production/secrets`,
          `/v1/projects/${shop}/environments/staging/secrets`,
        ].sort(),
      );
      assert.equal(
        (await getSecret(scope, 'production', 'URL')).value,
        'pg://db.staging:5432',
        'getSecret resolves too',
      );
      assert.match(
        await exportSecrets(scope, 'production', 'json', { ...withProjects, raw: true }),
        /"URL": "pg:\/\/\$\{staging.HOST\}:\$\{PORT\}"/,
      );
    });

    it('without a way to open the other project, the reference is unreadable, and nothing is returned', async () => {
      await assert.rejects(listSecrets(scope, 'production'), (err: SecretReferenceError) => {
        assert.equal(err.code, 'reference_unreadable');
        assert.equal(err.secret, 'PAY');
        return true;
      });
      // A reader asking for one secret only meets that secret's references.
      assert.equal((await getSecret(scope, 'production', 'URL')).value, 'pg://db.staging:5432');
    });

    it("the member's overrides apply on top, through references too; overrides: false leaves them out", async () => {
      const owner = (await vault.overrideKey())!;
      await setOverride(admin.client, shop, 'staging', 'HOST', 'localhost', owner);
      await setOverride(admin.client, shop, 'production', 'EXTRA', 'mine only', owner);
      const mine = await listSecrets(scope, 'production', withProjects);
      assert.equal(mine.URL, 'pg://localhost:5432');
      assert.equal(mine.EXTRA, 'mine only');
      const team = await listSecrets(scope, 'production', { ...withProjects, overrides: false });
      assert.equal(team.URL, 'pg://db.staging:5432');
      assert.equal(team.EXTRA, undefined);
      const both = await readWithReferences(scope, 'production', withProjects);
      assert.equal(both.raw.URL, 'pg://${staging.HOST}:${PORT}');
      assert.equal(both.values.URL, 'pg://localhost:5432');
      assert.deepEqual(both.errors, {});
    });

    it('a re-key re-encrypts the values and leaves overrides as they are; references still resolve', async () => {
      const before = await listSecrets(scope, 'production', withProjects);
      const epoch = vault.epoch;
      await rekey(admin.client, shop, admin.keys);
      await vault.refresh();
      assert.equal(vault.epoch, epoch + 1);
      assert.deepEqual(await listSecrets(scope, 'production', withProjects), before);
      assert.equal(
        (await listSecrets(scope, 'production', { ...withProjects, raw: true })).URL,
        'pg://${staging.HOST}:${PORT}',
        'the reference is text to the re-key',
      );
    });

    it('watchSecrets yields again when an environment the values refer to changes, here or in another project, and not for a change they do not use', async () => {
      await setSecret(scope, 'staging', 'USER', 'ann');
      await setSecret(scope, 'production', 'WHO', '${staging.USER}');
      const stop = new AbortController();
      const snapshots = watchSecrets(scope, 'production', {
        read: { ...withProjects, overrides: false },
        signal: stop.signal,
      });
      const next = async (): Promise<SecretsSnapshot> => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('no snapshot within 20 s')), 20_000);
        });
        try {
          const item = await Promise.race([snapshots.next(), timeout]);
          assert.ok(!item.done, 'the watch went on');
          return item.value;
        } finally {
          clearTimeout(timer);
        }
      };
      try {
        const first = await next();
        assert.equal(first.secrets.WHO, 'ann');
        assert.equal(first.secrets.PAY, 'sk_live_42');

        // While the watch runs, the feeds opened after that read connect and read once
        // more (unchanged: nothing is yielded).
        const pending = next();
        await new Promise((resolve) => setTimeout(resolve, 1000));
        // Staging, on the project's own feed (no longer filtered to production).
        await setSecret(scope, 'staging', 'USER', 'bea');
        const staged = await pending;
        assert.equal(staged.secrets.WHO, 'bea');
        assert.equal(
          staged.event?.type === 'secrets.changed' && staged.event.environment.slug,
          'staging',
        );

        // Billing's "live", which PAY reaches through Billing's production: a second feed.
        await setSecret(billingScope, 'live', 'SUFFIX', 'live_43');
        assert.equal((await next()).secrets.PAY, 'sk_live_43');

        // A change in staging that no value uses reads the same: nothing is yielded for it
        // (a snapshot for it would still hold PORT 5432).
        const after = next();
        await setSecret(scope, 'staging', 'UNUSED', 'x');
        await new Promise((resolve) => setTimeout(resolve, 1000));
        await setSecret(scope, 'production', 'PORT', '5433');
        assert.equal((await after).secrets.PORT, '5433');
      } finally {
        stop.abort();
        await snapshots.return(undefined);
      }
    });
  });
}
