import assert from 'node:assert/strict';
import { CofferApiError } from '../../src/index.js';

/** Asserts that `promise` rejects with the API's error of this status and code. */
export async function rejectsWith(
  promise: Promise<unknown>,
  status: number,
  code: string,
): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof CofferApiError, String(error));
    assert.equal(error.status, status, error.message);
    assert.equal(error.code, code);
    return true;
  });
}
