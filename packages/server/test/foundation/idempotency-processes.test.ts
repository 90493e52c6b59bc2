import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createTestDb, onlyOn } from '../support/db.js';
import { realPostgres, startServerProcess, type ServerProcess } from './server-process.js';
import {
  createProject,
  projectNames,
  signUpSession,
  WRITERS_ENV,
  type Outcome,
  type Session,
} from './writers.js';

const WRITERS = 20;
const KILLS = Number(process.env.KILL_ROUNDS ?? 10);
const newKey = () => randomBytes(24).toString('base64url');
const certOf = (dataDir: string) => readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
const at = (session: Session, server: ServerProcess): Session => ({
  ...session,
  origin: server.url,
});

/** Sends the write under its key until it is answered other than `409 request_in_progress`, as the SDK does. */
async function untilAnswered(
  server: ServerProcess,
  agent: Agent,
  session: Session,
  name: string,
  key: string,
): Promise<Extract<Outcome, { answered: true }>> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const outcome = await createProject(server.url, agent, at(session, server), name, key);
    if (!outcome.answered) throw new Error(`${name}: ${outcome.code}`);
    if (outcome.status !== 409 || !outcome.body.includes('request_in_progress')) return outcome;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${name}: still in progress`);
}

/**
 * `kill -9` while 20 writers send keyed writes, `KILLS` times on the same
 * storage; then every key is sent again to a restarted server. The invariant:
 * each write exists exactly once; a write that was answered is answered the
 * same again; one that committed but whose answer the kill cut is answered
 * from its committed result (replayed), one that did not commit is executed now.
 */
async function killedBetweenCommitAndAnswer(
  t: { diagnostic(message: string): void },
  env: Record<string, string>,
  dataDir: string,
): Promise<void> {
  const base = { ...WRITERS_ENV, ...env, DATA_DIR: dataDir };
  let session: Session | null = null;
  const sent = new Map<string, { key: string; first: Outcome }>();
  for (let round = 0; round < KILLS; round++) {
    const server = await startServerProcess(base);
    const ca = certOf(dataDir);
    session = session ? at(session, server) : await signUpSession(server, ca);
    const current = session;
    const agents = Array.from(
      { length: WRITERS },
      () => new Agent({ keepAlive: true, maxSockets: 1, ca }),
    );
    let started = 0;
    let allStarted!: () => void;
    const underWay = new Promise<void>((resolve) => (allStarted = resolve));
    const writers = agents.map(async (agent, w) => {
      for (let i = 0; ; i++) {
        const name = `k${round}-w${w}-${i}`;
        const key = newKey();
        const first = await createProject(server.url, agent, current, name, key);
        sent.set(name, { key, first });
        if (i === 0 && ++started === WRITERS) allStarted();
        if (!first.answered) return;
        assert.equal(first.status, 201, first.body);
      }
    });
    await underWay;
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 60));
    await server.stop('SIGKILL');
    await Promise.all(writers);
    for (const agent of agents) agent.destroy();
  }

  const server = await startServerProcess(base);
  try {
    const ca = certOf(dataDir);
    const agent = new Agent({ keepAlive: true, ca });
    let cutAfterCommit = 0;
    let notCommitted = 0;
    for (const [name, { key, first }] of sent) {
      const again = await untilAnswered(server, agent, session!, name, key);
      assert.equal(again.status, 201, `${name}: ${again.body}`);
      if (first.answered) {
        assert.equal(again.body, first.body, `${name}: answered differently`);
        assert.ok(again.replayed, `${name}: executed again`);
      } else if (again.replayed) cutAfterCommit++;
      else notCommitted++;
    }
    agent.destroy();
    const names = await projectNames(server, ca, at(session!, server));
    const counts = new Map<string, number>();
    for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
    const wrong = [...sent.keys()].filter((n) => counts.get(n) !== 1);
    assert.deepEqual(wrong, [], 'writes stored other than once');
    // 20 writers in flight at each kill: some commit and lose their answer.
    assert.ok(cutAfterCommit > 0, 'no kill landed between a commit and its answer');
    t.diagnostic(
      `${sent.size} keyed writes, ${KILLS} kills: ${cutAfterCommit} committed with their answer cut (replayed on retry), ${notCommitted} not committed (executed on retry)`,
    );
  } finally {
    await server.stop();
  }
}

describe('idempotency keys against real server processes', () => {
  it(
    `SQLite: kill -9 during keyed writes (${KILLS} times), then every key retried`,
    onlyOn('sqlite'),
    async (t) => {
      const dataDir = mkdtempSync(join(tmpdir(), 'coffer-kill-keys-'));
      try {
        await killedBetweenCommitAndAnswer(t, {}, dataDir);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );

  it(
    `PostgreSQL: kill -9 during keyed writes (${KILLS} times), then every key retried`,
    onlyOn('postgres'),
    async (t) => {
      if (!realPostgres(t)) return;
      const database = await createTestDb('postgres');
      try {
        await killedBetweenCommitAndAnswer(
          t,
          { DATABASE_URL: database.databaseUrl! },
          database.dataDir,
        );
      } finally {
        await database.cleanup();
      }
    },
  );

  it(
    'PostgreSQL, two instances: the same write through both is executed once and answered identically',
    onlyOn('postgres'),
    async (t) => {
      if (!realPostgres(t)) return;
      const database = await createTestDb('postgres');
      const dataA = mkdtempSync(join(tmpdir(), 'coffer-instance-a-'));
      const dataB = mkdtempSync(join(tmpdir(), 'coffer-instance-b-'));
      const env = { ...WRITERS_ENV, DATABASE_URL: database.databaseUrl! };
      const a = await startServerProcess({ ...env, DATA_DIR: dataA });
      const b = await startServerProcess({ ...env, DATA_DIR: dataB });
      try {
        const agentA = new Agent({ keepAlive: true, ca: certOf(dataA) });
        const agentB = new Agent({ keepAlive: true, ca: certOf(dataB) });
        const session = await signUpSession(a, certOf(dataA));

        // One after the other: A executes, B answers from A's write.
        const key = newKey();
        const first = await untilAnswered(a, agentA, session, 'through A then B', key);
        const second = await untilAnswered(b, agentB, session, 'through A then B', key);
        assert.equal(first.status, 201, first.body);
        assert.deepEqual([second.status, second.body], [first.status, first.body]);
        assert.ok(second.replayed);

        // At the same moment through both, 20 keys.
        const pairs = await Promise.all(
          Array.from({ length: 20 }, async (_, i) => {
            const k = newKey();
            const name = `both ${i}`;
            return Promise.all([
              untilAnswered(a, agentA, session, name, k),
              untilAnswered(b, agentB, session, name, k),
            ]);
          }),
        );
        for (const [fromA, fromB] of pairs) {
          assert.equal(fromA.status, 201, fromA.body);
          assert.deepEqual([fromB.status, fromB.body], [fromA.status, fromA.body]);
        }
        const names = await projectNames(a, certOf(dataA), at(session, a));
        for (let i = 0; i < 20; i++) {
          assert.equal(names.filter((n) => n === `both ${i}`).length, 1, `both ${i}`);
        }
        assert.equal(names.filter((n) => n === 'through A then B').length, 1);
        agentA.destroy();
        agentB.destroy();
      } finally {
        await a.stop();
        await b.stop();
        rmSync(dataA, { recursive: true, force: true });
        rmSync(dataB, { recursive: true, force: true });
        await database.cleanup();
      }
    },
  );
});
