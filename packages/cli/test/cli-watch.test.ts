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
import { startPublicServer } from '../../server/test/foundation/server-process.js';
import { ok } from './support/flow.js';
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

const CHILD = `
const value = process.env.FOO;
console.log('start FOO=' + value + ' pid=' + process.pid);
if (value && value.startsWith('exit')) process.exit(Number(value.slice(4)));
process.on('SIGTERM', () => { console.log('stopping pid=' + process.pid); process.exit(0); });
process.on('SIGHUP', () => console.log('hup pid=' + process.pid));
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

describe('coffer --watch against a real server', () => {
  let server: TestServer;
  let as: (args: string[], input?: string) => Promise<CliResult>;
  let token = '';
  before(async () => {
    buildOnce();
    server = await startServer({ EVENTS_HEARTBEAT_MS: '1000' });
    const home = tempDir('watch-home');
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
    let child: ChildProcess | null = null;
    const result = runCli(
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
      { env: pipelineEnv(server, token), cwd: dir },
      (c) => (child = c),
    );
    let stdout = '';
    let stderr = '';
    await until('the CLI to spawn', () => child !== null);
    child!.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child!.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const starts = () =>
      [...stdout.matchAll(/start FOO=(\S+) pid=(\d+)/g)].map((m) => [m[1]!, Number(m[2])] as const);

    await until('the first start', () => starts().length === 1);
    assert.equal(starts()[0]![0], 'one');
    const firstPid = starts()[0]![1];

    // Someone else (the admin, with their own session) changes it.
    ok(await as(['secrets', 'set', 'FOO', 'two']), 'set FOO=two');
    await until(`a restart with FOO=two (stderr: ${stderr})`, () => starts().length === 2);
    assert.equal(starts()[1]![0], 'two');
    assert.match(stdout, new RegExp(`stopping pid=${firstPid}`), 'the old child got SIGTERM');
    assert.ok(!alive(firstPid));
    assert.match(stderr, /FOO changed in production \(by Ada\)/);
    const secondPid = starts()[1]![1];

    // The server goes away: the child keeps running on the last good values.
    await server.stop();
    await until('the CLI to notice', () => /lost the server/.test(stderr));
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.ok(alive(secondPid), 'the child runs through the outage');
    assert.equal(starts().length, 2);

    // Back on the same address: the CLI reconnects and follows changes again.
    const port = new URL(server.url).port;
    const restarted = await startPublicServer(server.dataDir, {
      EVENTS_HEARTBEAT_MS: '1000',
      PORT: port,
      PUBLIC_URL: server.url,
    });
    try {
      await until('the reconnection', () => /reconnected/.test(stderr), 60_000);
      ok(await as(['secrets', 'set', 'FOO', 'three']), 'set FOO=three');
      await until('a restart with FOO=three', () => starts().length === 3);
      assert.equal(starts()[2]![0], 'three');

      // The child exits on its own (with 7): coffer exits with that code.
      ok(await as(['secrets', 'set', 'FOO', 'exit7']), 'set FOO=exit7');
      const done = await result;
      assert.equal(done.code, 7, done.stderr);
      assert.equal(starts().at(-1)![0], 'exit7');
    } finally {
      restarted.child.kill('SIGTERM');
      await new Promise((resolve) => restarted.child.once('exit', resolve));
      // The other tests go on with a server at the same address.
      const again = await startPublicServer(server.dataDir, {
        EVENTS_HEARTBEAT_MS: '1000',
        PORT: port,
        PUBLIC_URL: server.url,
      });
      extra.push(again.child);
    }
  });

  test('run --watch --signal HUP signals the child instead of restarting it', async () => {
    const dir = tempDir('watch-hup');
    writeFileSync(join(dir, 'child.js'), CHILD);
    ok(await as(['secrets', 'set', 'FOO', 'steady']), 'set FOO=steady');
    let child: ChildProcess | null = null;
    const result = runCli(
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
      { env: pipelineEnv(server, token), cwd: dir },
      (c) => (child = c),
    );
    let stdout = '';
    await until('the CLI to spawn', () => child !== null);
    child!.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    await until('the start', () => /start FOO=steady pid=(\d+)/.exec(stdout));
    const pid = Number(/start FOO=steady pid=(\d+)/.exec(stdout)![1]);
    ok(await as(['secrets', 'set', 'OTHER', 'x']), 'another change');
    await until('the HUP', () => stdout.includes(`hup pid=${pid}`));
    assert.equal([...stdout.matchAll(/start FOO/g)].length, 1, 'not restarted');
    child!.kill('SIGTERM'); // passed on to the child, which exits 0
    assert.equal((await result).code, 0);
  });

  test('secrets export --watch keeps a file current, rewritten atomically (0600, rename), with --on-change', async () => {
    const dir = tempDir('watch-export');
    const file = join(dir, 'app.json');
    const marker = join(dir, 'changed');
    ok(await as(['secrets', 'set', 'BIG', 'a'.repeat(100)]), 'set BIG');
    let child: ChildProcess | null = null;
    const result = runCli(
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
      { env: pipelineEnv(server, token), cwd: dir },
      (c) => (child = c),
    );
    await until('the CLI to spawn', () => child !== null);
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
    child!.kill('SIGTERM');
    assert.equal((await result).code, 0);
  });
});
