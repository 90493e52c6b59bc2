import assert from 'node:assert/strict';
import { CofferApiError, isVaultError, type VaultErrorCode } from '../../src/index.js';

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

/** Asserts that `promise` rejects with the API's error of this status and one detail of this issue. */
export async function rejectsWithIssue(
  promise: Promise<unknown>,
  status: number,
  issue: string,
): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof CofferApiError, String(error));
    assert.equal(error.status, status, error.message);
    assert.ok(
      error.details.some((d) => d.issue === issue),
      `expected ${issue}: ${JSON.stringify(error.details)}`,
    );
    return true;
  });
}

/** Asserts that `promise` rejects with the vault's refusal `code`, its message naming `names` if given. */
export async function refuses(
  promise: Promise<unknown>,
  code: VaultErrorCode,
  names?: string,
): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(isVaultError(error, code), `expected ${code}, got ${String(error)}`);
    if (names) assert.ok((error as Error).message.includes(names), (error as Error).message);
    return true;
  });
}
