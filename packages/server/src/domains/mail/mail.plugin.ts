import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app.js';
import { outboxWorker } from './outbox-worker.js';

/** Runs the e-mail outbox worker for the lifetime of the app: started when ready, stopped on close. */
export async function mailPlugin(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const worker = outboxWorker(ctx, app.log);
  app.addHook('onReady', async () => worker.start());
  app.addHook('onClose', async () => worker.stop());
}
