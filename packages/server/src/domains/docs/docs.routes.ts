import type { FastifyInstance } from 'fastify';
import { renderReference, type OpenApiDocument } from './reference.js';

/** The OpenAPI document, generated from the route schemas, and a readable reference page built from it. */
export async function docsRoutes(app: FastifyInstance): Promise<void> {
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  let page: string | undefined;
  app.get('/docs', { schema: { hide: true } }, async (_request, reply) => {
    page ??= renderReference(app.swagger() as unknown as OpenApiDocument);
    return reply
      .type('text/html; charset=utf-8')
      .header(
        'content-security-policy',
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
      )
      .send(page);
  });
}
