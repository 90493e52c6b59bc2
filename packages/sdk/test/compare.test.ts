import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CofferApiError,
  SecretsError,
  compareEnvironments,
  compareSecrets,
  createProjectWithVault,
  importSecrets,
  openVault,
  ready,
  setSecret,
  type SecretScope,
} from '../src/index.js';
import { DIALECTS } from '../../server/test/support/db.js';
import {
  environmentIds,
  join,
  newUser,
  startServer,
  type Member,
  type Server,
} from './vault-support.js';

describe('compareSecrets', () => {
  it('two empty sets have nothing to report', () => {
    assert.deepEqual(compareSecrets({}, {}), { onlyInA: [], onlyInB: [], differing: [], same: [] });
  });

  it('one empty side: every name is only in the other', () => {
    assert.deepEqual(compareSecrets({ B: '2', A: '1' }, {}), {
      onlyInA: ['A', 'B'],
      onlyInB: [],
      differing: [],
      same: [],
    });
    assert.deepEqual(compareSecrets({}, { B: '2', A: '1' }), {
      onlyInA: [],
      onlyInB: ['A', 'B'],
      differing: [],
      same: [],
    });
  });

  it('disjoint sets: nothing in common', () => {
    assert.deepEqual(compareSecrets({ X: '1' }, { Y: '1' }), {
      onlyInA: ['X'],
      onlyInB: ['Y'],
      differing: [],
      same: [],
    });
  });

  it('equal sets: every name the same, including empty values', () => {
    const env = { API_URL: 'https://api', EMPTY: '', MULTI: 'a\nb' };
    assert.deepEqual(compareSecrets(env, { ...env }), {
      onlyInA: [],
      onlyInB: [],
      differing: [],
      same: ['API_URL', 'EMPTY', 'MULTI'],
    });
  });

  it('values that look alike but are not the same bytes differ', () => {
    const cafe = 'caf\u00e9';
    const a = {
      TRAILING_SPACE: 'token',
      TRAILING_NEWLINE: 'token',
      CASE: 'Token',
      NFC_NFD: cafe.normalize('NFC'),
      EMPTY_OR_SPACE: '',
      NBSP: 'a b',
    };
    const b = {
      TRAILING_SPACE: 'token ',
      TRAILING_NEWLINE: 'token\n',
      CASE: 'token',
      NFC_NFD: cafe.normalize('NFD'),
      EMPTY_OR_SPACE: ' ',
      NBSP: 'a\u00a0b',
    };
    assert.notEqual(a.NFC_NFD, b.NFC_NFD);
    const result = compareSecrets(a, b);
    assert.deepEqual(result.differing, Object.keys(a).sort());
    assert.deepEqual(result.same, []);
  });

  it('a mix: each name lands in exactly one list, each list sorted by name', () => {
    const result = compareSecrets(
      { ZED: '1', ALPHA: 'x', MID: 'same', _UNDERSCORE: 'a', lower: 'a' },
      { MID: 'same', ALPHA: 'y', BETA: 'new', Beta: 'new', a: '1' },
    );
    assert.deepEqual(result, {
      // Code-unit order: upper case before `_` before lower case, whatever the locale.
      onlyInA: ['ZED', '_UNDERSCORE', 'lower'],
      onlyInB: ['BETA', 'Beta', 'a'],
      differing: ['ALPHA'],
      same: ['MID'],
    });
  });

  it('names of Object.prototype members are secrets like any other', () => {
    // Legal secret names; a lookup with `in` or `a[name] !== undefined` would
    // find them on every plain object.
    const result = compareSecrets(
      { constructor: 'a', toString: 'same' },
      { toString: 'same', hasOwnProperty: 'b' },
    );
    assert.deepEqual(result, {
      onlyInA: ['constructor'],
      onlyInB: ['hasOwnProperty'],
      differing: [],
      same: ['toString'],
    });
  });

  it('does not change its inputs', () => {
    const a = { B: '1', A: '2' };
    const b = { A: '3' };
    compareSecrets(a, b);
    assert.deepEqual(a, { B: '1', A: '2' });
    assert.deepEqual(b, { A: '3' });
  });
});

for (const dialect of DIALECTS) {
  describe(`compareEnvironments against the server (${dialect})`, () => {
    let server: Server;
    let admin: Member;
    let viewer: Member;
    let projectId: string;
    let scope: SecretScope;

    before(async () => {
      await ready();
      server = await startServer(dialect);
      admin = await newUser(server);
      viewer = await newUser(server);
      projectId = (await createProjectWithVault(admin.client, admin.keys, { name: 'Shop' })).id;
      scope = {
        client: admin.client,
        projectId,
        keys: await openVault(admin.client, projectId, admin.keys),
      };
      await join(admin, viewer, projectId, 'viewer');
    });
    after(async () => server.close());

    it('decrypts both environments and reports what is missing and what differs', async () => {
      await importSecrets(
        scope,
        'staging',
        JSON.stringify({ API_URL: 'https://staging', SHARED: 'same', DEBUG: '1', TOKEN: 't ' }),
        'json',
      );
      await importSecrets(
        scope,
        'production',
        JSON.stringify({ API_URL: 'https://prod', SHARED: 'same', SENTRY_DSN: 'dsn', TOKEN: 't' }),
        'json',
      );
      const ids = await environmentIds(admin.client, projectId);
      // Slugs and ids name the same environments.
      for (const [envA, envB] of [
        ['staging', 'production'],
        [ids.staging!, ids.production!],
      ] as const) {
        const result = await compareEnvironments(scope, envA, envB);
        assert.deepEqual(
          {
            onlyInA: result.onlyInA,
            onlyInB: result.onlyInB,
            differing: result.differing,
            same: result.same,
          },
          {
            onlyInA: ['DEBUG'],
            onlyInB: ['SENTRY_DSN'],
            differing: ['API_URL', 'TOKEN'],
            same: ['SHARED'],
          },
        );
        assert.deepEqual(result.a, {
          API_URL: 'https://staging',
          DEBUG: '1',
          SHARED: 'same',
          TOKEN: 't ',
        });
        assert.deepEqual(result.b, {
          API_URL: 'https://prod',
          SENTRY_DSN: 'dsn',
          SHARED: 'same',
          TOKEN: 't',
        });
      }

      // Promoting the values makes them the same.
      await setSecret(scope, 'production', 'API_URL', 'https://staging');
      await setSecret(scope, 'production', 'TOKEN', 't ');
      const promoted = await compareEnvironments(scope, 'staging', 'production');
      assert.deepEqual(promoted.differing, []);
      assert.deepEqual(promoted.same, ['API_URL', 'SHARED', 'TOKEN']);
    });

    it('compares environments larger than one page of the listing', async () => {
      const many = Object.fromEntries(
        Array.from({ length: 130 }, (_, i) => [`KEY_${String(i).padStart(3, '0')}`, `v${i}`]),
      );
      await importSecrets(scope, 'development', JSON.stringify(many), 'json');
      const result = await compareEnvironments(scope, 'development', 'development');
      assert.equal(result.same.length, 130);
      assert.deepEqual(result.same, Object.keys(many).sort());
      assert.deepEqual([result.onlyInA, result.onlyInB, result.differing], [[], [], []]);
    });

    it('an unknown environment is the server’s 404', async () => {
      await assert.rejects(compareEnvironments(scope, 'staging', 'no-such-env'), (err: unknown) => {
        assert.ok(err instanceof CofferApiError, String(err));
        assert.equal(err.status, 404);
        assert.equal(err.code, 'not_found');
        return true;
      });
    });

    it('a viewer, who may list names but not read values, cannot compare', async () => {
      const viewerScope: SecretScope = {
        client: viewer.client,
        projectId,
        keys: {
          environmentKey: () => Promise.reject(new Error('a viewer holds no environment key')),
        },
      };
      await assert.rejects(
        compareEnvironments(viewerScope, 'staging', 'production'),
        (err: unknown) => {
          assert.ok(err instanceof SecretsError, String(err));
          assert.equal(err.code, 'no_value');
          return true;
        },
      );
    });
  });
}
