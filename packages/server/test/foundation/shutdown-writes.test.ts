import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createTestDb, onlyOn } from '../support/db.js';
import { realPostgres, startServerProcess } from './server-process.js';
import {
  createProject,
  projectNames,
  signUpSession,
  WRITERS_ENV,
  type Outcome,
  type Session,
} from './writers.js';

const WRITERS = 20;
const ROUNDS = Number(process.env.SHUTDOWN_ROUNDS ?? 20);

/**
 * One round: 20 writers, each on its own kept-alive connection, create
 * projects one after another; once all are under way the server gets SIGTERM.
 * Each writer stops at its first failure. Returns every write's outcome.
 */
async function round(
  env: Record<string, string>,
  ca: () => string,
  session: () => Session | null,
  setSession: (s: Session) => void,
  n: number,
): Promise<{
  outcomes: Map<string, Outcome>;
  exit: { code: number | null };
  signalAt: number;
}> {
  const server = await startServerProcess(env);
  const cert = ca();
  const signedIn = session();
  // The session outlives the process; the Origin names this run's port.
  const current = signedIn
    ? { ...signedIn, origin: server.url }
    : await signUpSession(server, cert);
  setSession(current);
  const outcomes = new Map<string, Outcome>();
  const agents = Array.from(
    { length: WRITERS },
    () => new Agent({ keepAlive: true, maxSockets: 1, ca: cert }),
  );
  let started = 0;
  let allStarted!: () => void;
  const underWay = new Promise<void>((resolve) => (allStarted = resolve));
  const writers = agents.map(async (agent, w) => {
    for (let i = 0; ; i++) {
      const name = `r${n}-w${w}-${i}`;
      const outcome = await createProject(server.url, agent, current, name);
      outcomes.set(name, outcome);
      if (i === 0 && ++started === WRITERS) allStarted();
      // After an answer with `Connection: close` the next write opens a new connection.
      if (!outcome.answered || outcome.status !== 201) return;
    }
  });
  await underWay;
  // A random moment with ~20 writes in flight.
  await new Promise((resolve) => setTimeout(resolve, Math.random() * 40));
  const signalAt = performance.now();
  server.child.kill('SIGTERM');
  await Promise.all(writers);
  const exit = await server.exited;
  for (const agent of agents) agent.destroy();
  return { outcomes, exit, signalAt };
}

/**
 * SIGTERM during 20 concurrent writes, `ROUNDS` times on the same storage.
 * Every request the server received is answered: the only failures allowed
 * are connections it no longer accepts (refused, or reset from the accept
 * queue when the listener closed: never a reused connection). Afterwards
 * every answered write is stored, exactly once, and no unanswered one is.
 */
async function shutdownRounds(
  t: { diagnostic(message: string): void },
  env: Record<string, string>,
  dataDir: string,
): Promise<void> {
  const base = { ...WRITERS_ENV, ...env, DATA_DIR: dataDir };
  let session: Session | null = null;
  const all = new Map<string, Outcome>();
  let inFlightAtSignal = 0;
  let resetAfterSignal = 0;
  for (let n = 0; n < ROUNDS; n++) {
    const { outcomes, exit, signalAt } = await round(
      base,
      () => readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8'),
      () => session,
      (s) => (session = s),
      n,
    );
    assert.deepEqual(exit, { code: 0, signal: null }, `round ${n}: exit`);
    for (const [name, outcome] of outcomes) {
      all.set(name, outcome);
      if (outcome.answered) {
        assert.equal(outcome.status, 201, `round ${n}: ${name}: ${outcome.body}`);
      } else {
        // A request sent on a kept-alive connection after the signal may find it
        // closed (it was idle for a second), like one sent to a closed listener.
        const sentBefore = outcome.sentAt !== null && outcome.sentAt < signalAt;
        assert.ok(
          outcome.code === 'ECONNREFUSED' ||
            (!sentBefore && /ECONNRESET|EPIPE|socket hang up/.test(outcome.code)),
          `round ${n}: ${name} failed with ${outcome.code} on a ${outcome.reusedSocket ? 'reused' : 'new'} connection, sent ${sentBefore ? 'before' : 'after'} the signal`,
        );
        if (outcome.reusedSocket) resetAfterSignal++;
      }
    }
    // The writes in flight at the signal: each writer's last answered one.
    inFlightAtSignal += [...outcomes.values()].filter(
      (o) => o.answered && o.connection === 'close',
    ).length;
  }
  assert.ok(inFlightAtSignal >= ROUNDS, `answers with Connection: close: ${inFlightAtSignal}`);
  t.diagnostic(
    `${ROUNDS} rounds: ${inFlightAtSignal} answers with Connection: close; ${resetAfterSignal} requests sent after the signal on an idle kept-alive connection found it closed`,
  );

  const server = await startServerProcess(base);
  try {
    const stored = await projectNames(server, readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8'), {
      ...session!,
      origin: server.url,
    });
    const counts = new Map<string, number>();
    for (const name of stored) counts.set(name, (counts.get(name) ?? 0) + 1);
    const answered = [...all].filter(([, o]) => o.answered).map(([name]) => name);
    const missing = answered.filter((name) => counts.get(name) !== 1);
    assert.deepEqual(
      missing,
      [],
      `${missing.length} of ${answered.length} answered writes not stored once`,
    );
    const unanswered = [...all].filter(([, o]) => !o.answered).map(([name]) => name);
    const stray = unanswered.filter((name) => counts.has(name));
    assert.deepEqual(stray, [], 'writes stored although the client got no answer');
  } finally {
    await server.stop();
  }
}

describe('SIGTERM with 20 writes in flight: every request received is answered (real process)', () => {
  it(`SQLite, ${ROUNDS} rounds`, onlyOn('sqlite'), async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'coffer-sigterm-'));
    try {
      await shutdownRounds(t, {}, dataDir);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it(`PostgreSQL, ${ROUNDS} rounds`, onlyOn('postgres'), async (t) => {
    if (!realPostgres(t)) return;
    const database = await createTestDb('postgres');
    try {
      await shutdownRounds(t, { DATABASE_URL: database.databaseUrl! }, database.dataDir);
    } finally {
      await database.cleanup();
    }
  });
});
