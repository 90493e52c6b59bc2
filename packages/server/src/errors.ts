/**
 * Domain errors. Services throw these; the HTTP layer maps `code` to a status
 * in exactly one place (`http/errors.ts`). The codes are part of the public API:
 * the SDK and CLI switch on them.
 */
export const ERROR_STATUS = {
  validation_error: 400,
  unauthenticated: 401,
  token_expired: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  already_member: 409,
  already_exists: 409,
  version_conflict: 409,
  request_in_progress: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  last_admin: 422,
  unprocessable: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetail {
  readonly field: string;
  readonly issue: string;
  /** Extra machine-readable facts, e.g. `current_version` on a version conflict. */
  readonly [extra: string]: unknown;
}

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: readonly ErrorDetail[],
  ) {
    // A client error is an answer, not a fault: nobody reads its stack trace, and
    // capturing one cost more than the rest of a refused request (401, 429).
    // Server errors (5xx) keep theirs.
    const stackTraceLimit = Error.stackTraceLimit;
    if (ERROR_STATUS[code] < 500) Error.stackTraceLimit = 0;
    try {
      super(message);
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    this.name = 'AppError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);
export const validation = (field: string, issue: string, message?: string) =>
  new AppError('validation_error', message ?? `Invalid value for ${field}`, [{ field, issue }]);

/**
 * `409 version_conflict` (issue `stale_epoch`) for anything keyed to another
 * epoch than the vault's: a grant, a re-key's starting epoch, a value
 * encrypted under an older key. Clients refresh their grant and retry;
 * `message` says what else to do where retrying cannot help (an old version
 * restored).
 */
export function staleEpoch(field: string, currentEpoch: number, message?: string): AppError {
  message ??=
    currentEpoch === 0
      ? 'The vault of this project is not initialised yet: an admin must grant the project key first'
      : `The vault is at key epoch ${currentEpoch}: fetch your grant again and retry with that epoch`;
  return new AppError('version_conflict', message, [
    { field, issue: 'stale_epoch', current_epoch: currentEpoch },
  ]);
}
