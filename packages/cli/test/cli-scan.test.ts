// `coffer scan` against a real server and real git repositories: the team's
// values found in files (as they are, base64 in YAML, URL-encoded in a log, in
// a connection URL, JSON-escaped, hex), in git history with the commit that
// introduced them, in a piped log and in staged changes through the installed
// pre-commit hook; short and common values listed by name and not scanned; a
// token reading one environment finds only that environment's values; SARIF
// checked against the SARIF 2.1.0 schema; the baseline; and, over everything
// every run printed and every file the scans wrote, no form of any value.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
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
import { ok, signUpAndSetUp } from './support/flow.js';
import {
  assertNoLeak,
  at,
  changedFiles,
  git,
  initRepo,
  snapshot,
  token,
  write,
} from './support/scan-fixtures.js';

const requireHere = createRequire(import.meta.url);

/** What the test uses of ajv 6 (draft-04, the version of the published SARIF 2.1.0 schema). */
interface SchemaValidator {
  addMetaSchema(schema: object): void;
  validate(schema: object, data: unknown): boolean;
  errors?: unknown;
  errorsText(errors?: unknown): string;
}

const development = {
  DB_PASSWORD: `p@ss/W0rd:${token(14)}!`,
  REDIS_PASSWORD: token(24),
  WEBHOOK_SECRET: `whsec_${token(32)}`,
  STRIPE_KEY: `sk_live_${token(24)}`,
  SIGNING_KEY: `k"\\${token(20)}`,
  OLD_TOKEN: `ghp_${token(36)}`,
  DEBUG: 'true',
  PORT: '3000',
  API_HOST: 'localhost',
  PIN: '4821',
};
const staging = {
  STAGING_TOKEN: token(40),
  STAGING_DB_PASSWORD: token(28),
};
const scanned = Object.fromEntries(
  Object.entries({ ...development, ...staging }).filter(
    ([k]) => !['DEBUG', 'PORT', 'API_HOST', 'PIN'].includes(k),
  ),
);

describe('coffer scan', () => {
  let server: TestServer;
  let home: string;
  let user: Record<string, string>;
  let work: string;
  let scanTmp: string;
  /** Every run's output, for the final search for values. */
  const outputs = new Map<string, string>();
  const snapshots = new Map<string, Map<string, string>>();
  /** Files this test wrote itself (the planted leaks), left out of the final search. */
  const planted = new Set<string>();
  let runs = 0;

  const record = (args: string[], r: CliResult) => {
    runs++;
    outputs.set(`run ${runs} (coffer ${args.join(' ')}) stdout`, r.stdout);
    outputs.set(`run ${runs} (coffer ${args.join(' ')}) stderr`, r.stderr);
    return r;
  };
  const as = async (args: string[], cwd: string, input?: string, env = user) =>
    record(
      args,
      await runCli(args, {
        env: { ...env, TMPDIR: scanTmp },
        cwd,
        ...(input !== undefined ? { input } : {}),
      }),
    );
  const plant = (dir: string, file: string, content: string | Buffer) => {
    write(dir, file, content);
    planted.add(join(dir, file));
  };
  const lines = (r: CliResult) => r.stdout.split('\n').filter(Boolean).sort();

  before(async () => {
    buildOnce();
    server = await startServer();
    home = tempDir('scan-home');
    work = tempDir('scan-work');
    scanTmp = tempDir('scan-tmp');
    user = userEnv(server, home);
    const setup = (args: string[], input?: string) =>
      runCli(args, { env: user, cwd: work, ...(input !== undefined ? { input } : {}) });
    await signUpAndSetUp(
      setup,
      { email: 'scan@example.test', name: 'Scan', password: 'scan test password' },
      'Scanned',
      'development',
    );
    ok(
      await setup(['secrets', 'import', '-', '--format', 'json'], JSON.stringify(development)),
      'import development',
    );
    ok(
      await setup(
        ['secrets', 'import', '-', '--format', 'json', '--env', 'staging'],
        JSON.stringify(staging),
      ),
      'import staging',
    );
    for (const dir of [work, home, scanTmp]) snapshots.set(dir, snapshot(dir));
  });
  after(async () => {
    await server?.cleanup();
  });

  // The working tree of a repository: some files committed, some not, one ignored, one binary.
  const app = () => join(work, 'app');
  const files: Record<string, string> = {};
  const expected: string[] = [];
  test('finds each value in files in the form it leaked in, and names it', async () => {
    initRepo(app());
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    files['k8s/secret.yaml'] = [
      'apiVersion: v1',
      'kind: Secret',
      'data:',
      `  webhook: ${b64(development.WEBHOOK_SECRET)}`,
      `  env: ${b64(`HOOK=${development.WEBHOOK_SECRET}\n`)}`,
      '',
    ].join('\n');
    const urlPassword = encodeURIComponent(development.DB_PASSWORD);
    files['logs/access.log'] = [
      '10.0.0.1 - - [04/Mar/2026:05:06:07 +0000] "GET /health HTTP/1.1" 200 2',
      `10.0.0.1 - - [04/Mar/2026:05:06:08 +0000] "GET /login?user=app&password=${urlPassword} HTTP/1.1" 302 0`,
      '',
    ].join('\n');
    files['.env.example'] = [
      `DATABASE_URL=postgres://app:${urlPassword}@db.internal:5432/app`,
      `REDIS_URL=redis://default:${development.REDIS_PASSWORD}@cache:6379/0`,
      'DEBUG=true',
      'PORT=3000',
      'API_HOST=localhost',
      '',
    ].join('\n');
    files['src/config.json'] =
      `${JSON.stringify({ stripe: development.STRIPE_KEY, signing: development.SIGNING_KEY }, null, 2)}\n`;
    files['fixtures/dump.txt'] = `héllo ✓ ${Buffer.from(staging.STAGING_TOKEN).toString('hex')}\n`;
    files['.gitignore'] = '*.tmp\n';
    for (const [file, content] of Object.entries(files)) plant(app(), file, content);
    git(app(), ['add', 'k8s', 'src', '.gitignore']);
    git(app(), ['commit', '-qm', 'app']);
    // Not committed: logs/, .env.example and fixtures/ are untracked, not ignored.
    plant(app(), 'scratch.tmp', `${development.STRIPE_KEY}\n`);
    plant(
      app(),
      'image.bin',
      Buffer.concat([Buffer.from([0, 1, 2, 0]), Buffer.from(development.WEBHOOK_SECRET)]),
    );

    const webhookLine = files['k8s/secret.yaml']!.split('\n')[3]!;
    const envLine = files['k8s/secret.yaml']!.split('\n')[4]!;
    // `HOOK=` puts the value at offset 5 of the base64 stream (the third byte of a
    // group): the run that depends on the value alone starts at the stream's 8th character.
    expected.push(
      `${at('k8s/secret.yaml', files['k8s/secret.yaml']!, webhookLine.slice(11))}  WEBHOOK_SECRET (development) [base64]`,
      `${at('k8s/secret.yaml', files['k8s/secret.yaml']!, envLine.slice(14))}  WEBHOOK_SECRET (development) [base64]`,
      `${at('logs/access.log', files['logs/access.log']!, urlPassword)}  DB_PASSWORD (development) [url-encoded]`,
      `${at('.env.example', files['.env.example']!, urlPassword)}  DB_PASSWORD (development) [url-userinfo]`,
      `${at('.env.example', files['.env.example']!, development.REDIS_PASSWORD)}  REDIS_PASSWORD (development) [url-userinfo]`,
      `${at('src/config.json', files['src/config.json']!, development.STRIPE_KEY)}  STRIPE_KEY (development) [raw]`,
      `${at('src/config.json', files['src/config.json']!, JSON.stringify(development.SIGNING_KEY).slice(1, -1))}  SIGNING_KEY (development) [json-escaped]`,
      `${at('fixtures/dump.txt', files['fixtures/dump.txt']!, Buffer.from(staging.STAGING_TOKEN).toString('hex'))}  STAGING_TOKEN (staging) [hex]`,
    );

    const r = await as(['scan'], app());
    assert.equal(r.code, 1, r.stderr);
    assert.deepEqual(lines(r), [...expected].sort());
    // The short and common values: not scanned, each named once, never found (DEBUG=true is in a file).
    for (const [name, why] of [
      ['DEBUG', 'shorter than 8 characters'],
      ['PORT', 'shorter than 8 characters'],
      ['API_HOST', 'a common word'],
      ['PIN', 'shorter than 8 characters'],
    ])
      assert.equal(
        r.stderr.split(`${name} (development): ${why}`).length,
        2,
        `${name} listed once:\n${r.stderr}`,
      );
    assert.match(r.stderr, /1 binary skipped/);
  });

  test('--no-ignore scans ignored files, --binary binary ones; a PATH narrows the scan', async () => {
    const all = await as(['scan', '--no-ignore', '--binary'], app());
    assert.equal(all.code, 1);
    assert.deepEqual(
      lines(all),
      [
        ...expected,
        `scratch.tmp:1:1  STRIPE_KEY (development) [raw]`,
        `image.bin:1:5  WEBHOOK_SECRET (development) [raw]`,
      ].sort(),
    );
    const one = await as(['scan', 'src'], app());
    assert.equal(one.code, 1);
    assert.deepEqual(
      lines(one).map((l) => l.split(':')[0]),
      ['src/config.json', 'src/config.json'],
    );
    // A directory git ignores (here through .git/info/exclude) is left out, unless it is named.
    write(app(), '.git/info/exclude', 'dist/\n');
    plant(app(), 'dist/bundle.js', `var k="${development.STRIPE_KEY}";\n`);
    const skipped = await as(['scan'], app());
    assert.ok(!skipped.stdout.includes('dist/'), skipped.stdout);
    const named = await as(['scan', 'dist'], app());
    assert.equal(named.code, 1, named.stderr);
    assert.equal(named.stdout, 'dist/bundle.js:1:8  STRIPE_KEY (development) [raw]\n');
    // Outside a git repository, .gitignore files are read from the scanned directory down.
    const plain = join(work, 'plain');
    plant(plain, '.gitignore', 'secret/\n');
    plant(plain, 'secret/x.txt', development.STRIPE_KEY);
    plant(plain, 'open/y.txt', `  ${development.REDIS_PASSWORD}`);
    const walked = await as(['scan', plain], work);
    assert.equal(walked.code, 1, walked.stderr);
    assert.deepEqual(lines(walked), ['plain/open/y.txt:1:3  REDIS_PASSWORD (development) [raw]']);
    const clean = await as(['scan', join(app(), 'k8s'), '--env', 'staging'], work);
    assert.equal(clean.code, 0, clean.stderr);
    assert.equal(clean.stdout, '');
  });

  test('--git finds a value committed then deleted, with the commit and date that introduced it', async () => {
    const repo = join(work, 'history');
    initRepo(repo);
    plant(repo, 'README.md', '# service\n');
    git(repo, ['add', '.']);
    git(repo, ['commit', '-qm', 'start'], '2026-01-01T00:00:00Z');
    const deploy = `#!/bin/sh\nexport GITHUB_TOKEN=${development.OLD_TOKEN}\n`;
    plant(repo, 'deploy.sh', deploy);
    git(repo, ['add', '.']);
    git(repo, ['commit', '-qm', 'deploy script'], '2026-01-02T03:04:05Z');
    const introduced = git(repo, ['rev-parse', 'HEAD']);
    write(repo, 'deploy.sh', `${deploy}echo deployed\n`);
    git(repo, ['commit', '-qam', 'say so'], '2026-01-03T00:00:00Z');
    git(repo, ['rm', '-q', 'deploy.sh']);
    git(repo, ['commit', '-qm', 'remove the token'], '2026-01-04T00:00:00Z');
    // A branch never merged, and a tag on it.
    git(repo, ['checkout', '-qb', 'experiment']);
    const notes = `notes\n${Buffer.from(staging.STAGING_DB_PASSWORD).toString('base64')}\n`;
    plant(repo, 'notes.md', notes);
    git(repo, ['add', '.']);
    git(repo, ['commit', '-qm', 'notes'], '2026-02-01T00:00:00Z');
    const onBranch = git(repo, ['rev-parse', 'HEAD']);
    git(repo, ['tag', 'v0-experiment']);
    git(repo, ['checkout', '-q', 'main']);

    const now = await as(['scan'], repo);
    assert.equal(now.code, 0, `the work tree is clean:\n${now.stdout}${now.stderr}`);
    const r = await as(['scan', '--git'], repo);
    assert.equal(r.code, 1, r.stderr);
    assert.deepEqual(r.stdout.split('\n').filter(Boolean), [
      `${at('deploy.sh', deploy, development.OLD_TOKEN)}  OLD_TOKEN (development) [raw]  first in ${introduced.slice(0, 12)} (2026-01-02T03:04:05+00:00)`,
      `notes.md:2:1  STAGING_DB_PASSWORD (staging) [base64]  first in ${onBranch.slice(0, 12)} (2026-02-01T00:00:00+00:00)`,
    ]);
    const json = await as(['scan', '--git', '--json'], repo);
    const body = JSON.parse(json.stdout) as {
      findings: { path: string; commit: string; author_date: string; secret: { name: string } }[];
      summary: { mode: string; scanned: number };
    };
    assert.deepEqual(
      body.findings.map((f) => [f.secret.name, f.path, f.commit, f.author_date]),
      [
        ['OLD_TOKEN', 'deploy.sh', introduced, '2026-01-02T03:04:05+00:00'],
        ['STAGING_DB_PASSWORD', 'notes.md', onBranch, '2026-02-01T00:00:00+00:00'],
      ],
    );
    assert.equal(body.summary.mode, 'git');
    assert.equal(body.summary.scanned, 4, 'README, both versions of deploy.sh, notes.md');
  });

  test('--stdin scans a piped log', async () => {
    const log = `step 1\nstep 2\nconnecting with ${development.DB_PASSWORD} now\n`;
    const r = await as(['scan', '--stdin'], work, log);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(
      r.stdout,
      `${at('(stdin)', log, development.DB_PASSWORD)}  DB_PASSWORD (development) [raw]\n`,
    );
    const clean = await as(['scan', '--stdin'], work, 'all good\n');
    assert.equal(clean.code, 0, clean.stderr);
    assert.equal(clean.stdout, '');
  });

  test('a token scoped to one environment finds only that environment’s values', async () => {
    const key = ok(
      await as(
        [
          'api-keys',
          'create',
          '--name',
          'scan-staging',
          '--role',
          'developer',
          '--scope',
          'staging:read',
        ],
        work,
      ),
      'api-keys create',
    ).stdout.trim();
    const env = pipelineEnv(server, key);
    const r = await as(['scan'], app(), undefined, env);
    assert.equal(r.code, 1, r.stderr);
    assert.deepEqual(
      lines(r),
      expected.filter((l) => l.includes('(staging)')),
    );
    assert.ok(!r.stderr.includes('(development)'), 'nothing of development, not even names');
    const refused = await as(['scan', '--env', 'development'], app(), undefined, env);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /^coffer: .+ \((forbidden|not_found)\)\n$/);
  });

  test('--format sarif is valid SARIF 2.1.0 with one result per finding', async () => {
    const r = await as(['scan', '--format', 'sarif'], app());
    assert.equal(r.code, 1, r.stderr);
    const sarif = JSON.parse(r.stdout) as {
      runs: {
        results: {
          ruleId: string;
          locations: {
            physicalLocation: {
              artifactLocation: { uri: string };
              region: { startLine: number; startColumn: number };
            };
          }[];
          partialFingerprints: Record<string, string>;
        }[];
      }[];
    };
    const Ajv = requireHere('ajv') as new (options: object) => SchemaValidator;
    const ajv = new Ajv({ schemaId: 'auto', allErrors: true });
    ajv.addMetaSchema(requireHere('ajv/lib/refs/json-schema-draft-04.json') as object);
    const schema = requireHere(
      '@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json',
    ) as object;
    const valid = ajv.validate(schema, sarif);
    assert.ok(valid, ajv.errorsText(ajv.errors));
    const results = sarif.runs[0]!.results;
    assert.deepEqual(
      results
        .map((x) => {
          const p = x.locations[0]!.physicalLocation;
          return `${decodeURIComponent(p.artifactLocation.uri)}:${p.region.startLine}:${p.region.startColumn}`;
        })
        .sort(),
      expected.map((l) => l.split('  ')[0]!).sort(),
    );
    for (const x of results)
      assert.match(x.partialFingerprints['cofferFinding/v1']!, /^[0-9a-f]{64}$/);
    // The schema check can fail: a result without its message is refused.
    const broken = structuredClone(sarif) as { runs: { results: Record<string, unknown>[] }[] };
    delete broken.runs[0]!.results[0]!.message;
    assert.equal(ajv.validate(schema, broken), false);
  });

  test('a baseline accepts known findings by keyed hash; a new leak still fails', async () => {
    const baseline = join(app(), '.coffer-scan-baseline.json');
    const update = await as(['scan', '--baseline', baseline, '--update-baseline'], app());
    assert.equal(update.code, 0, update.stderr);
    assert.equal(update.stdout, '');
    const file = JSON.parse(readFileSync(baseline, 'utf8')) as { findings: string[] };
    assert.equal(file.findings.length, expected.length);
    for (const h of file.findings) assert.match(h, /^[0-9a-f]{64}$/);
    const text = readFileSync(baseline, 'utf8');
    for (const word of ['k8s', 'secret.yaml', 'WEBHOOK', 'development', 'staging'])
      assert.ok(!text.includes(word), `the baseline names ${word}`);

    const quiet = await as(['scan', '--baseline', baseline], app());
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.equal(quiet.stdout, '');
    assert.match(quiet.stderr, new RegExp(`${expected.length} in the baseline`));

    plant(app(), 'new.txt', `leak ${development.SIGNING_KEY}\n`);
    const fresh = await as(['scan', '--baseline', baseline], app());
    assert.equal(fresh.code, 1);
    assert.equal(fresh.stdout, 'new.txt:1:6  SIGNING_KEY (development) [raw]\n');

    write(app(), 'bad-baseline.json', '{"findings": ["not a hash"]}');
    const bad = await as(['scan', '--baseline', 'bad-baseline.json'], app());
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /\(invalid_baseline\)\n$/);
  });

  test('the pre-commit hook refuses a commit that adds a value, and lets a clean one through', async () => {
    const repo = join(work, 'hooked');
    initRepo(repo);
    const installed = await as(['scan', '--install-hook'], repo);
    assert.equal(installed.code, 0, installed.stderr);
    const hook = join(repo, '.git/hooks/pre-commit');
    assert.ok(statSync(hook).mode & 0o100, 'executable');

    const commit = (message: string) =>
      spawnSync('git', ['-C', repo, 'commit', '-qm', message], {
        encoding: 'utf8',
        env: {
          ...user,
          TMPDIR: scanTmp,
          GIT_AUTHOR_NAME: 'Dev',
          GIT_AUTHOR_EMAIL: 'dev@example.test',
          GIT_COMMITTER_NAME: 'Dev',
          GIT_COMMITTER_EMAIL: 'dev@example.test',
        },
      });
    plant(repo, 'ok.txt', 'nothing here\n');
    git(repo, ['add', 'ok.txt']);
    const clean = commit('clean');
    outputs.set('hook (clean) stdout', clean.stdout);
    outputs.set('hook (clean) stderr', clean.stderr);
    assert.equal(clean.status, 0, clean.stderr);

    const content = `line one\nline two\nconfig = "${development.STRIPE_KEY}"\n`;
    plant(repo, 'settings.py', content);
    write(repo, 'ok.txt', `nothing here\nstill nothing\n`);
    git(repo, ['add', '.']);
    const refused = commit('leak');
    outputs.set('hook (refused) stdout', refused.stdout);
    outputs.set('hook (refused) stderr', refused.stderr);
    assert.equal(refused.status, 1, `${refused.stdout}${refused.stderr}`);
    // git hands a hook's stdout to stderr.
    assert.ok(
      refused.stderr.includes(
        `${at('settings.py', content, development.STRIPE_KEY)}  STRIPE_KEY (development) [raw]\n`,
      ),
      refused.stderr,
    );
    assert.ok(!refused.stderr.includes('ok.txt'), 'the clean file is not reported');
    assert.equal(git(repo, ['log', '--format=%s']), 'clean', 'the leak was not committed');

    // A hook of someone else's is never overwritten without --force.
    writeFileSync(hook, '#!/bin/sh\necho mine\n');
    const kept = await as(['scan', '--install-hook'], repo);
    assert.equal(kept.code, 2);
    assert.match(kept.stderr, /\(hook_exists\)\n$/);
    assert.equal(readFileSync(hook, 'utf8'), '#!/bin/sh\necho mine\n');
    assert.equal((await as(['scan', '--install-hook', '--force'], repo)).code, 0);
    assert.match(readFileSync(hook, 'utf8'), /scan' '--staged'/);
  });

  test("the hook's keyed-hash cache answers without the values, holds none, and follows every change", async () => {
    const repo = join(work, 'cached');
    initRepo(repo);
    const cacheDir = join(home, '.cache/coffer/scan');
    const staged = (args: string[] = []) => as(['scan', '--staged', ...args], repo);
    const usedCache = (r: CliResult) => r.stderr.includes('matched against the keyed-hash cache');
    const summaryOf = (r: CliResult) =>
      (JSON.parse(r.stdout) as { summary: { cache?: string; secrets: number } }).summary;

    plant(repo, 'clean.txt', 'nothing to see\n');
    git(repo, ['add', '.']);
    // The first scan fetches and decrypts, and writes the cache; the next one uses it.
    const first = await staged(['--json']);
    assert.equal(first.code, 0, first.stderr);
    assert.ok(['written', 'used'].includes(summaryOf(first).cache ?? ''), first.stdout);
    const second = await staged(['--json']);
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(summaryOf(second), { ...summaryOf(second), cache: 'used', secrets: 8 });

    // One file, only its owner's, encrypted: no name of a secret or an environment in it.
    const [file, ...others] = readdirSync(cacheDir);
    assert.ok(file && others.length === 0, `${readdirSync(cacheDir).join(', ')}`);
    const cacheFile = join(cacheDir, file);
    assert.equal(statSync(cacheFile).mode & 0o777, 0o600);
    assert.equal(statSync(cacheDir).mode & 0o777, 0o700);
    const bytes = readFileSync(cacheFile);
    for (const word of ['STRIPE_KEY', 'STAGING_TOKEN', 'development', 'staging', 'sec_', 'proj_'])
      assert.ok(!bytes.includes(word), `the cache holds ${word}`);

    // Every encoding is matched through the keyed hashes: base64 in a YAML file.
    const content = `data:\n  hook: ${Buffer.from(`HOOK=${development.WEBHOOK_SECRET}`).toString('base64')}\n`;
    plant(repo, 'secret.yaml', content);
    git(repo, ['add', '.']);
    const found = await staged();
    assert.equal(found.code, 1, found.stderr);
    assert.ok(usedCache(found), found.stderr);
    assert.match(
      found.stdout,
      /^secret\.yaml:2:\d+ {2}WEBHOOK_SECRET \(development\) \[base64\]\n$/,
    );
    git(repo, ['rm', '-q', '--cached', 'secret.yaml']);

    // A new secret: the cache is stale, the full scan finds the value and writes it again.
    const added = token(30);
    scanned.ADDED_TOKEN = added;
    ok(await as(['secrets', 'set', 'ADDED_TOKEN', added], work), 'set ADDED_TOKEN');
    plant(repo, 'added.env', `ADDED_TOKEN=${added}\n`);
    git(repo, ['add', 'added.env']);
    const afterAdd = await staged();
    assert.equal(afterAdd.code, 1, afterAdd.stderr);
    assert.ok(!usedCache(afterAdd), afterAdd.stderr);
    assert.equal(afterAdd.stdout, 'added.env:1:13  ADDED_TOKEN (development) [raw]\n');
    const again = await staged();
    assert.ok(usedCache(again), again.stderr);
    assert.equal(again.stdout, afterAdd.stdout);

    // A changed value: the new one is found, the old one no longer.
    const rotated = token(26);
    scanned.ROTATED_REDIS_PASSWORD = rotated;
    ok(await as(['secrets', 'set', 'REDIS_PASSWORD', rotated], work), 'rotate REDIS_PASSWORD');
    plant(repo, 'redis.conf', `requirepass ${development.REDIS_PASSWORD}\nmasterauth ${rotated}\n`);
    git(repo, ['add', 'redis.conf']);
    const afterRotate = await staged();
    assert.equal(afterRotate.code, 1, afterRotate.stderr);
    assert.ok(!usedCache(afterRotate), afterRotate.stderr);
    assert.equal(
      afterRotate.stdout,
      'added.env:1:13  ADDED_TOKEN (development) [raw]\nredis.conf:2:12  REDIS_PASSWORD (development) [raw]\n',
    );
    assert.equal((await staged()).stdout, afterRotate.stdout);

    // A changed cache file fails its authentication: ignored, and written again.
    const sealed = readFileSync(cacheFile);
    sealed[sealed.length - 5]! ^= 1;
    writeFileSync(cacheFile, sealed);
    const tampered = await staged();
    assert.ok(!usedCache(tampered), tampered.stderr);
    assert.equal(tampered.stdout, afterRotate.stdout);
    assert.ok(usedCache(await staged()));

    // --no-cache neither reads nor writes it.
    const stamp = statSync(cacheFile).mtimeMs;
    const uncached = await staged(['--no-cache']);
    assert.ok(!usedCache(uncached));
    assert.equal(uncached.stdout, afterRotate.stdout);
    assert.equal(statSync(cacheFile).mtimeMs, stamp);
    assert.equal((await as(['scan', '--no-cache'], repo)).code, 2, '--no-cache is for --staged');
  });

  test('--staged --binary scans each staged binary file whole; without it they are counted as skipped', async () => {
    const repo = join(work, 'binary-staged');
    initRepo(repo);
    const blob = Buffer.concat([
      Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 0, 0, 1]),
      Buffer.from(`\nbuilt with\nkey=${staging.STAGING_TOKEN}\0\0`),
    ]);
    plant(repo, 'bin/tool', blob);
    plant(repo, 'notes.txt', 'nothing\n');
    git(repo, ['add', '.']);
    const plain = await as(['scan', '--staged'], repo);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stderr, /1 binary skipped \(--binary scans them\)/);
    for (const extra of [[], ['--no-cache'], ['--json']]) {
      const scanned = await as(['scan', '--staged', '--binary', ...extra], repo);
      assert.equal(scanned.code, 1, scanned.stderr);
      if (extra[0] === '--json') {
        const report = JSON.parse(scanned.stdout) as {
          findings: { path: string; line: number; column: number; secret: { name: string } }[];
        };
        assert.deepEqual(
          report.findings.map((f) => [f.path, f.line, f.column, f.secret.name]),
          [['bin/tool', 3, 5, 'STAGING_TOKEN']],
        );
      } else assert.equal(scanned.stdout, 'bin/tool:3:5  STAGING_TOKEN (staging) [raw]\n');
    }
  });

  test('errors exit 2 with one line', async () => {
    const missing = await as(['scan', 'no-such-dir'], work);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^coffer: .*no-such-dir.* \(not_found\)\n$/);
    const usage = await as(['scan', '--min-length', 'x'], work);
    assert.equal(usage.code, 2);
    const modes = await as(['scan', '--git', '--stdin'], work);
    assert.equal(modes.code, 2);
    const anonymous = await as(['scan'], work, undefined, {
      ...user,
      HOME: tempDir('scan-nobody'),
    });
    assert.equal(anonymous.code, 2);
    assert.match(anonymous.stderr, /\(not_logged_in\)\n$/);
    const help = await as(['scan', '--help'], work);
    assert.equal(help.code, 0);
    for (const option of [
      '--git',
      '--stdin',
      '--staged',
      '--no-ignore',
      '--binary',
      '--min-length',
      '--format',
      '--baseline',
      '--update-baseline',
      '--install-hook',
    ])
      assert.ok(help.stdout.includes(option), `help lacks ${option}`);
  });

  test('no output and no file any scan wrote holds any form of any value', () => {
    assert.ok(runs >= 20, `${runs} runs recorded`);
    const texts = new Map(outputs);
    for (const [dir, before] of snapshots) {
      for (const [path, content] of changedFiles(dir, before)) {
        if (planted.has(path) || /\/\.git\/(?!hooks\/)/.test(path)) continue;
        texts.set(path, content);
      }
    }
    // What the scans wrote is in there: the baseline and the hook.
    assert.ok([...texts.keys()].some((p) => p.endsWith('.coffer-scan-baseline.json')));
    assert.ok([...texts.keys()].some((p) => p.endsWith('hooks/pre-commit')));
    assertNoLeak(scanned, texts);
  });
});
