// `coffer secrets export --format github|k8s` against a real server, with
// every value of the SDK's hard-value corpus stored through the CLI: the
// $GITHUB_ENV part read back as the runner reads it, the masks read as the
// runner decodes them, the Kubernetes Secret through the yaml package and
// base64. Also the documented workflow line `>> "$GITHUB_ENV"` run by bash.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { CORPUS } from '../../sdk/test/support/dotenv-corpus.js';
import {
  parseGithubEnv,
  parseGithubMasks,
  unmaskedLines,
} from '../../sdk/test/support/github-actions.js';
import {
  buildOnce,
  CLI,
  runCli,
  startServer,
  tempDir,
  userEnv,
  type TestServer,
} from './support/harness.js';
import { ok, signUpAndSetUp } from './support/flow.js';

const name = (i: number) => `K${i}`;
const all = Object.fromEntries(CORPUS.map(([, v], i) => [name(i), v] as const));
const withoutNul = Object.fromEntries(Object.entries(all).filter(([, v]) => !v.includes('\0')));
const nulName = Object.keys(all).find((k) => all[k]!.includes('\0'))!;
const labelOf = (key: string) => (/^K\d+$/.test(key) ? CORPUS[Number(key.slice(1))]![0] : key);

function assertExact(read: Map<string, string> | Record<string, string>, expected: object) {
  const got = read instanceof Map ? Object.fromEntries(read) : read;
  for (const [key, value] of Object.entries(expected))
    assert.equal(got[key], value, `"${labelOf(key)}" read back wrong`);
  assert.deepEqual(Object.keys(got).sort(), Object.keys(expected).sort());
}

describe('coffer secrets export for CI', () => {
  let server: TestServer;
  let user: Record<string, string>;
  let work: string;
  const as = (args: string[], input?: string) =>
    runCli(args, { env: user, cwd: work, ...(input !== undefined ? { input } : {}) });

  before(async () => {
    buildOnce();
    server = await startServer();
    user = userEnv(server, tempDir('ci-user'));
    work = tempDir('ci-work');
    const owner = { email: 'ci@example.test', name: 'CI', password: 'ci export password' };
    await signUpAndSetUp(as, owner, 'Pipelines', 'development');
    // Stored exactly through JSON: development without the NUL value, staging with it.
    // The corpus holds ${…} texts that are no references (${NOPE:-fallback}, an unclosed ${):
    // these tests export the stored text (--raw), which is what they are about.
    ok(await as(['secrets', 'import', '-', '--format', 'json'], JSON.stringify(withoutNul)), 'dev');
    ok(
      await as(
        ['secrets', 'import', '-', '--format', 'json', '--env', 'staging'],
        JSON.stringify(all),
      ),
      'staging',
    );
  });
  after(async () => {
    await server?.cleanup();
  });

  test('--format github: $GITHUB_ENV lines on stdout, a mask per value line on stderr', async () => {
    const r = ok(await as(['secrets', 'export', '--format', 'github', '--raw']), 'export github');
    assert.ok(!r.stdout.includes('::add-mask::'), 'no mask in the env part');
    assertExact(parseGithubEnv(r.stdout), withoutNul);
    const masks = parseGithubMasks(r.stderr);
    for (const [key, value] of Object.entries(withoutNul))
      assert.deepEqual(unmaskedLines(value, masks), [], `"${labelOf(key)}" is not masked`);
    assert.ok(!masks.some((m) => m.trim() === ''));
  });

  test('the documented workflow line appends only the variables to $GITHUB_ENV', () => {
    // As a GitHub Actions `run:` step does it: bash, stdout appended to the runner's file.
    const githubEnv = join(tempDir('runner'), 'set_env_1');
    writeFileSync(githubEnv, 'EARLIER=from another step\n');
    const step = spawnSync(
      'bash',
      ['-c', `"$NODE" "$COFFER_CLI" secrets export --format github --raw >> "$GITHUB_ENV"`],
      {
        cwd: work,
        env: { ...user, GITHUB_ENV: githubEnv, NODE: process.execPath, COFFER_CLI: CLI },
        encoding: 'utf8',
      },
    );
    assert.equal(step.status, 0, step.stderr);
    const file = readFileSync(githubEnv, 'utf8');
    assert.ok(!file.includes('::add-mask::'));
    assertExact(parseGithubEnv(file), { EARLIER: 'from another step', ...withoutNul });
    // The step's log (stdout and stderr, both read for workflow commands) registers the masks.
    assert.equal(step.stdout, '');
    assert.ok(parseGithubMasks(step.stderr).length > 100);
  });

  test('--mask-file FILE takes the masks instead of stderr (mode 0600)', async () => {
    const maskFile = join(tempDir('masks'), 'masks.txt');
    const r = ok(
      await as(['secrets', 'export', '--format', 'github', '--raw', '--mask-file', maskFile]),
      'export --mask-file',
    );
    assert.equal(r.stderr, '');
    assertExact(parseGithubEnv(r.stdout), withoutNul);
    assert.equal(statSync(maskFile).mode & 0o777, 0o600);
    const masks = parseGithubMasks(readFileSync(maskFile, 'utf8'));
    for (const value of Object.values(withoutNul))
      assert.deepEqual(unmaskedLines(value, masks), []);
  });

  test('--format github refuses a value no environment variable can hold, printing nothing', async () => {
    const r = await as(['secrets', 'export', '--format', 'github', '--raw', '--env', 'staging']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, new RegExp(`^coffer: ${nulName} cannot be exported: it has a NUL`));
    assert.ok(!r.stderr.includes('::add-mask::'), 'no masks either');
    assert.match(r.stderr, /\(unwritable_value\)\n$/);
  });

  test('--format k8s --name: a Secret whose base64 data decodes to every value, NUL included', async () => {
    const r = ok(
      await as([
        'secrets',
        'export',
        '--format',
        'k8s',
        '--name',
        'storefront-staging',
        '--namespace',
        'shop',
        '--env',
        'staging',
        '--raw',
      ]),
      'export k8s',
    );
    const doc = parseYaml(r.stdout) as {
      apiVersion: string;
      kind: string;
      metadata: Record<string, string>;
      type: string;
      data: Record<string, string>;
    };
    assert.equal(doc.apiVersion, 'v1');
    assert.equal(doc.kind, 'Secret');
    assert.deepEqual(doc.metadata, { name: 'storefront-staging', namespace: 'shop' });
    assert.equal(doc.type, 'Opaque');
    const decoded = Object.fromEntries(
      Object.entries(doc.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
    assertExact(decoded, all);
  });

  test('a value starting with U+FEFF survives storing and exporting', async () => {
    ok(await as(['secrets', 'set', 'BOM', '--env', 'production', '\ufeffx']), 'set BOM');
    const r = ok(
      await as(['secrets', 'export', '--format', 'json', '--env', 'production']),
      'json',
    );
    assert.deepEqual(JSON.parse(r.stdout), { BOM: '\ufeffx' });
  });

  test('usage errors exit 2 before anything is fetched', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--format', 'k8s'], /--format k8s needs --name NAME/],
      [['--format', 'k8s', '--name', 'Bad_Name'], /not a Kubernetes name/],
      [['--format', 'k8s', '--name', 'x', '--namespace', 'a.b'], /not a Kubernetes namespace/],
      [['--format', 'github', '--name', 'x'], /apply to --format k8s only/],
      [['--format', 'dotenv', '--mask-file', 'm'], /--mask-file applies to --format github/],
      [['--format', 'github', '--dialect', 'node'], /--dialect applies/],
      [['--format', 'gitlab'], /--format must be dotenv, json, yaml, shell, github or k8s/],
    ];
    for (const [args, message] of cases) {
      const r = await as(['secrets', 'export', ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '');
    }
  });
});
