/** The server's notion of "now", injectable so tests can move time (token expiry) without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** ISO 8601 UTC with millisecond precision and `Z`, the API's timestamp format. */
export const iso = (d: Date): string => d.toISOString();
