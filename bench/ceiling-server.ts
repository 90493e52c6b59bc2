// The ceiling: a bare Fastify route returning a tiny JSON object, on the same
// TLS certificate as the Coffer server under test. Started as its own process.
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyInstance } from 'fastify';

const { CERT_FILE, KEY_FILE, PORT } = process.env;
const app = (CERT_FILE && KEY_FILE
  ? Fastify({ https: { cert: readFileSync(CERT_FILE), key: readFileSync(KEY_FILE) } })
  : Fastify()) as unknown as FastifyInstance;
app.get('/ceiling', async () => ({ ok: true }));
const address = await app.listen({ host: '127.0.0.1', port: Number(PORT ?? 0) });
process.stdout.write(`listening on ${address}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
