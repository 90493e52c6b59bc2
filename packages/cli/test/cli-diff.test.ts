// `coffer secrets diff` on the REAL built binary against a REAL server process
// (SQLite): two environments of a project compared on this machine, names by
// default, values only when asked, and the exit code scripts can rely on.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  buildOnce,
  pipelineEnv,
  runCli,
  startServer,
  tempDir,
  userEnv,
  type CliResult,
  type TestServer,
} from './support/harness.js';
import { errorLine, ok, signUpAndSetUp } from './support/flow.js';

/** One stderr line `coffer: … (code)`, the exit code, and nothing on stdout. */
function failsWith(r: CliResult, exitCode: number, code: string, message?: RegExp): void {
  const line = errorLine(r, exitCode, code);
  if (message) assert.match(line, message);
  assert.equal(r.stdout, '');
}

const CAFE = 'caf\u00e9';
const STAGING = {
  API_URL: 'https://staging.example.test',
  DEBUG: 'verbose',
  SHARED: 'same everywhere',
  TOKEN: 'tok-123 ',
  GREETING: CAFE.normalize('NFC'),
  FEATURE_FLAGS: 'a,b',
};
const PRODUCTION = {
  API_URL: 'https://example.test',
  SHARED: 'same everywhere',
  TOKEN: 'tok-123',
  GREETING: CAFE.normalize('NFD'),
  SENTRY_DSN: 'https://sentry.example.test/1',
  FEATURE_FLAGS: 'a,b',
};
const VALUES = [...Object.values(STAGING), ...Object.values(PRODUCTION)].filter(
  (v) => v.length > 3,
);

describe('coffer secrets diff (SQLite)', () => {
  let server: TestServer;
  let alice: Record<string, string>;
  let work: string;
  const as = (args: string[], input?: string, cwd = work) =>
    runCli(args, { env: alice, cwd, ...(input !== undefined ? { input } : {}) });
  const importInto = async (env: string, secrets: Record<string, string>, project?: string) =>
    ok(
      await as(
        [
          'secrets',
          'import',
          '-',
          '--format',
          'json',
          '--env',
          env,
          ...(project ? ['--project', project] : []),
        ],
        JSON.stringify(secrets),
      ),
      `import into ${env}`,
    );

  before(async () => {
    buildOnce();
    server = await startServer();
    alice = userEnv(server, tempDir('diff-alice'));
    work = tempDir('diff-work');
    const user = { email: 'alice@example.test', name: 'Alice', password: 'alice correct horse' };
    await signUpAndSetUp(as, user, 'Storefront', 'development');
    await importInto('staging', STAGING);
    await importInto('production', PRODUCTION);
  });
  after(async () => {
    await server?.cleanup();
  });

  test('lists names only in either and names that differ, never a value, and exits 0', async () => {
    const r = ok(await as(['secrets', 'diff', 'staging', 'production']), 'diff');
    assert.equal(
      r.stdout,
      [
        '- DEBUG       only in staging',
        '+ SENTRY_DSN  only in production',
        '~ API_URL     differs',
        '~ GREETING    differs',
        '~ TOKEN       differs',
        '',
      ].join('\n'),
    );
    for (const value of VALUES) {
      assert.ok(!r.stdout.includes(value) && !r.stderr.includes(value), `${value} was printed`);
    }
    assert.equal(
      r.stderr,
      'staging → production: 1 only in staging, 1 only in production, 3 differing, 2 the same.\n',
    );

    // The other way round, the sides swap.
    const back = ok(await as(['secrets', 'diff', 'production', 'staging']), 'diff back');
    assert.match(back.stdout, /^- SENTRY_DSN {2}only in production$/m);
    assert.match(back.stdout, /^\+ DEBUG {7}only in staging$/m);
  });

  test('--values shows both values of each differing secret, with invisible differences escaped', async () => {
    const r = ok(await as(['secrets', 'diff', 'staging', 'production', '--values']), 'diff');
    assert.equal(
      r.stdout,
      [
        '- DEBUG       only in staging',
        '+ SENTRY_DSN  only in production',
        '~ API_URL     differs',
        '    staging:     "https://staging.example.test"',
        '    production:  "https://example.test"',
        '~ GREETING    differs',
        '    staging:     "café"',
        '    production:  "cafe\\u{0301}"',
        '~ TOKEN       differs',
        '    staging:     "tok-123 "',
        '    production:  "tok-123"',
        '',
      ].join('\n'),
    );
    // Values of names that are the same, or on one side only, stay hidden.
    for (const hidden of [STAGING.SHARED, STAGING.DEBUG, PRODUCTION.SENTRY_DSN]) {
      assert.ok(!r.stdout.includes(hidden), `${hidden} was printed`);
    }
  });

  test('--json prints the comparison; values only with --values', async () => {
    const names = JSON.parse(
      ok(await as(['secrets', 'diff', 'staging', 'production', '--json']), 'diff --json').stdout,
    ) as unknown;
    assert.deepEqual(names, {
      onlyInA: ['DEBUG'],
      onlyInB: ['SENTRY_DSN'],
      differing: ['API_URL', 'GREETING', 'TOKEN'],
      same: ['FEATURE_FLAGS', 'SHARED'],
    });

    const withValues = JSON.parse(
      ok(
        await as(['secrets', 'diff', 'staging', 'production', '--json', '--values']),
        'diff --json --values',
      ).stdout,
    ) as unknown;
    assert.deepEqual(withValues, { ...(names as object), a: STAGING, b: PRODUCTION });
  });

  test('--exit-code: 1 when the environments differ, 0 once they hold the same', async () => {
    const differ = await as(['secrets', 'diff', 'staging', 'production', '--exit-code']);
    assert.equal(differ.code, 1, differ.stderr);
    assert.match(differ.stdout, /^~ API_URL/m);
    assert.doesNotMatch(differ.stderr, /^coffer:/m, 'a difference is not an error');

    const jsonDiffer = await as([
      'secrets',
      'diff',
      'staging',
      'production',
      '--exit-code',
      '--json',
    ]);
    assert.equal(jsonDiffer.code, 1);

    // Promote staging to production: afterwards nothing differs.
    await importInto('production', STAGING);
    ok(
      await as(['secrets', 'delete', 'SENTRY_DSN', '--env', 'production', '--yes']),
      'delete SENTRY_DSN',
    );
    const same = ok(
      await as(['secrets', 'diff', 'staging', 'production', '--exit-code']),
      'diff after promoting',
    );
    assert.equal(same.stdout, '');
    assert.equal(
      same.stderr,
      'No differences between staging and production (6 secrets the same).\n',
    );
  });

  test('--project picks the project; --env and the linked environment do not apply', async () => {
    const elsewhere = tempDir('diff-elsewhere');
    ok(await as(['projects', 'create', 'Back office'], undefined, elsewhere), 'projects create');
    await importInto('development', { ONLY_HERE: 'x' }, 'Back office');
    const r = ok(
      await as(
        ['secrets', 'diff', 'development', 'staging', '--project', 'Back office'],
        undefined,
        elsewhere,
      ),
      'diff --project',
    );
    assert.equal(r.stdout, '- ONLY_HERE  only in development\n');

    // Without --project outside a linked directory: the usual error.
    failsWith(
      await as(['secrets', 'diff', 'development', 'staging'], undefined, elsewhere),
      1,
      'no_project',
    );
    // Both environments are arguments; there is no --env to contradict them.
    failsWith(
      await as(['secrets', 'diff', 'staging', 'production', '--env', 'staging']),
      2,
      'usage',
      /unknown option --env/,
    );
  });

  test('bad arguments and an unknown environment are one-line errors', async () => {
    failsWith(
      await as(['secrets', 'diff', 'staging']),
      2,
      'usage',
      /missing argument: ENV_A ENV_B/,
    );
    failsWith(await as(['secrets', 'diff', 'a', 'b', 'c']), 2, 'usage', /unexpected argument "c"/);
    failsWith(
      await as(['secrets', 'diff', 'staging', 'no-such-env']),
      1,
      'not_found',
      /^coffer: no environment "no-such-env" in this project/,
    );
    failsWith(
      await as(['secrets', 'diff', 'gone', 'production']),
      1,
      'not_found',
      /^coffer: no environment "gone" in this project/,
    );

    const help = ok(await as(['secrets', 'diff', '--help']), 'help');
    assert.ok(help.stdout.startsWith('Usage: coffer secrets diff ENV_A ENV_B [options]'));
    for (const option of ['--project', '--values', '--exit-code', '--json'])
      assert.ok(help.stdout.includes(option), `help lacks ${option}`);
    const group = ok(await as(['secrets', '--help']), 'group help');
    assert.match(group.stdout, /^ {2}secrets diff +compare two environments/m);
  });

  test('an API key reading both environments compares them with only COFFER_TOKEN', async () => {
    const create = (scopes: string[]) =>
      as([
        'api-keys',
        'create',
        '--name',
        'compare',
        '--role',
        'developer',
        ...scopes.flatMap((s) => ['--scope', s]),
      ]);
    const both = ok(
      await create(['staging:read', 'production:read']),
      'api-keys create',
    ).stdout.trim();
    await importInto('production', { API_URL: 'https://example.test' });
    const pipelineDir = tempDir('diff-pipeline');
    const r = ok(
      await runCli(['secrets', 'diff', 'staging', 'production'], {
        env: pipelineEnv(server, both),
        cwd: pipelineDir,
      }),
      'diff with an API key',
    );
    assert.equal(r.stdout, '~ API_URL  differs\n');

    // A key that may read only one of them cannot compare.
    const one = ok(await create(['staging:read']), 'api-keys create').stdout.trim();
    const refused = await runCli(['secrets', 'diff', 'staging', 'production'], {
      env: pipelineEnv(server, one),
      cwd: pipelineDir,
    });
    assert.equal(refused.code, 1, refused.stderr);
    assert.equal(refused.stdout, '');
    assert.match(refused.stderr, /^coffer: .+ \((forbidden|not_found|no_value)\)\n$/);
  });
});
