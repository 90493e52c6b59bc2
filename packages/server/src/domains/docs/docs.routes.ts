import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app.js';
import { renderReference } from './reference.js';

/** The OpenAPI document, generated from the route schemas, and a readable reference page built from it. */
export async function docsRoutes(app: FastifyInstance, _ctx: AppContext): Promise<void> {
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

export interface OpenApiDocument {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, OpenApiOperation>>;
}

export interface OpenApiOperation {
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Array<{
    name: string;
    in: string;
    required?: boolean;
    description?: string;
    schema?: unknown;
  }>;
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses?: Record<
    string,
    { description?: string; content?: Record<string, { schema?: unknown }> }
  >;
}
