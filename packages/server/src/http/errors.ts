import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import { AppError, ERROR_STATUS, type ErrorCode, type ErrorDetail } from '../errors.js';
import { describeDetails, detailsFromSchemaErrors } from './validation.js';

const METHODS: HTTPMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Serves files (the dashboard), not an API operation: another method on
     * its paths answers 404, as on any path without a route, not 405.
     */
    staticFiles?: boolean;
  }
}

/**
 * The one place where failures become Form A error bodies:
 * `{ error: { code, message, details?, request_id } }`. Domain errors keep their
 * code; Fastify's protocol errors (bad JSON, 413, 415) get theirs; anything
 * unexpected is a 500 whose body says nothing about the cause.
 */
export function registerErrorHandling(app: FastifyInstance): void {
  // A second router that only knows which methods each path has, so an
  // existing path with the wrong method answers 405 with `Allow`, not 404.
  const known = FindMyWay({ ignoreTrailingSlash: false });
  app.addHook('onRoute', (route) => {
    if (route.config?.staticFiles) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods) {
      if (METHODS.includes(m as HTTPMethod)) {
        try {
          known.on(m as HTTPMethod, route.url, () => undefined);
        } catch {
          // already known (e.g. HEAD/GET pairs)
        }
      }
    }
  });

  /** 404 for a path no route has, 405 with `Allow` for a known path and the wrong method. */
  const unroutable = (request: FastifyRequest, reply: FastifyReply): AppError => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((m) => known.find(m, path) !== null);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return new AppError(
        'method_not_allowed',
        `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}`,
      );
    }
    return new AppError('not_found', `No route for ${request.method} ${path}`);
  };
  // Answered before the body is read, after the pipeline's headers: a request
  // to nowhere never gets a 400/413/415 about its body instead of its 404/405.
  // A callback hook: it runs on every request, and an async one costs a promise each time.
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (request.is404) done(unroutable(request, reply));
    else done(null, payload);
  });
  app.setNotFoundHandler(async (request, reply) => {
    throw unroutable(request, reply);
  });

  app.setErrorHandler(async (error: FastifyError & Partial<AppError>, request, reply) => {
    if (error instanceof AppError) {
      return sendError(request, reply, error.code, error.message, error.details);
    }
    if (error.validation) {
      const details = detailsFromSchemaErrors(error.validation, error.validationContext ?? 'body');
      return sendError(request, reply, 'validation_error', describeDetails(details), details);
    }
    const protocol = protocolError(error);
    if (protocol) {
      if (protocol.code === 'payload_too_large') drainRefusedBody(request, reply);
      return sendError(request, reply, protocol.code, protocol.message, protocol.details);
    }

    request.log.error({ err: error }, 'unexpected error');
    return sendError(
      request,
      reply,
      'internal_error',
      'An unexpected error occurred; quote the request id when reporting it',
    );
  });
}

/** How much of a refused body is read and dropped so the client can read its 413. */
const DRAIN_LIMIT_BYTES = 8 * 1024 * 1024;
/** How long the rest of a refused body may take to arrive. */
const DRAIN_TIMEOUT_MS = 10_000;

/**
 * A 413 is often decided before the body has arrived (from its Content-Length,
 * or part way through). Closing the connection at once resets it under a
 * client that is still sending, which then reports a broken pipe instead of the
 * answer (RFC 9112 §9.6). So the rest of the body is read and dropped after the
 * 413 (Node does that for a kept-alive connection), bounded by size and time:
 * past either, or for a declared length beyond the bound, the connection is
 * closed as before.
 */
function drainRefusedBody(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  if (raw.complete) return;
  const declared = Number(request.headers['content-length']);
  if (declared > DRAIN_LIMIT_BYTES) return;
  reply.removeHeader('connection');
  reply.raw.once('finish', () => {
    if (raw.complete || !raw.socket) return;
    const socket = raw.socket;
    let drained = 0;
    const cut = () => {
      if (!raw.complete) socket.destroy();
    };
    const timer = setTimeout(cut, DRAIN_TIMEOUT_MS);
    timer.unref();
    raw.on('data', (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > DRAIN_LIMIT_BYTES) cut();
    });
    raw.once('end', () => clearTimeout(timer));
    raw.once('close', () => clearTimeout(timer));
    raw.resume();
  });
}

function protocolError(
  error: FastifyError,
): { code: ErrorCode; message: string; details?: ErrorDetail[] } | null {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'payload_too_large', message: 'Request body is too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { code: 'unsupported_media_type', message: 'Request bodies must be application/json' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return {
        code: 'validation_error',
        message: 'Request body is empty but Content-Type is application/json',
        details: [{ field: 'body', issue: 'required' }],
      };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return {
        code: 'validation_error',
        message: 'Request body is not valid JSON',
        details: [{ field: 'body', issue: 'invalid_json' }],
      };
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') {
    return {
      code: 'validation_error',
      message: 'Request body is not valid JSON',
      details: [{ field: 'body', issue: 'invalid_json' }],
    };
  }
  if (error.statusCode === 413)
    return { code: 'payload_too_large', message: 'Request body is too large' };
  if (error.statusCode === 415)
    return { code: 'unsupported_media_type', message: 'Request bodies must be application/json' };
  if (error.statusCode === 400)
    return { code: 'validation_error', message: 'The request is malformed' };
  return null;
}

export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  message: string,
  details?: readonly ErrorDetail[],
) {
  const body: { error: Record<string, unknown> } = {
    error: { code, message, request_id: request.id },
  };
  if (details && details.length > 0) body.error.details = details;
  return reply.code(ERROR_STATUS[code]).type('application/json; charset=utf-8').send(body);
}
