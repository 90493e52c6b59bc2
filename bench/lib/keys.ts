import { randomBytes } from 'node:crypto';

/**
 * New `Idempotency-Key`s for a load generator, one per request, shaped as the
 * SDK makes them (`newIdempotencyKey`: 12 hex digits of Unix milliseconds, a
 * dot, 32 base64url characters), so the server handles them as it handles the
 * SDK's. The SDK draws 24 random bytes per key (about 5 µs here); a load
 * generator that did so per request would send its keyed requests later than
 * its plain ones, and with 50 connections the server would gather smaller
 * group commits from them (docs/performance.md). So: one random stem per
 * generator, then a counter.
 */
export function idempotencyKeys(): () => string {
  const stem = randomBytes(18).toString('base64url'); // 24 characters
  let n = 0;
  return () =>
    `${Date.now().toString(16).padStart(12, '0')}.${stem}${(n++).toString(36).padStart(8, '0')}`;
}
