import assert from 'node:assert/strict';
import type { TestApp, TestResponse } from './app.js';
import type { TestUser } from './users.js';

// Reading and making the API's requests in tests: who calls, what status came
// back, and the `data` or Form A `error` of the body.

/** Headers of a bearer-authenticated request (API key or CI token). */
export type BearerHeaders = { authorization: string };
export type Caller = TestUser | BearerHeaders;

export const headersOf = (caller: Caller | null): Record<string, string> =>
  caller === null
    ? {}
    : 'headers' in caller
      ? caller.headers
      : { authorization: caller.authorization };

/** A request as `caller` (a signed-in test user, a bearer, or `null`: anonymous). */
export function as(
  t: TestApp,
  caller: Caller | null,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  body?: unknown,
): Promise<TestResponse> {
  return t.request({
    method,
    url,
    headers: headersOf(caller),
    ...(body !== undefined ? { body: body as object } : {}),
  });
}

export function expectStatus(res: TestResponse, status: number): void {
  assert.equal(res.statusCode, status, `expected ${status}, got ${res.statusCode}: ${res.body}`);
}

/**
 * The `data` of a response body, typed loosely for assertions unless `T` says.
 * With `status`, asserts the response has it first.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function dataOf<T = any>(res: TestResponse, status?: number): T {
  if (status !== undefined) assert.equal(res.statusCode, status, res.body);
  return (res.data as { data: T }).data;
}

/** A Form A error body's `error`. */
export interface ApiError {
  code: string;
  message: string;
  request_id?: string;
  /**
   * `{ field, issue, … }` each; absent from most errors, typed as present and
   * loose so assertions can read it directly.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  details: any[];
}

/** The Form A `error` of a response body. With `status` and `code`, asserts both first. */
export function errorOf(res: TestResponse, status?: number, code?: string): ApiError {
  if (status !== undefined) assert.equal(res.statusCode, status, res.body);
  const error = (res.data as { error: ApiError }).error;
  if (code !== undefined) assert.equal(error.code, code, res.body);
  return error;
}

/** Waits (without asserting on time) until `check` returns a value, or fails after `ms`. */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  what: string,
  ms = 10_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
