import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

interface Answer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Never answer (the request hangs until the sender gives up). */
  hang?: boolean;
}

/**
 * A real HTTP receiver on 127.0.0.1: records every request, answers what
 * `answer` says for the n-th one (0-based), 200 by default.
 */
export async function startReceiver(
  answer: (n: number, req: Received) => Answer = () => ({ status: 200 }),
) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      const a = answer(received.length, entry);
      received.push(entry);
      if (a.hang) return;
      res.writeHead(a.status, a.headers ?? {});
      res.end(a.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks/coffer`,
    port,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
