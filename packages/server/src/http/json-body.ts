import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** A JSON body's bytes as they arrived: what an idempotency key's fingerprint covers. */
    bodyBytes: Buffer | null;
  }
}

/**
 * Request bodies: JSON only, anything else is 415. Parsed by Fastify's own
 * JSON parser (the same errors, the same refusal of `__proto__` and
 * `constructor` keys), fed the body as a Buffer, which is kept on the request
 * (`bodyBytes`): a keyed write's fingerprint is a hash of those bytes, which
 * spares it serializing the parsed body again (a secret's ciphertext, a
 * kilobyte or more, escaped character by character; http/idempotency.ts).
 */
export function registerJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser('text/plain');
  const { onProtoPoisoning = 'error', onConstructorPoisoning = 'error' } = app.initialConfig;
  const parseJson = app.getDefaultJsonParser(onProtoPoisoning, onConstructorPoisoning);
  app.decorateRequest('bodyBytes', null);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    request.bodyBytes = body as Buffer;
    // Fastify's own parser reads a Buffer as it reads the string it is usually given.
    parseJson(request, body as unknown as string, done);
  });
}
