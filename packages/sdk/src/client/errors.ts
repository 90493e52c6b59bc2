/**
 * The API's stable error codes (the README lists them). The server may add codes; the
 * type stays open so a newer server never breaks an older client.
 */
export type ApiErrorCode =
  | 'validation_error'
  | 'unauthenticated'
  | 'token_expired'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'already_member'
  | 'already_exists'
  | 'version_conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'last_admin'
  | 'unprocessable'
  | 'rate_limited'
  | 'internal_error'
  | 'service_unavailable'
  /** The response was not a Form A error body (e.g. an HTML page from a proxy). */
  | 'unexpected_response';

export interface ApiErrorDetail {
  field: string;
  issue: string;
  [extra: string]: unknown;
}

/** A request the server answered with an error status: its Form A `error` body, typed. */
export class CofferApiError extends Error {
  readonly code: ApiErrorCode | (string & {});
  readonly status: number;
  readonly details: readonly ApiErrorDetail[];
  /** The server's request id (also in its logs); quote it when reporting a problem. */
  readonly requestId: string | null;
  /** Seconds the server asked to wait (`Retry-After`), when it said so. */
  readonly retryAfter: number | null;

  constructor(init: {
    code: string;
    status: number;
    message: string;
    details?: readonly ApiErrorDetail[];
    requestId?: string | null;
    retryAfter?: number | null;
  }) {
    super(init.message);
    this.name = 'CofferApiError';
    this.code = init.code;
    this.status = init.status;
    this.details = init.details ?? [];
    this.requestId = init.requestId ?? null;
    this.retryAfter = init.retryAfter ?? null;
  }

  isCode(code: ApiErrorCode): boolean {
    return this.code === code;
  }
}

/** The request never got an HTTP answer: DNS, refused connection, TLS failure, abort. */
export class CofferNetworkError extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'CofferNetworkError';
  }
}

/** `instanceof` fails across duplicated bundles; this checks the shape too. */
export function isCofferApiError(error: unknown, code?: ApiErrorCode): error is CofferApiError {
  if (!(error instanceof Error) || error.name !== 'CofferApiError') return false;
  return code === undefined || (error as CofferApiError).code === code;
}

/** A `409 version_conflict` caused by the vault's epoch moving (a concurrent re-key): refresh the keys and retry. */
export function isStaleEpoch(error: unknown): boolean {
  return (
    error instanceof CofferApiError &&
    error.code === 'version_conflict' &&
    error.details.some((d) => d.issue === 'stale_epoch')
  );
}
