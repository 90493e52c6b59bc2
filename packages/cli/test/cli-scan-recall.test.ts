// Recall against a pattern scanner: a repository with 20 leaks of the team's
// real values (database passwords, random tokens, keys of known shapes, some
// encoded) and 5 decoys shaped like keys that are not the team's. `coffer
// scan` must find all 20 and none of the decoys. secretlint with its
// recommended preset runs on the same files in the same test; its recall is
// reported (test diagnostics), not asserted.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  buildOnce,
  ROOT,
  runCli,
  startServer,
  tempDir,
  userEnv,
  type TestServer,
} from './support/harness.js';
import { ok, signUpAndSetUp } from './support/flow.js';
import { at, git, initRepo, token, write } from './support/scan-fixtures.js';

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const HEX = '0123456789abcdef';
const DIGITS = '0123456789';
const PASSWORD = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~!*';

const pem = () =>
  generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs1',
    format: 'pem',
  }) as string;

interface Leak {
  name: string;
  value: string;
  file: string;
  /** The line as it appears in the file, with the value (or its encoding) in it. */
  line: (value: string) => string;
  /** What to look for in the line to place the finding, when not the raw value. */
  shown?: (value: string) => string;
  encoding: string;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

const LEAKS: Leak[] = [
  {
    name: 'AWS_ACCESS_KEY_ID',
    value: `AKIA${token(16, UPPER)}`,
    file: 'config/aws.ini',
    line: (v) => `aws_access_key_id = ${v}`,
    encoding: 'raw',
  },
  {
    name: 'AWS_SECRET_ACCESS_KEY',
    value: token(40, `${PASSWORD.slice(0, 62)}/+`),
    file: 'config/aws.ini',
    line: (v) => `aws_secret_access_key = ${v}`,
    encoding: 'raw',
  },
  {
    name: 'GITHUB_TOKEN',
    value: `ghp_${token(36)}`,
    file: '.github/workflows/deploy.yml',
    line: (v) => `      GH_TOKEN: ${v}`,
    encoding: 'raw',
  },
  {
    name: 'SLACK_BOT_TOKEN',
    value: `xoxb-${token(12, DIGITS)}-${token(13, DIGITS)}-${token(24)}`,
    file: 'scripts/notify.sh',
    line: (v) => `curl -H "Authorization: Bearer ${v}" https://slack.com/api/chat.postMessage`,
    encoding: 'raw',
  },
  {
    name: 'STRIPE_SECRET_KEY',
    value: `sk_live_${token(24)}`,
    file: 'src/billing.ts',
    line: (v) => `const stripe = new Stripe('${v}');`,
    encoding: 'raw',
  },
  {
    name: 'NPM_TOKEN',
    value: `npm_${token(36)}`,
    file: '.npmrc',
    line: (v) => `//registry.npmjs.org/:_authToken=${v}`,
    encoding: 'raw',
  },
  {
    name: 'SENDGRID_API_KEY',
    value: `SG.${token(22)}.${token(43)}`,
    file: 'src/mail.py',
    line: (v) => `sg = SendGridAPIClient("${v}")`,
    encoding: 'raw',
  },
  {
    name: 'TLS_PRIVATE_KEY',
    value: pem(),
    file: 'deploy/tls.key',
    line: (v) => v.trimEnd(),
    encoding: 'raw',
  },
  {
    name: 'DB_PASSWORD',
    value: token(20, PASSWORD),
    file: '.env.production',
    line: (v) => `DATABASE_URL=postgres://app:${v}@db.prod.internal:5432/app`,
    encoding: 'url-userinfo',
  },
  {
    name: 'REPLICA_DB_PASSWORD',
    value: token(24, PASSWORD),
    file: 'config/database.yml',
    line: (v) => `  password: ${v}`,
    encoding: 'raw',
  },
  {
    name: 'INTERNAL_API_TOKEN',
    value: token(64, HEX),
    file: 'docker-compose.yml',
    line: (v) => `      - INTERNAL_API_TOKEN=${v}`,
    encoding: 'raw',
  },
  {
    name: 'WEBHOOK_SIGNING_SECRET',
    value: `whsec_${randomBytes(24).toString('base64')}`,
    file: 'k8s/secret.yaml',
    line: (v) => `  WEBHOOK_SIGNING_SECRET: ${b64(v)}`,
    shown: (v) => b64(v),
    encoding: 'base64',
  },
  {
    name: 'JWT_SECRET',
    value: `${token(20)}/${token(12)}+${token(12)}=`,
    file: 'logs/app.log',
    line: (v) =>
      `2026-03-04T05:06:07Z DEBUG verifying with secret=${encodeURIComponent(v)} for /api/session`,
    shown: (v) => encodeURIComponent(v),
    encoding: 'url-encoded',
  },
  {
    name: 'REDIS_PASSWORD',
    value: `${token(10)}"${token(8)}\\${token(8)}`,
    file: 'src/settings.json',
    line: (v) => `  "redis": ${JSON.stringify({ password: v })},`,
    shown: (v) => JSON.stringify(v).slice(1, -1),
    encoding: 'json-escaped',
  },
  {
    name: 'SESSION_SECRET',
    value: token(32),
    file: 'tests/fixtures/session.txt',
    line: (v) => `cookie-secret-hex: ${Buffer.from(v).toString('hex')}`,
    shown: (v) => Buffer.from(v).toString('hex'),
    encoding: 'hex',
  },
  {
    name: 'ARTIFACTS_PASSWORD',
    value: token(18),
    file: 'scripts/fetch.sh',
    line: (v) =>
      `curl -fsSL https://deploy:${v}@artifacts.example.com/repo/app.tar.gz -o app.tar.gz`,
    encoding: 'url-userinfo',
  },
  {
    name: 'SHOPIFY_ACCESS_TOKEN',
    value: `shpat_${token(32, HEX)}`,
    file: 'src/shop.rb',
    line: (v) => `ShopifyAPI::Context.setup(api_key: "app", api_secret_key: "${v}")`,
    encoding: 'raw',
  },
  {
    name: 'SLACK_WEBHOOK_URL',
    value: `https://hooks.slack.com/services/T${token(8, UPPER)}/B${token(8, UPPER)}/${token(24)}`,
    file: 'ci/notify.yml',
    line: (v) => `  webhook: ${v}`,
    encoding: 'raw',
  },
  {
    name: 'OPENAI_API_KEY',
    value: `sk-${token(20)}T3BlbkFJ${token(20)}`,
    file: 'src/ai.py',
    line: (v) => `client = OpenAI(api_key="${v}")`,
    encoding: 'raw',
  },
  {
    name: 'ENCRYPTION_KEY',
    value: randomBytes(32).toString('base64'),
    file: 'Dockerfile',
    line: (v) => `ENV ENCRYPTION_KEY=${v}`,
    encoding: 'raw',
  },
];

/** Shaped like keys, not the team's: a pattern scanner flags them, coffer must not. */
const DECOYS: { file: string; line: string }[] = [
  { file: 'tests/fixtures/decoys.txt', line: `github: ghp_${token(36)}` },
  { file: 'tests/fixtures/decoys.txt', line: `stripe: sk_live_${token(24)}` },
  {
    file: 'tests/fixtures/decoys.txt',
    line: `slack: xoxb-${token(12, DIGITS)}-${token(13, DIGITS)}-${token(24)}`,
  },
  { file: 'tests/fixtures/decoys.txt', line: `npm: npm_${token(36)}` },
  { file: 'tests/fixtures/decoy.pem', line: pem().trimEnd() },
];

describe('coffer scan recall against secretlint', () => {
  let server: TestServer;
  let user: Record<string, string>;
  let work: string;

  before(async () => {
    buildOnce();
    server = await startServer();
    user = userEnv(server, tempDir('recall-home'));
    work = tempDir('recall-work');
    const as = (args: string[], input?: string) =>
      runCli(args, { env: user, cwd: work, ...(input !== undefined ? { input } : {}) });
    await signUpAndSetUp(
      as,
      { email: 'recall@example.test', name: 'Recall', password: 'recall test password' },
      'Recall',
      'production',
    );
    const values = Object.fromEntries(LEAKS.map((l) => [l.name, l.value]));
    ok(
      await as(
        ['secrets', 'import', '-', '--format', 'json', '--env', 'production'],
        JSON.stringify(values),
      ),
      'import',
    );
  });
  after(async () => {
    await server?.cleanup();
  });

  test('coffer scan finds all 20 leaks and none of the 5 decoys; secretlint reported', async (t) => {
    const repo = join(work, 'fixture');
    initRepo(repo);
    const contents = new Map<string, string[]>();
    const add = (file: string, line: string) => {
      if (!contents.has(file)) contents.set(file, [`# ${file}`]);
      contents.get(file)!.push(line);
    };
    for (const leak of LEAKS) add(leak.file, leak.line(leak.value));
    for (const decoy of DECOYS) add(decoy.file, decoy.line);
    const text = new Map([...contents].map(([file, lines]) => [file, `${lines.join('\n')}\n`]));
    for (const [file, content] of text) write(repo, file, content);
    git(repo, ['add', '.']);
    git(repo, ['commit', '-qm', 'fixture']);

    const expected = LEAKS.map(
      (l) =>
        `${at(l.file, text.get(l.file)!, l.shown ? l.shown(l.value) : l.value)}  ${l.name} (production) [${l.encoding}]`,
    ).sort();
    const r = await runCli(['scan'], { env: user, cwd: repo });
    assert.equal(r.code, 1, r.stderr);
    const found = r.stdout.split('\n').filter(Boolean).sort();
    assert.deepEqual(found, expected, 'all 20 leaks, each once, and nothing else');
    const decoyLines = DECOYS.map((d) => at(d.file, text.get(d.file)!, d.line).split(':'));
    for (const [file, line] of decoyLines)
      assert.ok(!found.some((f) => f.startsWith(`${file}:${line}:`)), `a decoy in ${file}:${line}`);

    // secretlint, recommended preset, on the same files (listed explicitly: dotfiles too).
    const rc = join(work, '.secretlintrc.json');
    write(
      work,
      '.secretlintrc.json',
      JSON.stringify({ rules: [{ id: '@secretlint/secretlint-rule-preset-recommend' }] }),
    );
    let report = '[]';
    try {
      report = execFileSync(
        join(ROOT, 'node_modules/.bin/secretlint'),
        ['--secretlintrc', rc, '--format', 'json', ...[...text.keys()].map((f) => join(repo, f))],
        { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 26 },
      );
    } catch (err) {
      report = String((err as { stdout?: string }).stdout ?? '[]'); // exit 1: it found something
    }
    const results = JSON.parse(report || '[]') as {
      filePath: string;
      messages: { loc: { start: { line: number } }; ruleId: string }[];
    }[];
    const flagged = new Set<string>();
    for (const result of results)
      for (const m of result.messages)
        flagged.add(`${result.filePath.slice(repo.length + 1)}:${m.loc.start.line}`);
    const leakLines = LEAKS.map((l) =>
      at(l.file, text.get(l.file)!, l.line(l.value).split('\n')[0]!).split(':'),
    );
    const secretlintFound = leakLines.filter(([file, line]) =>
      flagged.has(`${file}:${line}`),
    ).length;
    const secretlintDecoys = decoyLines.filter(([file, line]) =>
      flagged.has(`${file}:${line}`),
    ).length;
    t.diagnostic(
      `recall on ${LEAKS.length} leaks of the team's values: coffer scan ${found.length}/${LEAKS.length}, decoys flagged 0/${DECOYS.length}; ` +
        `secretlint (preset-recommend) ${secretlintFound}/${LEAKS.length}, decoys flagged ${secretlintDecoys}/${DECOYS.length}`,
    );
    const missed = LEAKS.filter(
      (_, i) => !flagged.has(`${leakLines[i]![0]}:${leakLines[i]![1]}`),
    ).map((l) => l.name);
    t.diagnostic(`secretlint missed: ${missed.join(', ')}`);
  });
});
