import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp, type App, type AppDeps } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { Clock } from '../../src/clock.js';
import type { DialectName } from '../../src/db/database.js';
import { createTestDb, type TestDb } from './db.js';

/** A clock tests can move forward, so expiry is tested without sleeping. */
export class TestClock implements Clock {
  private current: number;
  constructor(start = Date.now()) {
    this.current = start;
  }
  now(): Date {
    return new Date(this.current);
  }
  advance(ms: number): void {
    this.current += ms;
  }
}

export interface TestApp {
  app: App;
  config: Config;
  clock: TestClock;
  testDb: TestDb;
  /** `app.inject` with JSON bodies and a parsed `json` on the response. */
  request(options: InjectOptions & { body?: unknown }): Promise<TestResponse>;
  close(): Promise<void>;
}

export type TestResponse = LightMyRequestResponse & { body: string; data: unknown };

/** Generous budgets so tests that are not about rate limits never hit them. */
const TEST_ENV = {
  LOG_LEVEL: 'silent',
  RATE_LIMIT_SESSION: '100000',
  RATE_LIMIT_API_KEY: '100000',
  RATE_LIMIT_CI_TOKEN: '100000',
  RATE_LIMIT_ANONYMOUS: '100000',
  RATE_LIMIT_AUTH: '100000',
  // Cheap Argon2id for test users (support/users.ts); the production floor is tested explicitly.
  KDF_MIN_OPS: '1',
  KDF_MIN_MEM_KIB: '8192',
};

/**
 * The real app on a real, fresh database of the given dialect. `env` sets
 * configuration exactly as an operator would (validated by `loadConfig`).
 */
export async function startTestApp(
  dialect: DialectName,
  options: {
    env?: Record<string, string>;
    deps?: Partial<AppDeps>;
    clock?: TestClock;
    /**
     * Extra `/v1` routes registered the way a domain registers its own, after
     * `buildApp` and before `ready`: proves a convention holds for routes the
     * foundation never saw.
     */
    routes?: (v1: App) => Promise<void>;
    /** Serve this existing database (its owner cleans it up) instead of a fresh one. */
    testDb?: TestDb;
  } = {},
): Promise<TestApp> {
  const testDb = options.testDb ?? (await createTestDb(dialect));
  const config = loadConfig({ ...TEST_ENV, DATA_DIR: testDb.dataDir, ...options.env });
  const clock = options.clock ?? new TestClock();
  const app = await buildApp({ config, db: testDb.db, clock, ...options.deps });
  if (options.routes) await app.register(options.routes, { prefix: '/v1' });
  await app.ready();
  return {
    app,
    config,
    clock,
    testDb,
    async request(opts) {
      const { body, ...rest } = opts;
      const headers = { ...(rest.headers ?? {}) } as Record<string, string>;
      let payload = rest.payload;
      if (body !== undefined) {
        payload = JSON.stringify(body);
        headers['content-type'] ??= 'application/json';
      }
      const res = (await app.inject({
        ...rest,
        headers,
        ...(payload !== undefined ? { payload } : {}),
      })) as TestResponse;
      let data: unknown = undefined;
      if (res.body && String(res.headers['content-type'] ?? '').includes('json'))
        data = JSON.parse(res.body);
      res.data = data;
      return res;
    },
    async close() {
      await app.close();
      if (!options.testDb) await testDb.cleanup();
    },
  };
}
