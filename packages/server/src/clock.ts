/** The server's notion of "now", injectable so tests can move time (token expiry) without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
