import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { runServerToExit, startServerProcess } from './server-process.js';

const dir = mkdtempSync(join(tmpdir(), 'coffer-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.port, 8443);
    assert.equal(config.httpRedirectPort, 8080);
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.publicUrl, 'https://localhost:8443');
    assert.equal(config.dataDir, resolve('./data'));
    assert.equal(config.databaseUrl, null);
    assert.equal(config.redisUrl, null);
    assert.equal(config.databasePoolSize, 10);
    assert.deepEqual(config.tls, { mode: 'self-signed' });
    assert.equal(config.trustProxy, false);
    assert.equal(config.bodyLimitBytes, 1024 * 1024);
    assert.equal(config.connectionIdleTimeoutMs, 15_000);
    assert.equal(config.maxConnections, 10_000);
    assert.deepEqual(
      { ...config.rateLimits },
      { session: 100, apiKey: 500, ciToken: 200, anonymous: 100, auth: 10, windowSeconds: 60 },
    );
    assert.ok(Object.isFrozen(config));
  });

  it("serves the web package's build by default; DASHBOARD and DASHBOARD_DIR change that", () => {
    const repo = fileURLToPath(new URL('../../../../', import.meta.url));
    assert.deepEqual(
      { ...loadConfig({}).dashboard },
      { enabled: true, dir: join(repo, 'packages/web/dist') },
    );
    const off = loadConfig({ DASHBOARD: 'off', DASHBOARD_DIR: 'build/web' }).dashboard;
    assert.deepEqual({ ...off }, { enabled: false, dir: resolve('build/web') });
    assert.equal(loadConfig({}, ['--dashboard=off']).dashboard.enabled, false);
  });

  it('flags override environment variables', () => {
    const config = loadConfig({ PORT: '9000', LOG_LEVEL: 'debug', RATE_LIMIT_AUTH: '3' }, [
      '--port=9443',
      '--log-level',
      'warn',
      '--trust-proxy',
    ]);
    assert.equal(config.port, 9443);
    assert.equal(config.logLevel, 'warn');
    assert.equal(config.trustProxy, true);
    assert.equal(config.rateLimits.auth, 3, 'an unflagged variable still applies');
  });

  it('a rate limit goes up to a billion a minute: a credential that is never limited', () => {
    const config = loadConfig({ RATE_LIMIT_API_KEY: '1000000000', RATE_LIMIT_SESSION: '2000000' });
    assert.equal(config.rateLimits.apiKey, 1_000_000_000);
    assert.equal(config.rateLimits.session, 2_000_000);
  });

  it('refuses bad values with an error naming the setting', () => {
    const cases: [Record<string, string>, string[], string][] = [
      [{ PORT: 'eighty' }, [], 'PORT'],
      [{ PORT: '70000' }, [], 'PORT'],
      [{}, ['--port=-1'], 'PORT'],
      [{ DATABASE_URL: 'mysql://db/coffer' }, [], 'DATABASE_URL'],
      [{ DATABASE_URL: 'not a url' }, [], 'DATABASE_URL'],
      [{ REDIS_URL: 'http://cache' }, [], 'REDIS_URL'],
      [{ DATABASE_POOL_SIZE: '0' }, [], 'DATABASE_POOL_SIZE'],
      [{ DATABASE_POOL_SIZE: 'many' }, [], 'DATABASE_POOL_SIZE'],
      [{ DATABASE_POOL_SIZE: '1001' }, [], 'DATABASE_POOL_SIZE'],
      [{ CONNECTION_IDLE_TIMEOUT_MS: '99' }, [], 'CONNECTION_IDLE_TIMEOUT_MS'],
      [{ CONNECTION_IDLE_TIMEOUT_MS: '15s' }, [], 'CONNECTION_IDLE_TIMEOUT_MS'],
      [{ MAX_CONNECTIONS: '0' }, [], 'MAX_CONNECTIONS'],
      [{}, ['--max-connections=lots'], 'MAX_CONNECTIONS'],
      [{ TLS_CERT_FILE: join(dir, 'cert.pem') }, [], 'TLS_KEY_FILE'],
      [{ TLS_KEY_FILE: join(dir, 'key.pem') }, [], 'TLS_CERT_FILE'],
      [
        { TLS_CERT_FILE: join(dir, 'missing.pem'), TLS_KEY_FILE: join(dir, 'missing-key.pem') },
        [],
        'TLS_CERT_FILE',
      ],
      [{ TLS: 'off' }, [], 'TLS'],
      [{ TRUST_PROXY: 'maybe' }, [], 'TRUST_PROXY'],
      [{ LOG_LEVEL: 'loud' }, [], 'LOG_LEVEL'],
      [{ PUBLIC_URL: 'http://coffer.example.com' }, [], 'PUBLIC_URL'],
      [{ RATE_LIMIT_SESSION: '0' }, [], 'RATE_LIMIT_SESSION'],
      [{ RATE_LIMIT_API_KEY: '1000000001' }, [], 'RATE_LIMIT_API_KEY'],
      [{ DASHBOARD: 'yes' }, [], 'DASHBOARD'],
      [{}, ['--dashboard=disabled'], 'DASHBOARD'],
      [{}, ['--prot=8443'], '--prot'],
      [{}, ['8443'], '8443'],
    ];
    for (const [env, argv, name] of cases) {
      assert.throws(
        () => loadConfig(env, argv),
        (err: unknown) => err instanceof ConfigError && err.variable === name,
        `${JSON.stringify(env)} ${argv.join(' ')} → ${name}`,
      );
    }
  });
});

describe('main with a bad configuration (real process)', () => {
  it('exits with code 2 and a message naming the setting', async () => {
    writeFileSync(join(dir, 'cert.pem'), 'not really a certificate');
    const cases: [Record<string, string>, string[], RegExp][] = [
      [{ PORT: 'https' }, [], /PORT: expected a whole number, got "https"/],
      [
        { DATABASE_URL: 'sqlite:///tmp/x.db' },
        [],
        /DATABASE_URL: must use postgres: or postgresql:/,
      ],
      [
        { TLS_CERT_FILE: join(dir, 'cert.pem') },
        [],
        /TLS_KEY_FILE: is required when TLS_CERT_FILE is set/,
      ],
      [{}, ['--no-such-flag=1'], /--no-such-flag: is not a Coffer setting/],
    ];
    for (const [env, args, message] of cases) {
      const result = await runServerToExit({ DATA_DIR: join(dir, 'data'), ...env }, args);
      assert.equal(result.code, 2, `${JSON.stringify(env)} ${args.join(' ')}\n${result.stderr}`);
      assert.match(result.stderr, /^coffer: invalid configuration: /);
      assert.match(result.stderr, message);
      assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace for a configuration error');
    }
  });

  it('a flag overrides a bad environment value and the server starts', async () => {
    const server = await startServerProcess({ DATA_DIR: join(dir, 'flags'), PORT: 'https' }, [
      '--port=0',
      '--http-port=off',
    ]);
    assert.match(server.url, /^https:\/\/localhost:\d+$/);
    assert.equal(server.redirectUrl, null);
    assert.equal((await server.stop()).code, 0);
  });
});
