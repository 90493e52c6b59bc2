import { activeClaim } from './db/write-claims.js';

/** The server's notion of "now", injectable so tests can move time (token expiry) without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * `clock`, except while a request with an idempotency key runs: then the
 * instant that request is handled at (its first attempt's, for a repeat), so
 * that a repeat's answer carries the same times (db/write-claims.ts).
 */
export function claimedClock(clock: Clock): Clock {
  return { now: () => activeClaim()?.at ?? clock.now() };
}
