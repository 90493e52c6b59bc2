import { CofferApiError, CofferNetworkError, type ApiErrorDetail } from './errors.js';

export const SESSION_COOKIE = 'coffer_session';

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** How a client authenticates: a `cek_…`/`ci_…` bearer (never with its key part), or a session. */
export type Credential =
  | { bearer: string }
  /** A session token from an earlier login (Node only; browsers keep the cookie themselves). */
  | { session: string };

export interface RetryOptions {
  /** Attempts in total, the first included. Default 3. */
  maxAttempts?: number;
  /** The most the client waits across all retries of one request. Default 60 s. */
  maxTotalWaitMs?: number;
}

export interface CofferClientOptions {
  /** The server's base URL, e.g. `https://coffer.example.com`. `http://` only to localhost. */
  baseUrl: string;
  /** A `fetch` implementation (the CLI passes its own over `node:https`, with its CA). Default: global fetch. */
  fetch?: typeof globalThis.fetch;
  credential?: Credential;
  retry?: RetryOptions;
  /** How the client waits before a retry; injectable so tests control time. */
  sleep?: (ms: number) => Promise<void>;
  /** Sent as `User-Agent` where the platform allows (Node); shown in the session list. */
  userAgent?: string;
}

export interface Pagination {
  page: number;
  per_page: number;
  total: number;
  total_pages: number;
}

export interface Page<T> {
  data: T[];
  pagination: Pagination;
}

/**
 * Every item of a list endpoint: asks for page 1, 2, … (`perPage` items each,
 * the API's largest page by default) until the last page, or an empty one (a
 * list that shrank while it was read).
 */
export async function allPages<T>(
  fetchPage: (page: number, perPage: number) => Promise<Page<T>>,
  perPage = 100,
): Promise<T[]> {
  const out: T[] = [];
  for (let page = 1; ; page++) {
    const { data, pagination } = await fetchPage(page, perPage);
    out.push(...data);
    if (page >= pagination.total_pages || data.length === 0) return out;
  }
}

export type QueryValue = string | number | boolean | undefined | null;

export interface RequestOptions {
  body?: unknown;
  query?: Readonly<Record<string, QueryValue>>;
  headers?: Readonly<Record<string, string>>;
  signal?: AbortSignal;
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);
const UNSAFE = new Set<HttpMethod>(['POST', 'PUT', 'PATCH', 'DELETE']);
const IDEMPOTENT = new Set<HttpMethod>(['GET', 'HEAD', 'PUT', 'DELETE']);
const SAFE = new Set<HttpMethod>(['GET', 'HEAD']);

/** Encodes every interpolated value as one path segment: apiPath`/v1/projects/${id}`. */
export function apiPath(strings: TemplateStringsArray, ...values: (string | number)[]): string {
  return strings.reduce(
    (out, part, i) => out + part + (i < values.length ? encodeURIComponent(String(values[i])) : ''),
    '',
  );
}

/** Throws unless the URL is https, or http to this machine. */
export function checkBaseUrl(baseUrl: string): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError(`Not a valid server URL: ${baseUrl}`);
  }
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && LOCAL_HOSTS.has(url.hostname)) return url;
  throw new TypeError(
    url.protocol === 'http:'
      ? `Refusing plain http:// to ${url.hostname}: credentials and ciphertext must travel over https (http is allowed only to localhost)`
      : `Unsupported protocol ${url.protocol} in server URL`,
  );
}

const isBrowser = (): boolean =>
  typeof (globalThis as { document?: unknown }).document !== 'undefined';

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The header that makes a write safe to repeat (docs/api-reliability.md). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/**
 * A new idempotency key: the time (12 hex digits of Unix milliseconds), a dot
 * and 32 base64url characters from 24 random bytes. The server stores keys
 * that start with their time in time order (docs/api-reliability.md).
 */
export function newIdempotencyKey(now: number = Date.now()): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(24));
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  const random = btoa(binary).replace(/\+/g, '-').replace(/\//g, '_');
  return `${Math.floor(now).toString(16).padStart(12, '0')}.${random}`;
}

/**
 * Writes the server replays under their key: those made with a credential.
 * Sign-up, log-in and the other `/v1/auth/` requests carry none (the server
 * ignores a key there), so they are never repeated after a network failure.
 */
const keyed = (method: HttpMethod, path: string) =>
  UNSAFE.has(method) && !path.startsWith('/v1/auth/');

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
function retryAfterMs(header: string | null, nowMs: number): number | null {
  if (header === null) return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, date - nowMs);
}

/**
 * The transport every domain of the SDK shares: base URL, credentials, the
 * Form A envelope, typed errors and the 429 retry. Domain files (auth.ts,
 * projects.ts, …) are functions that take a client and call `request` or
 * `requestPage`.
 */
export class CofferClient {
  readonly baseUrl: string;
  private readonly origin: string;
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly retry: Required<RetryOptions>;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly userAgent: string | undefined;
  private readonly browser = isBrowser();
  private bearer: string | null = null;
  private sessionToken: string | null = null;

  constructor(options: CofferClientOptions) {
    const url = checkBaseUrl(options.baseUrl);
    this.baseUrl = url.toString().replace(/\/+$/, '');
    this.origin = url.origin;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.retry = {
      maxAttempts: Math.max(1, options.retry?.maxAttempts ?? 3),
      maxTotalWaitMs: Math.max(0, options.retry?.maxTotalWaitMs ?? 60_000),
    };
    this.sleep = options.sleep ?? defaultSleep;
    this.userAgent = options.userAgent;
    if (options.credential && 'bearer' in options.credential)
      this.setBearer(options.credential.bearer);
    else if (options.credential) this.setSession(options.credential.session);
  }

  /** Authenticates with a bearer token from now on. Only the part before "." is ever accepted. */
  setBearer(bearer: string | null): void {
    if (bearer !== null && (bearer.includes('.') || !/^\S+$/.test(bearer))) {
      throw new TypeError(
        'Pass only the bearer part of a credential (before the "."); the key part must never be sent',
      );
    }
    this.bearer = bearer;
    if (bearer !== null) this.sessionToken = null;
  }

  /** The session token this client holds (Node), e.g. to store it between CLI runs. */
  get session(): string | null {
    return this.sessionToken;
  }

  setSession(token: string | null): void {
    this.sessionToken = token;
    if (token !== null) this.bearer = null;
  }

  /** Sends a request and returns the `data` of the response (undefined for 204). */
  async request<T>(method: HttpMethod, path: string, options: RequestOptions = {}): Promise<T> {
    const body = await this.send(method, path, options);
    return (body as { data: T } | undefined)?.data as T;
  }

  /** Sends a request to a list endpoint and returns `{ data, pagination }`. */
  async requestPage<T>(
    method: HttpMethod,
    path: string,
    options: RequestOptions = {},
  ): Promise<Page<T>> {
    const body = (await this.send(method, path, options)) as Page<T>;
    return { data: body.data, pagination: body.pagination };
  }

  /**
   * A conditional GET for callers that keep something derived from a
   * resource: with `known` (an ETag seen before), `{ changed: false }` when the
   * server answers `304`; else the resource's current ETag (null when it sends
   * none). The body is not returned. Errors throw as `request` does.
   */
  async entityTag(
    path: string,
    options: RequestOptions & { known?: string } = {},
  ): Promise<{ changed: boolean; etag: string | null }> {
    const headers = this.headers('GET', options);
    if (options.known) headers['if-none-match'] = options.known;
    let response: Response;
    try {
      response = await this.fetchImpl(this.url(path, options.query), {
        method: 'GET',
        headers,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(this.browser ? { credentials: 'include' as const } : {}),
      });
    } catch (cause) {
      throw new CofferNetworkError(
        `GET ${this.baseUrl}${path} failed: ${(cause as Error)?.message ?? String(cause)}`,
        cause,
      );
    }
    if (response.status === 304) return { changed: false, etag: options.known ?? null };
    if (!response.ok) throw errorFromResponse(response, await jsonBody(response));
    await response.body?.cancel().catch(() => undefined);
    return { changed: true, etag: response.headers.get('etag') };
  }

  /**
   * Opens a streaming response (Server-Sent Events): resolves once the status
   * and headers arrived, with the response whose body the caller reads. An
   * error status throws as `request` does (no retry: the caller reconnects).
   */
  async openStream(path: string, options: RequestOptions = {}): Promise<Response> {
    const init: RequestInit = {
      method: 'GET',
      headers: { ...this.headers('GET', options), accept: 'text/event-stream' },
      ...(options.signal ? { signal: options.signal } : {}),
      ...(this.browser ? { credentials: 'include' as const } : {}),
    };
    let response: Response;
    try {
      response = await this.fetchImpl(this.url(path, options.query), init);
    } catch (cause) {
      throw new CofferNetworkError(
        `GET ${this.baseUrl}${path} failed: ${(cause as Error)?.message ?? String(cause)}`,
        cause,
      );
    }
    if (response.ok) return response;
    throw errorFromResponse(response, await jsonBody(response));
  }

  private url(path: string, query: RequestOptions['query']): string {
    if (!path.startsWith('/')) throw new TypeError(`API paths start with "/": ${path}`);
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null) params.set(name, String(value));
    }
    const search = params.toString();
    return `${this.baseUrl}${path}${search ? `?${search}` : ''}`;
  }

  private headers(method: HttpMethod, options: RequestOptions): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (this.userAgent && !this.browser) headers['user-agent'] = this.userAgent;
    if (this.bearer) headers.authorization = `Bearer ${this.bearer}`;
    else if (this.sessionToken && !this.browser) {
      headers.cookie = `${SESSION_COOKIE}=${this.sessionToken}`;
      // What a browser would send; the server refuses cookie-authenticated changes without it.
      if (UNSAFE.has(method)) headers.origin = this.origin;
    }
    return headers;
  }

  /** Keeps the session cookie the server sets or clears (Node; browsers do it themselves). */
  private captureSession(response: Response): void {
    if (this.browser) return;
    const headers = response.headers as Headers & { getSetCookie?: () => string[] };
    const cookies =
      headers.getSetCookie?.() ??
      (headers.get('set-cookie') ? [headers.get('set-cookie') as string] : []);
    for (const cookie of cookies) {
      const [pair = '', ...attributes] = cookie.split(';');
      const eq = pair.indexOf('=');
      if (eq < 0 || pair.slice(0, eq).trim() !== SESSION_COOKIE) continue;
      const value = pair.slice(eq + 1).trim();
      const cleared = attributes.some((a) => /^\s*max-age\s*=\s*0\s*$/i.test(a));
      this.sessionToken = value === '' || cleared ? null : value;
      if (this.sessionToken) this.bearer = null;
    }
  }

  private async send(method: HttpMethod, path: string, options: RequestOptions): Promise<unknown> {
    const url = this.url(path, options.query);
    const headers = this.headers(method, options);
    // Every write carries a key, the same on each retry, so the server executes it
    // at most once however often it is sent (a caller's own key wins).
    const idempotent = keyed(method, path);
    if (idempotent) headers[IDEMPOTENCY_KEY_HEADER] ??= newIdempotencyKey();
    const init: RequestInit = {
      method,
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(this.browser ? { credentials: 'include' as const } : {}),
    };

    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      const canRetry = (delay: number) =>
        attempt < this.retry.maxAttempts && waited + delay <= this.retry.maxTotalWaitMs;
      let response: Response;
      try {
        response = await this.fetchImpl(url, init);
      } catch (cause) {
        // The server may have acted on a write whose answer was lost: repeated
        // only under its idempotency key, which answers it without acting again.
        const delay = 250 * 2 ** (attempt - 1);
        if ((SAFE.has(method) || idempotent) && !options.signal?.aborted && canRetry(delay)) {
          await this.sleep(delay);
          waited += delay;
          continue;
        }
        throw new CofferNetworkError(
          `${method} ${this.baseUrl}${path} failed: ${(cause as Error)?.message ?? String(cause)}`,
          cause,
        );
      }

      // 429 means the server refused before doing anything, so any method may be
      // repeated; 503 (shutting down, database away) only for idempotent ones or
      // under a key; 409 request_in_progress: the same key is being handled.
      // A 409's body is read here, once (the CLI's transport answers Responses
      // that cannot be cloned), and kept for the error when it is not retried.
      const conflict = response.status === 409 && idempotent;
      const body = conflict ? await jsonBody(response) : undefined;
      if (
        response.status === 429 ||
        (response.status === 503 && (IDEMPOTENT.has(method) || idempotent)) ||
        (conflict && errorCodeOf(body) === 'request_in_progress')
      ) {
        const delay =
          retryAfterMs(response.headers.get('retry-after'), Date.now()) ??
          1000 * 2 ** (attempt - 1);
        if (canRetry(delay)) {
          await response.body?.cancel().catch(() => undefined);
          await this.sleep(delay);
          waited += delay;
          continue;
        }
      }

      this.captureSession(response);
      if (response.status === 204 || method === 'HEAD') {
        await response.body?.cancel().catch(() => undefined);
        if (response.ok) return undefined;
      }
      const parsed = conflict ? body : await jsonBody(response);
      if (response.ok) return parsed;
      throw errorFromResponse(response, parsed);
    }
  }
}

/** The response's body as JSON; undefined when empty or not JSON. */
async function jsonBody(response: Response): Promise<unknown> {
  const text = await response.text().catch(() => '');
  try {
    return text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return undefined;
  }
}

/** The `error.code` of a Form A body, if it is one. */
function errorCodeOf(body: unknown): unknown {
  return (body as { error?: { code?: unknown } } | undefined)?.error?.code;
}

function errorFromResponse(response: Response, body: unknown): CofferApiError {
  const error = (body as { error?: Record<string, unknown> } | undefined)?.error;
  const retryAfter = response.headers.get('retry-after');
  const requestId =
    (typeof error?.request_id === 'string' ? error.request_id : null) ??
    response.headers.get('x-request-id');
  if (error && typeof error.code === 'string' && typeof error.message === 'string') {
    return new CofferApiError({
      code: error.code,
      status: response.status,
      message: error.message,
      details: Array.isArray(error.details) ? (error.details as ApiErrorDetail[]) : [],
      requestId,
      retryAfter: retryAfter !== null && /^\d+$/.test(retryAfter) ? Number(retryAfter) : null,
    });
  }
  return new CofferApiError({
    code: 'unexpected_response',
    status: response.status,
    message: `The server answered ${response.status} ${response.statusText} without an API error body`,
    requestId,
  });
}
