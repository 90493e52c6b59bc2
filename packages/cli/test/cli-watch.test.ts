// `coffer run --watch` and `coffer secrets export --watch` with the built
// binary against a REAL server process: a change made by someone else restarts
// the child with the new value, the child keeps running through a server
// outage, the child's own exit code comes back, and the exported file is
// rewritten atomically.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ok } from './support/flow.js';
import {
  buildOnce,
  pipelineEnv,
  runCli,
  startAgain,
  startServer,
  tempDir,
  userEnv,
  type CliResult,
  type TestServer,
} from './support/harness.js';

// The signal handlers come before the line the tests wait for: a signal sent as
// soon as "start" is read must find them in place.
const CHILD = `
const value = process.env.FOO;
process.on('SIGTERM', () => { console.log('stopping pid=' + process.pid); process.exit(0); });
process.on('SIGHUP', () => console.log('hup pid=' + process.pid));
console.log('start FOO=' + value + ' pid=' + process.pid);
if (value && value.startsWith('exit')) process.exit(Number(value.slice(4)));
setInterval(() => undefined, 1000);
`;

async function until<T>(what: string, check: () => T | undefined | false, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Runs `coffer ARGS` in `dir` with the token, collecting its output as it comes. */
async function watching(args: string[], env: Record<string, string>, dir: string) {
  let child: ChildProcess | null = null;
  const result = runCli(args, { env, cwd: dir }, (c) => (child = c));
  const out = { stdout: '', stderr: '', child: null as unknown as ChildProcess, result };
  await until('the CLI to spawn', () => child !== null);
  out.child = child!;
  child!.stdout!.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child!.stderr!.on('data', (d: Buffer) => (out.stderr += d.toString()));
  return out;
}

describe('coffer --watch against a real server', () => {
  let server: TestServer;
  let as: (args: string[], input?: string) => Promise<CliResult>;
  let token = '';
  let home = '';
  before(async () => {
    buildOnce();
    server = await startServer({ EVENTS_HEARTBEAT_MS: '1000' });
    home = tempDir('watch-home');
    const work = tempDir('watch-work');
    as = (args, input) =>
      runCli(args, {
        env: userEnv(server, home),
        cwd: work,
        ...(input !== undefined ? { input } : {}),
      });
    ok(
      await as(
        ['signup', '--email', 'ada@example.test', '--name', 'Ada', '--password-stdin'],
        'a long password\n',
      ),
      'signup',
    );
    ok(await as(['projects', 'create', 'Watched']), 'projects create');
    ok(await as(['setup', '--project', 'Watched', '--env', 'production']), 'setup');
    ok(await as(['secrets', 'set', 'FOO', 'one']), 'set FOO');
    token = ok(
      await as(['api-keys', 'create', '--role', 'developer', '--scope', 'production:read']),
      'api-keys create',
    ).stdout.trim();
  });
  const extra: ChildProcess[] = [];
  after(async () => {
    for (const c of extra) {
      c.kill('SIGTERM');
      await new Promise((resolve) => c.once('exit', resolve));
    }
    await server?.cleanup();
  });

  test('run --watch restarts the child with a value someone else changed, keeps it running through an outage, and exits with its code', async () => {
    const dir = tempDir('watch-child');
    writeFileSync(join(dir, 'child.js'), CHILD);
    const run = await watching(
      [
        'run',
        '--watch',
        '--env',
        'production',
        '--grace',
        '5s',
        '--',
        process.execPath,
        'child.js',
      ],
      pipelineEnv(server, token),
      dir,
    );
    const starts = () =>
      [...run.stdout.matchAll(/start FOO=(\S+) pid=(\d+)/g)].map(
        (m) => [m[1]!, Number(m[2])] as const,
      );

    await until('the first start', () => starts().length === 1);
    assert.equal(starts()[0]![0], 'one');
    const firstPid = starts()[0]![1];

    // Someone else (the admin, with their own session) changes it.
    ok(await as(['secrets', 'set', 'FOO', 'two']), 'set FOO=two');
    await until(`a restart with FOO=two (run.stderr: ${run.stderr})`, () => starts().length === 2);
    assert.equal(starts()[1]![0], 'two');
    assert.match(run.stdout, new RegExp(`stopping pid=${firstPid}`), 'the old child got SIGTERM');
    assert.ok(!alive(firstPid));
    assert.match(run.stderr, /FOO changed in production \(by Ada\)/);
    const secondPid = starts()[1]![1];

    // The server goes away: the child keeps running on the last good values.
    await server.stop();
    await until('the CLI to notice', () => /lost the server/.test(run.stderr));
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.ok(alive(secondPid), 'the child runs through the outage');
    assert.equal(starts().length, 2);

    // Back on the same address: the CLI reconnects and follows changes again.
    const restarted = await startAgain(server, { EVENTS_HEARTBEAT_MS: '1000' });
    try {
      await until('the reconnection', () => /reconnected/.test(run.stderr), 60_000);
      ok(await as(['secrets', 'set', 'FOO', 'three']), 'set FOO=three');
      await until('a restart with FOO=three', () => starts().length === 3);
      assert.equal(starts()[2]![0], 'three');

      // The child exits on its own (with 7): coffer exits with that code.
      ok(await as(['secrets', 'set', 'FOO', 'exit7']), 'set FOO=exit7');
      const done = await run.result;
      assert.equal(done.code, 7, done.stderr);
      assert.equal(starts().at(-1)![0], 'exit7');
    } finally {
      restarted.kill('SIGTERM');
      await new Promise((resolve) => restarted.once('exit', resolve));
      // The other tests go on with a server at the same address.
      extra.push(await startAgain(server, { EVENTS_HEARTBEAT_MS: '1000' }));
    }
  });

  test('run --watch --signal HUP signals the child instead of restarting it', async () => {
    const dir = tempDir('watch-hup');
    writeFileSync(join(dir, 'child.js'), CHILD);
    ok(await as(['secrets', 'set', 'FOO', 'steady']), 'set FOO=steady');
    const run = await watching(
      [
        'run',
        '--watch',
        '--signal',
        'HUP',
        '--env',
        'production',
        '--',
        process.execPath,
        'child.js',
      ],
      pipelineEnv(server, token),
      dir,
    );
    await until('the start', () => /start FOO=steady pid=(\d+)/.exec(run.stdout));
    const pid = Number(/start FOO=steady pid=(\d+)/.exec(run.stdout)![1]);
    ok(await as(['secrets', 'set', 'OTHER', 'x']), 'another change');
    await until('the HUP', () => run.stdout.includes(`hup pid=${pid}`));
    assert.equal([...run.stdout.matchAll(/start FOO/g)].length, 1, 'not restarted');
    run.child.kill('SIGTERM'); // passed on to the child, which exits 0
    assert.equal((await run.result).code, 0);
  });

  test('secrets export --watch keeps a file current, rewritten atomically (0600, rename), with --on-change', async () => {
    const dir = tempDir('watch-export');
    const file = join(dir, 'app.json');
    const marker = join(dir, 'changed');
    ok(await as(['secrets', 'set', 'BIG', 'a'.repeat(100)]), 'set BIG');
    const run = await watching(
      [
        'secrets',
        'export',
        '--env',
        'production',
        '--format',
        'json',
        '--watch',
        '--output',
        file,
        '--on-change',
        `echo changed >> ${marker}`,
      ],
      pipelineEnv(server, token),
      dir,
    );
    const read = () => JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
    await until('the file', () => existsSync(file) && read().BIG === 'a'.repeat(100));
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const inode = statSync(file).ino;

    // A reader polling the file meanwhile only ever sees a whole document.
    let reads = 0;
    let torn = 0;
    let polling = true;
    const poll = (async () => {
      while (polling) {
        try {
          read();
          reads++;
        } catch {
          torn++;
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const big = 'b'.repeat(60_000);
    try {
      ok(await as(['secrets', 'set', 'BIG', '--stdin'], big), 'set a large BIG');
      await until('the rewrite', () => read().BIG === big);
    } finally {
      polling = false;
      await poll;
    }
    assert.equal(torn, 0, `a reader saw a partial file (${torn} of ${reads + torn} reads)`);
    assert.notEqual(statSync(file).ino, inode, 'a new file renamed over the old one');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(
      readdirSync(dir).filter((n) => n.endsWith('.tmp')),
      [],
      'no temporary file left',
    );
    await until('the --on-change hook', () => existsSync(marker));
    run.child.kill('SIGTERM');
    assert.equal((await run.result).code, 0);
  });

  test('run --watch follows the environments its values refer to: a change in staging or in another project restarts the child with the new resolved values', async () => {
    const dir = tempDir('watch-refs');
    writeFileSync(
      join(dir, 'child.js'),
      `process.on('SIGTERM', () => process.exit(0));
console.log('start URL=' + process.env.URL + ' BILL=' + process.env.BILL);
setInterval(() => undefined, 1000);
`,
    );
    const inShop = (env: string, name: string, value: string) =>
      as(['secrets', 'set', name, '--project', 'Shop', '--env', env, '--stdin'], value);
    ok(await as(['projects', 'create', 'Shop']), 'projects create Shop');
    ok(await as(['projects', 'create', 'Billing']), 'projects create Billing');
    ok(
      await as(['secrets', 'set', 'KEY', 'k1', '--project', 'Billing', '--env', 'production']),
      'set Billing KEY',
    );
    ok(await inShop('staging', 'DB_USER', 'app'), 'set staging DB_USER');
    ok(await inShop('production', 'URL', 'postgres://${staging.DB_USER}@db/shop'), 'set URL');
    ok(await inShop('production', 'BILL', 'key=${Billing/production.KEY}'), 'set BILL');
    const run = await watching(
      [
        'run',
        '--watch',
        '--project',
        'Shop',
        '--env',
        'production',
        '--',
        process.execPath,
        'child.js',
      ],
      userEnv(server, home),
      dir,
    );
    const starts = () => [...run.stdout.matchAll(/start (.*)/g)].map((m) => m[1]!);
    await until(`the first start (stderr: ${run.stderr})`, () => starts().length === 1);
    assert.equal(starts()[0], 'URL=postgres://app@db/shop BILL=key=k1');

    // Another environment of the project: the same feed, no longer filtered to production.
    ok(await inShop('staging', 'DB_USER', 'app2'), 'set staging DB_USER=app2');
    await until(`a restart for staging (stderr: ${run.stderr})`, () => starts().length === 2);
    assert.equal(starts()[1], 'URL=postgres://app2@db/shop BILL=key=k1');
    assert.match(run.stderr, /DB_USER changed in staging \(by Ada\)/);

    // Another project: its own feed.
    ok(
      await as(['secrets', 'set', 'KEY', 'k2', '--project', 'Billing', '--env', 'production']),
      'set Billing KEY=k2',
    );
    await until(`a restart for Billing (stderr: ${run.stderr})`, () => starts().length === 3);
    assert.equal(starts()[2], 'URL=postgres://app2@db/shop BILL=key=k2');

    // A change elsewhere in staging that the values do not use resolves to the same: no restart.
    ok(await inShop('staging', 'UNUSED', 'x'), 'set staging UNUSED');
    // A referenced secret deleted: the child keeps its values, and is restarted once it is back.
    ok(
      await as(['secrets', 'delete', 'DB_USER', '--project', 'Shop', '--env', 'staging', '--yes']),
      'delete staging DB_USER',
    );
    await until(`the note (stderr: ${run.stderr})`, () =>
      /URL: \$\{staging\.DB_USER\}: environment "staging" has no secret DB_USER \(reference_missing\)|keeping the last values until they resolve again/.test(
        run.stderr,
      ),
    );
    assert.equal(starts().length, 3, 'not restarted for UNUSED nor for the broken reference');
    ok(await inShop('staging', 'DB_USER', 'app3'), 'set staging DB_USER=app3');
    await until(`a restart once it resolves (stderr: ${run.stderr})`, () => starts().length === 4);
    assert.equal(starts()[3], 'URL=postgres://app3@db/shop BILL=key=k2');
    run.child.kill('SIGTERM');
    assert.equal((await run.result).code, 0);
  });
});
