import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

/**
 * `preValidation` for routes that take no body (accept, decline, DELETE):
 * fields sent anyway are refused like any unknown field, so a client that
 * thinks it is passing options learns it is not.
 */
export async function refuseBodyFields(request: FastifyRequest): Promise<void> {
  const body = request.body;
  if (body === undefined || body === null) return;
  const fields = typeof body === 'object' ? Object.keys(body) : ['body'];
  if (fields.length === 0) return;
  throw new AppError(
    'validation_error',
    `${fields[0]} is not a field this operation accepts`,
    fields.map((field) => ({ field, issue: 'unknown' })),
  );
}

/** `preValidation` for routes whose body is optional: a POST without one is validated as `{}`. */
export async function absentBodyIsEmpty(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) request.body = {};
}
