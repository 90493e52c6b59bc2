// The ceiling: a bare Fastify route returning a tiny JSON object, on the same
// TLS certificate as the Coffer server under test. Started as its own process.
// Two more routes send what Coffer's answers weigh: a body of the listing's size,
// and a read's exact answer.
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyInstance } from 'fastify';

const { CERT_FILE, KEY_FILE, PORT } = process.env;
const app = (CERT_FILE && KEY_FILE
  ? Fastify({ https: { cert: readFileSync(CERT_FILE), key: readFileSync(KEY_FILE) } })
  : Fastify()) as unknown as FastifyInstance;
app.get('/ceiling', async () => ({ ok: true }));
// A JSON body of exactly :bytes bytes, serialized once: the same stack sending a
// payload the size of a secret listing.
const bodies = new Map<number, string>();
app.get<{ Params: { bytes: string } }>('/ceiling/json/:bytes', async (request, reply) => {
  const bytes = Math.min(Math.max(Number(request.params.bytes) || 0, 12), 1 << 20);
  let body = bodies.get(bytes);
  if (body === undefined) bodies.set(bytes, (body = `{"data":"${'x'.repeat(bytes - 11)}"}`));
  return reply.type('application/json; charset=utf-8').send(body);
});
// One read of a secret as Coffer answered it, replayed: the same headers (but
// those Node writes itself) and the same body, so that the read can be compared
// with the stack's own cost of sending that answer.
if (process.env.READ_SHAPE_FILE) {
  const shape = JSON.parse(readFileSync(process.env.READ_SHAPE_FILE, 'utf8')) as {
    headers: Record<string, string>;
    body: string;
  };
  const own = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);
  const headers = Object.entries(shape.headers).filter(([name]) => !own.has(name));
  app.get('/ceiling/read-shaped', async (_request, reply) => {
    for (const [name, value] of headers) reply.header(name, value);
    return reply.send(shape.body);
  });
}
const address = await app.listen({ host: '127.0.0.1', port: Number(PORT ?? 0) });
process.stdout.write(`listening on ${address}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
// Exit with the bench that started it, however the bench ended.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && process.exit(0), 1000).unref();
