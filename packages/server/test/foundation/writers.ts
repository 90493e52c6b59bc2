import assert from 'node:assert/strict';
import { request, type Agent } from 'node:https';
import type { ClientRequest } from 'node:http';
import { prepareSignUp, ready } from '@coffer/sdk';
import { TEST_KDF_COST } from '../support/users.js';
import { send, type ServerProcess } from './server-process.js';

/** Settings for servers that many writers hit at once: budgets out of the way, cheap KDF. */
export const WRITERS_ENV = {
  KDF_MIN_OPS: '1',
  KDF_MIN_MEM_KIB: '8192',
  RATE_LIMIT_SESSION: '1000000',
  RATE_LIMIT_AUTH: '100000',
  LOG_LEVEL: 'warn',
};

export interface Session {
  cookie: string;
  origin: string;
}

/** Signs a new user up over HTTPS and logs in: the headers of a cookie session. */
export async function signUpSession(server: ServerProcess, ca: string): Promise<Session> {
  await ready();
  const email = `writer-${process.pid}-${Date.now()}@example.test`;
  const { body } = prepareSignUp({
    email,
    name: 'Writer',
    password: 'pw-writer',
    kdfCost: TEST_KDF_COST,
  });
  const signup = await send(`${server.url}/v1/auth/signup`, { method: 'POST', ca, body });
  assert.equal(signup.status, 201, signup.body);
  const login = await send(`${server.url}/v1/auth/login`, {
    method: 'POST',
    ca,
    body: { email, auth_key: body.auth_key },
  });
  assert.equal(login.status, 200, login.body);
  return { cookie: String(login.headers['set-cookie']).split(';')[0]!, origin: server.url };
}

/** What became of one write as the client saw it. */
export type Outcome =
  | {
      answered: true;
      status: number;
      body: string;
      connection: string | undefined;
      /** `Idempotent-Replayed: true`: answered from an earlier attempt's write. */
      replayed: boolean;
    }
  | {
      answered: false;
      code: string;
      reusedSocket: boolean;
      /** When the request's last byte was handed to the kernel (`performance.now()`), if it was. */
      sentAt: number | null;
    };

/** `POST /v1/projects` on the given (kept-alive) agent. */
export function createProject(
  url: string,
  agent: Agent,
  session: Session,
  name: string,
  idempotencyKey?: string,
): Promise<Outcome> {
  const body = JSON.stringify({ name });
  return new Promise((resolve) => {
    let req: ClientRequest;
    let sentAt: number | null = null;
    // eslint-disable-next-line prefer-const
    req = request(
      `${url}/v1/projects`,
      {
        method: 'POST',
        agent,
        headers: {
          ...session,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () =>
          resolve({
            answered: true,
            status: res.statusCode ?? 0,
            body: text,
            connection: res.headers.connection,
            replayed: res.headers['idempotent-replayed'] === 'true',
          }),
        );
        res.on('error', (err: NodeJS.ErrnoException) =>
          resolve({
            answered: false,
            code: err.code ?? err.message,
            reusedSocket: req.reusedSocket,
            sentAt,
          }),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({
        answered: false,
        code: err.code ?? err.message,
        reusedSocket: req.reusedSocket,
        sentAt,
      }),
    );
    req.end(body, () => (sentAt = performance.now()));
  });
}

/** Every project name the session's user can see (all pages). */
export async function projectNames(
  server: ServerProcess,
  ca: string,
  session: Session,
): Promise<string[]> {
  const names: string[] = [];
  for (let page = 1; ; page++) {
    const res = await send(`${server.url}/v1/projects?per_page=100&page=${page}`, {
      ca,
      headers: { ...session },
    });
    assert.equal(res.status, 200, res.body);
    const { data, pagination } = res.json as {
      data: { name: string }[];
      pagination: { total_pages: number };
    };
    names.push(...data.map((p) => p.name));
    if (page >= pagination.total_pages) return names;
  }
}
