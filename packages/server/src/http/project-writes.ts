import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import type { ChangeTokens } from '../db/change-tokens.js';
import { isId } from '../ids.js';
import { hooksOf, servesWrites } from './write-routes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Ends this request's write mark (`markProjectWrites`); null when it made none. */
    endProjectWrite: (() => Promise<void>) | null;
  }
}

/**
 * Every request that may change a project — an unsafe method on a route under
 * `/projects/:project_id` — marks a write to that project before its handler
 * runs and ends the mark before its answer is sent (`ChangeTokens`): from the
 * mark on, no instance serves that project's cached reads, and after the end
 * they serve only what they load anew. One rule for every such route, the ones
 * to come included, instead of a call in each service. A write the mark
 * cannot be made for (Redis unreachable) is refused with 503 before its
 * handler runs. The hooks are added to those routes only: reads pay nothing.
 */
export function markProjectWrites(app: FastifyInstance, tokens: ChangeTokens): void {
  app.decorateRequest('endProjectWrite', null);
  const begin = async (request: FastifyRequest) => {
    const projectId = (request.params as { project_id?: unknown }).project_id;
    // No project can have a malformed id (the route answers 404): nothing to mark.
    if (typeof projectId !== 'string' || !isId('project', projectId)) return;
    request.endProjectWrite = await tokens.begin(projectId);
  };
  const end: onSendHookHandler = async (request: FastifyRequest, _reply: FastifyReply, payload) => {
    const finish = request.endProjectWrite;
    if (finish) {
      request.endProjectWrite = null;
      await finish();
    }
    return payload;
  };
  app.addHook('onRoute', (route) => {
    if (!route.url.includes('/projects/:project_id') || !servesWrites(route)) return;
    route.preHandler = [...hooksOf(route.preHandler), begin];
    route.onSend = [...hooksOf(route.onSend), end];
  });
}
