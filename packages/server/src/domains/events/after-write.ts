import type { FastifyInstance, onResponseHookHandler } from 'fastify';
import { hooksOf, servesWrites, UNSAFE_METHODS } from '../../http/write-routes.js';
import type { ChangeNotifier } from './notifier.js';

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
    if (!UNSAFE_METHODS.has(request.method) || reply.statusCode >= 400) return done();
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
    if (servesWrites(route)) route.onResponse = [...hooksOf(route.onResponse), notify];
  });
}
