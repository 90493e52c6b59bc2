import {
  LogController,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { stdSerializers, symbols } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { stdoutLogBuffer } from './log-destination.js';

/** Field names whose values are credentials or key material, wherever they appear in a log object. */
const SECRET_FIELDS = new Set([
  'authorization',
  'cookie',
  'set-cookie',
  'password',
  'new_password',
  'current_password',
  'auth_key',
  'new_auth_key',
  'recovery_key',
  'private_key',
  'key_part',
  'credential',
  'token',
  'bearer',
  'secret',
]);

const CENSOR = '[redacted]';

/** How deep below a log line's own fields secret fields are still looked for. */
const REDACT_DEPTH = 6;

// Query parameters whose values may be credentials (e.g. an invitation token in a link).
const SECRET_QUERY = /token|key|secret|password|auth|code|sig/i;

/** The request as logged: never headers or body, and secret-looking query values masked. */
function requestForLog(request: FastifyRequest) {
  const url = request.url;
  if (typeof url !== 'string') return request; // not a request (someone logged `{ req: … }`)
  const q = url.indexOf('?');
  let logged = url;
  if (q >= 0) {
    const params = new URLSearchParams(url.slice(q + 1));
    for (const name of new Set(params.keys())) {
      if (SECRET_QUERY.test(name)) params.set(name, CENSOR);
    }
    logged = `${url.slice(0, q)}?${params.toString()}`;
  }
  return {
    method: request.method,
    url: logged,
    host: request.host,
    remoteAddress: request.ip,
  };
}

function replyForLog(reply: FastifyReply) {
  return typeof reply?.statusCode === 'number' ? { statusCode: reply.statusCode } : reply;
}

/**
 * The objects Fastify logs under these keys, reduced to what a log line may
 * show. Errors need no entry: `redact` serializes every Error it meets.
 */
const SERIALIZERS: Record<string, (value: never) => unknown> = {
  req: requestForLog,
  res: replyForLog,
};

/**
 * `value` with every secret field (any depth up to `depth`, any letter case)
 * replaced by the censor. Copies only what it changes, so the common line —
 * nothing secret in it — costs one walk over its few fields and no allocation.
 */
export function redact(value: unknown, depth = REDACT_DEPTH): unknown {
  if (depth < 0 || value === null || typeof value !== 'object') return value;
  if (ArrayBuffer.isView(value)) return value;
  if (value instanceof Error) return redact(stdSerializers.err(value), depth);
  const source = value as Record<string, unknown>;
  let copy: Record<string, unknown> | unknown[] | null = null;
  for (const key of Object.keys(source)) {
    const field = source[key];
    const safe = SECRET_FIELDS.has(key.toLowerCase()) ? CENSOR : redact(field, depth - 1);
    if (safe === field) continue;
    copy ??= Array.isArray(source) ? [...source] : { ...source };
    (copy as Record<string, unknown>)[key] = safe;
  }
  return copy ?? value;
}

/** A log line's own fields: Fastify's objects serialized first, then everything redacted. */
function safeLogObject(line: Record<string, unknown>): Record<string, unknown> {
  let serialized = line;
  for (const key of Object.keys(SERIALIZERS)) {
    if (line[key] === undefined) continue;
    if (serialized === line) serialized = { ...line };
    serialized[key] = SERIALIZERS[key]!(line[key] as never);
  }
  // One level more than `redact`'s own default: the line's fields count from 0.
  return redact(serialized, REDACT_DEPTH + 1) as Record<string, unknown>;
}

const unchanged = (value: unknown) => value;

/**
 * pino options every logger of the app gets, whatever the caller passes (level,
 * stream). Redaction is one walk over each line's fields (`safeLogObject`), not
 * pino's path-based `redact`: with wildcard paths that compiled to a search on
 * every line and cost more than the rest of a cached secret read together.
 * Without a stream of the caller's, lines go to stdout through `LogBuffer`.
 */
export function loggerOptions(
  level: string,
  custom: FastifyServerOptions['logger'],
): FastifyServerOptions['logger'] {
  if (custom === false) return false;
  const extra = typeof custom === 'object' && custom !== null ? custom : {};
  return {
    level,
    // Lines to stdout go through one buffer (`log-destination.ts`) unless the
    // caller brings its own stream or file.
    ...('stream' in extra || 'file' in extra ? {} : { stream: stdoutLogBuffer() }),
    ...extra,
    // Serialization happens in `safeLogObject`, before redaction; pino's own
    // serializers (which run after the formatter) must leave the result as is.
    serializers: { req: unchanged, res: unchanged, err: unchanged },
    // Bindings: the root logger's own; pino does not pass a child's bindings
    // through a formatter, so children bind identifiers only (Fastify binds `reqId`).
    formatters: { log: safeLogObject, bindings: safeLogObject },
  } as FastifyServerOptions['logger'];
}

/**
 * The access log: ONE line per request, when it completes (`request completed`
 * or `request errored`), with the request (method, path with secret-looking
 * query values masked, host, client address), the status and the response
 * time. The line Fastify writes when a request arrives is kept at `debug`:
 * at `info` it doubled the cost of logging, the largest part of a cached read
 * after the socket write, and told nothing the completion line does not.
 * A request that never completes is still reported, by the shutdown's
 * `SHUTDOWN_GRACE_MS` warning or the request timeout's error.
 */
export class AccessLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const line = { req: request, res: reply, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/** What `completedLine` needs of a request: the fields `requestForLog` logs. */
export interface CompletedRequest {
  readonly id: string;
  readonly method: string;
  readonly url: string;
  readonly host: string | undefined;
  readonly ip: string | undefined;
}

/**
 * Writes `AccessLog`'s `request completed` line for a `200` without pino's walk
 * over its fields, for the cached-read path (`cached-reads.ts`), where pino's
 * serialization and redaction were a tenth of a read. The line is the one pino
 * writes, byte for byte but for the time, id and duration (a test compares
 * them): its own fields are known and hold nothing to redact, as long as the URL
 * has no query string (the only place `requestForLog` masks). A logger that is
 * not pino's, an unset address, or a URL with a query take pino's way.
 */
export function completedLine(
  log: FastifyBaseLogger,
): (request: CompletedRequest, responseTime: number) => void {
  const pinoFields = log as unknown as Record<symbol, unknown>;
  const stream = pinoFields[symbols.streamSym] as { write(line: string): unknown } | undefined;
  const bindings = pinoFields[symbols.chindingsSym];
  const slow = (request: CompletedRequest, responseTime: number) =>
    log.info(
      { reqId: request.id, req: request, res: { statusCode: 200 }, responseTime },
      'request completed',
    );
  if (stream === undefined || typeof bindings !== 'string') return slow;
  const pino = log as unknown as { isLevelEnabled(level: string): boolean };
  return (request, responseTime) => {
    if (!pino.isLevelEnabled('info')) return;
    const { ip, host, url } = request;
    if (ip === undefined || host === undefined || url.includes('?'))
      return slow(request, responseTime);
    stream.write(
      `{"level":30,"time":${Date.now()}${bindings},"reqId":${JSON.stringify(request.id)},"req":{"method":${JSON.stringify(request.method)},"url":${JSON.stringify(url)},"host":${JSON.stringify(host)},"remoteAddress":${JSON.stringify(ip)}},"res":{"statusCode":200},"responseTime":${responseTime},"msg":"request completed"}\n`,
    );
  };
}
