import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Server configuration, parsed once at boot from environment variables and
 * command-line flags (`--port=8443` overrides `PORT`). Every value is
 * validated here; a bad value stops the server with a message naming it.
 * Secrets (database URL, SMTP URL) have no defaults.
 */
export interface Config {
  readonly host: string;
  /** HTTPS port (or plain HTTP when `tls.mode` is `off`, only behind a TLS-terminating proxy). */
  readonly port: number;
  /** Plain-HTTP port that redirects to HTTPS; `null` disables the redirect listener. */
  readonly httpRedirectPort: number | null;
  /** The public base URL (`https://host:port`) used in redirects and e-mail links. */
  readonly publicUrl: string;
  readonly dataDir: string;
  readonly databaseUrl: string | null;
  /** Connections this instance keeps to PostgreSQL (unused on SQLite). */
  readonly databasePoolSize: number;
  readonly redisUrl: string | null;
  /** Prepended to every Redis key and channel, so several deployments can share one Redis. */
  readonly redisKeyPrefix: string;
  readonly smtpUrl: string | null;
  readonly mailFrom: string;
  readonly tls: TlsConfig;
  readonly trustProxy: boolean;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  readonly bodyLimitBytes: number;
  readonly rekeyBodyLimitBytes: number;
  readonly signupPolicy: 'open' | 'invite';
  readonly invitationTtlDays: number;
  /** The weakest Argon2id parameters sign-up and password change accept (OWASP floor by default). */
  readonly kdfMinimum: { readonly opsLimit: number; readonly memLimitKib: number };
  readonly rateLimits: RateLimitConfig;
  readonly shutdownGraceMs: number;
  /** How long a new connection may take from accept to its first request's headers (TLS handshake included). */
  readonly connectionIdleTimeoutMs: number;
  /** Open connections this process accepts at once; further ones are refused at accept. */
  readonly maxConnections: number;
  /** How often the e-mail outbox worker looks for due messages (it is also woken after each enqueue). */
  readonly outboxPollMs: number;
  readonly webhooks: WebhookConfig;
  /** The change feed's streams (`GET /v1/projects/{id}/events`). */
  readonly events: EventsConfig;
  readonly dashboard: DashboardConfig;
  readonly metrics: MetricsConfig;
}

/** Outbound webhook deliveries (docs/webhooks.md). */
export interface WebhookConfig {
  /** `WEBHOOK_ALLOW_PRIVATE`: receivers on loopback, private, link-local and CGNAT addresses. */
  readonly allowPrivate: boolean;
  /** `WEBHOOK_ALLOW_HTTP`: `http://` receivers (HTTPS otherwise). */
  readonly allowHttp: boolean;
  /** `WEBHOOK_SECRET_KEY`: 32 bytes that encrypt the signing secrets at rest; null: stored as is. */
  readonly secretKey: Buffer | null;
  /** `WEBHOOK_RETRY_BASE_MS`: the first retry's delay; each later one doubles it (with jitter). */
  readonly retryBaseMs: number;
  /** `WEBHOOK_RETRY_WINDOW_SECONDS`: how long a delivery is retried, and how long a webhook may fail before it is disabled. */
  readonly retryWindowSeconds: number;
  /** `WEBHOOK_TIMEOUT_MS`: one attempt, from connecting to the end of the response. */
  readonly timeoutMs: number;
}

/** 32 random bytes, base64 (`openssl rand -base64 32`). */
function webhookSecretKey(raw: string | undefined): Buffer | null {
  if (raw === undefined) return null;
  const key = Buffer.from(raw, 'base64');
  if (key.length !== 32 || key.toString('base64') !== raw) {
    throw new ConfigError(
      'WEBHOOK_SECRET_KEY',
      'must be 32 bytes in base64 (e.g. openssl rand -base64 32)',
    );
  }
  return key;
}

/** Prometheus metrics: off unless a port or a token is set. */
interface MetricsConfig {
  /** `METRICS_PORT`: a plain-HTTP listener of their own; null: none. */
  readonly port: number | null;
  /** `METRICS_HOST`: where that listener binds (loopback unless told otherwise). */
  readonly host: string;
  /** `METRICS_TOKEN`: also served on the public port to `Authorization: Bearer <token>`. */
  readonly token: string | null;
}

/** Limits and rhythms of the change feed's event streams (docs/live-secrets.md). */
interface EventsConfig {
  /** `EVENTS_MAX_STREAMS_PER_CREDENTIAL`: open streams one session, API key or CI token may hold on this instance. */
  readonly maxStreamsPerCredential: number;
  /** `EVENTS_MAX_STREAMS`: open streams this instance holds in all. */
  readonly maxStreams: number;
  /** `EVENTS_HEARTBEAT_MS`: a comment line this often keeps proxies from closing an idle stream. */
  readonly heartbeatMs: number;
  /** `EVENTS_POLL_MS`: how often a watched project's log is read without a notification (a safety net). */
  readonly pollMs: number;
  /** `EVENTS_RETRY_MS`: the reconnect delay a stream tells its client (`retry:`). */
  readonly retryMs: number;
}

/** The web dashboard's built files, served on the API's origin. */
interface DashboardConfig {
  readonly enabled: boolean;
  /** Absolute path of the built dashboard (the directory holding `index.html`). */
  readonly dir: string;
}

type TlsConfig =
  | { readonly mode: 'files'; readonly certFile: string; readonly keyFile: string }
  | { readonly mode: 'self-signed' }
  | { readonly mode: 'off' };

/** Requests per minute for each budget. */
interface RateLimitConfig {
  readonly session: number;
  readonly apiKey: number;
  readonly ciToken: number;
  /** Per client IP, for requests without a credential. */
  readonly anonymous: number;
  /** Per client IP, for `/v1/auth/*`. */
  readonly auth: number;
  readonly windowSeconds: number;
}

/**
 * The web package's build, found from this module: `packages/server/dist/main.js`
 * once bundled, `packages/server/src/config.ts` from source; both are two levels
 * below `packages/`.
 */
const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL('../../web/dist', import.meta.url));

/** Connections a server instance keeps to PostgreSQL unless `DATABASE_POOL_SIZE` says otherwise. */
export const DEFAULT_DATABASE_POOL_SIZE = 10;
/** The largest rate limit a credential or client can be given, per minute. */
const RATE_LIMIT_MAX = 1_000_000_000;

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
  }
}

type Source = Readonly<Record<string, string | undefined>>;

/** Turns `--some-flag=value` / `--some-flag value` into `SOME_FLAG=value`. */
function flagsToEnv(argv: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--'))
      throw new ConfigError(arg, 'unexpected argument (flags look like --port=8443)');
    const eq = arg.indexOf('=');
    let name: string;
    let value: string;
    if (eq > 0) {
      name = arg.slice(2, eq);
      value = arg.slice(eq + 1);
    } else {
      name = arg.slice(2);
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) value = 'true';
      else {
        value = next;
        i++;
      }
    }
    out[name.toUpperCase().replaceAll('-', '_')] = value;
  }
  return out;
}

/** A bearer token for `/metrics`: long enough not to be guessed, and sendable in a header. */
function metricsToken(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  if (raw.length < 16 || !/^[\x21-\x7e]+$/.test(raw)) {
    throw new ConfigError(
      'METRICS_TOKEN',
      'must be at least 16 printable characters without spaces (e.g. openssl rand -hex 32)',
    );
  }
  return raw;
}

export function loadConfig(env: Source, argv: readonly string[] = []): Config {
  const flags = flagsToEnv(argv);
  const src: Source = { ...env, ...flags };
  // Every name looked up below; a flag that is none of them is a typo, not a setting.
  const known = new Set<string>();
  const read = (name: string) => {
    known.add(name);
    const v = src[name];
    return v === undefined || v === '' ? undefined : v;
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got "${raw}"`);
    const n = Number(raw);
    if (n < min || n > max)
      throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
    return n;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    throw new ConfigError(name, `expected true or false, got "${raw}"`);
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(raw)) {
      throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
    }
    return raw as T;
  };
  const url = (name: string, protocols: readonly string[]): string | null => {
    const raw = read(name);
    if (raw === undefined) return null;
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw new ConfigError(name, 'is not a valid URL');
    }
    if (!protocols.includes(parsed.protocol)) {
      throw new ConfigError(name, `must use ${protocols.join(' or ')} (got ${parsed.protocol})`);
    }
    return raw;
  };

  const host = read('HOST') ?? '0.0.0.0';
  const port = int('PORT', 8443, 0, 65535);
  const redirectRaw = read('HTTP_PORT');
  const httpRedirectPort = redirectRaw === 'off' ? null : int('HTTP_PORT', 8080, 0, 65535);

  const certFile = read('TLS_CERT_FILE');
  const keyFile = read('TLS_KEY_FILE');
  let tls: TlsConfig;
  const tlsMode = oneOf('TLS', ['auto', 'off'], 'auto');
  if (tlsMode === 'off') {
    tls = { mode: 'off' };
  } else if (certFile || keyFile) {
    if (!certFile) throw new ConfigError('TLS_CERT_FILE', 'is required when TLS_KEY_FILE is set');
    if (!keyFile) throw new ConfigError('TLS_KEY_FILE', 'is required when TLS_CERT_FILE is set');
    for (const [name, file] of [
      ['TLS_CERT_FILE', certFile],
      ['TLS_KEY_FILE', keyFile],
    ] as const) {
      if (!existsSync(file)) throw new ConfigError(name, `file not found: ${resolve(file)}`);
    }
    tls = { mode: 'files', certFile: resolve(certFile), keyFile: resolve(keyFile) };
  } else {
    tls = { mode: 'self-signed' };
  }
  const trustProxy = bool('TRUST_PROXY', false);
  if (tls.mode === 'off' && !trustProxy) {
    throw new ConfigError(
      'TLS',
      'off is only allowed with TRUST_PROXY=true (behind a TLS-terminating proxy)',
    );
  }

  const publicHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  const publicUrl = (url('PUBLIC_URL', ['https:']) ?? `https://${publicHost}:${port}`).replace(
    /\/+$/,
    '',
  );

  const config: Config = {
    host,
    port,
    httpRedirectPort: tls.mode === 'off' ? null : httpRedirectPort,
    publicUrl,
    dataDir: resolve(read('DATA_DIR') ?? './data'),
    databaseUrl: url('DATABASE_URL', ['postgres:', 'postgresql:']),
    databasePoolSize: int('DATABASE_POOL_SIZE', DEFAULT_DATABASE_POOL_SIZE, 1, 1000),
    redisUrl: url('REDIS_URL', ['redis:', 'rediss:']),
    redisKeyPrefix: read('REDIS_KEY_PREFIX') ?? 'coffer:',
    smtpUrl: url('SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: read('MAIL_FROM') ?? 'Coffer <coffer@localhost>',
    tls,
    trustProxy,
    logLevel: oneOf(
      'LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      'info',
    ),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    rekeyBodyLimitBytes: int(
      'REKEY_BODY_LIMIT_BYTES',
      256 * 1024 * 1024,
      1024,
      2 * 1024 * 1024 * 1024,
    ),
    signupPolicy: oneOf('SIGNUP_POLICY', ['open', 'invite'], 'open'),
    invitationTtlDays: int('INVITATION_TTL_DAYS', 7, 1, 365),
    kdfMinimum: {
      opsLimit: int('KDF_MIN_OPS', 2, 1, 16),
      memLimitKib: int('KDF_MIN_MEM_KIB', 19456, 8, 1048576),
    },
    rateLimits: {
      // Up to a billion a minute: a limit no instance reaches, for a credential
      // that must never be limited (the benchmark reads 40,000 times a second).
      session: int('RATE_LIMIT_SESSION', 100, 1, RATE_LIMIT_MAX),
      apiKey: int('RATE_LIMIT_API_KEY', 500, 1, RATE_LIMIT_MAX),
      ciToken: int('RATE_LIMIT_CI_TOKEN', 200, 1, RATE_LIMIT_MAX),
      anonymous: int('RATE_LIMIT_ANONYMOUS', 100, 1, RATE_LIMIT_MAX),
      auth: int('RATE_LIMIT_AUTH', 10, 1, RATE_LIMIT_MAX),
      windowSeconds: 60,
    },
    shutdownGraceMs: int('SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    connectionIdleTimeoutMs: int('CONNECTION_IDLE_TIMEOUT_MS', 15_000, 100, 600_000),
    maxConnections: int('MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    outboxPollMs: int('OUTBOX_POLL_MS', 5_000, 10, 3_600_000),
    webhooks: {
      allowPrivate: bool('WEBHOOK_ALLOW_PRIVATE', false),
      allowHttp: bool('WEBHOOK_ALLOW_HTTP', false),
      secretKey: webhookSecretKey(read('WEBHOOK_SECRET_KEY')),
      retryBaseMs: int('WEBHOOK_RETRY_BASE_MS', 30_000, 10, 3_600_000),
      retryWindowSeconds: int('WEBHOOK_RETRY_WINDOW_SECONDS', 86_400, 1, 7 * 86_400),
      timeoutMs: int('WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    },
    events: {
      maxStreamsPerCredential: int('EVENTS_MAX_STREAMS_PER_CREDENTIAL', 20, 1, 1_000_000),
      maxStreams: int('EVENTS_MAX_STREAMS', 5_000, 1, 1_000_000),
      heartbeatMs: int('EVENTS_HEARTBEAT_MS', 15_000, 100, 600_000),
      pollMs: int('EVENTS_POLL_MS', 5_000, 50, 3_600_000),
      retryMs: int('EVENTS_RETRY_MS', 2_000, 0, 600_000),
    },
    dashboard: {
      enabled: oneOf('DASHBOARD', ['on', 'off'], 'on') === 'on',
      dir: resolve(read('DASHBOARD_DIR') ?? DEFAULT_DASHBOARD_DIR),
    },
    metrics: {
      port: read('METRICS_PORT') === undefined ? null : int('METRICS_PORT', 0, 0, 65535),
      host: read('METRICS_HOST') ?? '127.0.0.1',
      token: metricsToken(read('METRICS_TOKEN')),
    },
  };
  for (const name of Object.keys(flags)) {
    if (!known.has(name)) {
      throw new ConfigError(
        `--${name.toLowerCase().replaceAll('_', '-')}`,
        'is not a Coffer setting (see docs/operating.md)',
      );
    }
  }
  return Object.freeze(config);
}
