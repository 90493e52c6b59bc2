// A plain Server-Sent Events reader over node:https for the change feed's
// tests: independent of the SDK's parser, it keeps every frame as received.
import { request } from 'node:https';

export interface Frame {
  id: string | null;
  event: string;
  /** The `data:` line parsed as JSON. */
  data: Record<string, unknown>;
  /** The frame exactly as it came over the wire. */
  raw: string;
}

export interface OpenStream {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Every frame so far, heartbeats aside. */
  frames: Frame[];
  /** The whole body so far (heartbeats included). */
  text(): string;
  /** Resolves with the first frame (from the start) matching `match`. */
  waitFor(match: (frame: Frame) => boolean, timeoutMs?: number, what?: string): Promise<Frame>;
  /** Resolves when the server closed the stream. */
  closed: Promise<void>;
  close(): void;
}

/** Opens `GET path` as an event stream; resolves once the status and headers came. */
export function openStream(
  baseUrl: string,
  ca: string,
  path: string,
  headers: Record<string, string>,
): Promise<OpenStream> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'GET', ca, headers: { accept: 'text/event-stream', ...headers } },
      (res) => {
        let body = '';
        let buffer = '';
        const frames: Frame[] = [];
        const waiters: { match: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = [];
        let markClosed: () => void = () => undefined;
        const closed = new Promise<void>((r) => (markClosed = r));
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const fields: Record<string, string> = {};
            for (const line of block.split('\n')) {
              if (line.startsWith(':') || line === '') continue;
              const colon = line.indexOf(':');
              fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
            }
            if (fields.data === undefined) continue;
            const frame: Frame = {
              id: fields.id ?? null,
              event: fields.event ?? 'message',
              data: JSON.parse(fields.data) as Record<string, unknown>,
              raw: block,
            };
            frames.push(frame);
            for (const w of [...waiters]) {
              if (w.match(frame)) {
                waiters.splice(waiters.indexOf(w), 1);
                w.resolve(frame);
              }
            }
          }
        });
        res.on('end', markClosed);
        res.on('close', markClosed);
        res.on('error', markClosed);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          frames,
          text: () => body,
          waitFor(match, timeoutMs = 20_000, what = 'a frame') {
            const seen = frames.find(match);
            if (seen) return Promise.resolve(seen);
            return new Promise((resolveFrame, rejectFrame) => {
              const timer = setTimeout(
                () =>
                  rejectFrame(
                    new Error(
                      `timed out waiting for ${what}; frames: ${frames.map((f) => f.raw).join(' | ')}`,
                    ),
                  ),
                timeoutMs,
              );
              waiters.push({
                match,
                resolve: (f) => {
                  clearTimeout(timer);
                  resolveFrame(f);
                },
              });
            });
          },
          closed,
          close: () => req.destroy(),
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Reads a JSON answer (for the few calls the CLI has no command for). */
export function sendJson(
  baseUrl: string,
  ca: string,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, baseUrl), { method, ca, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as unknown) : null }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}
