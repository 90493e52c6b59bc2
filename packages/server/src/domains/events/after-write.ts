import type { FastifyInstance, onResponseHookHandler } from 'fastify';
import type { ChangeNotifier } from './notifier.js';

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Calls the change feed's notifier after every successful write: once the
 * response is sent, the write has committed (services commit before they
 * return). Project routes name their project; the invitation routes change a
 * project they do not name, so they wake every project watched here. Other
 * writes (sign-in, account) change no project's feed. The hook is added to
 * the routes with a write method only: reads pay nothing.
 */
export function notifyAfterWrites(app: FastifyInstance, notifier: ChangeNotifier): void {
  const notify: onResponseHookHandler = (request, reply, done) => {
    if (!WRITES.has(request.method) || reply.statusCode >= 400) return done();
    const route = request.routeOptions.url ?? '';
    if (route.startsWith('/v1/projects/:project_id')) {
      const { project_id } = request.params as { project_id?: unknown };
      if (typeof project_id === 'string') notifier.notify(project_id);
    } else if (route.startsWith('/v1/invitations')) {
      notifier.notify(null);
    }
    done();
  };
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((m) => WRITES.has(m))) return;
    const own = route.onResponse;
    route.onResponse = [...(own === undefined ? [] : [own].flat()), notify];
  });
}
