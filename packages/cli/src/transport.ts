import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { CliError } from './cli/errors.js';

/**
 * The `fetch` the CLI gives the SDK client: a small implementation over
 * `node:https` with a keep-alive agent, trusting the CA file when one is set
 * (`--ca`, `COFFER_CA_FILE`: the embedded default's self-signed certificate),
 * like `curl --cacert`, and the system's roots otherwise.
 *
 * Why not undici or Node's global fetch: startup time is
 * the CLI's main performance target (`coffer run -- true` ≤ 250 ms), and
 * loading undici costs 70–100 ms of CPU on this machine (Node's own fetch,
 * which cannot take a CA, 30–45 ms), against 5–10 ms for `node:https`. The
 * SDK needs only status, headers (incl. `Set-Cookie`) and the body text, which
 * is what the answer object below provides.
 */
export async function transportFetch(caFile: string | null): Promise<typeof fetch> {
  const ca = caFile === null ? undefined : readCa(caFile);
  const [https, http, tls] = await Promise.all([
    import('node:https'),
    import('node:http'),
    import('node:tls'),
  ]);
  // One TLS context for every connection: given only `ca`, each connection
  // would parse the certificate into a context of its own (about 20 ms of CPU
  // each on a busy machine, paid again for every request sent in parallel).
  const secureContext = ca ? tls.createSecureContext({ ca }) : undefined;
  const agents = {
    'https:': new https.Agent({ keepAlive: true, ...(ca ? { ca, secureContext } : {}) }),
    'http:': new http.Agent({ keepAlive: true }),
  };
  const fetchOverNode = (input: string | URL | Request, init: RequestInit = {}) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
      if (url.protocol !== 'https:' && url.protocol !== 'http:') {
        reject(new TypeError(`unsupported protocol ${url.protocol}`));
        return;
      }
      const request = (url.protocol === 'https:' ? https.request : http.request)(
        url,
        {
          method: init.method ?? 'GET',
          headers: init.headers as Record<string, string> | undefined,
          agent: agents[url.protocol],
          timeout: REQUEST_TIMEOUT_MS,
          ...(init.signal ? { signal: init.signal } : {}),
        },
        (response) => {
          if (String(response.headers['content-type']).startsWith('text/event-stream')) {
            // A stream (the change feed) is handed over as it arrives; the SDK's
            // watch detects a silent connection itself.
            request.setTimeout(0);
            resolve(streaming(response));
            return;
          }
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.once('error', reject);
          response.once('end', () =>
            resolve(
              answer(
                response.statusCode ?? 0,
                response.statusMessage ?? '',
                response.headers,
                Buffer.concat(chunks),
              ),
            ),
          );
        },
      );
      request.once('timeout', () =>
        request.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)),
      );
      request.once('error', reject);
      if (typeof init.body === 'string') request.end(init.body);
      else request.end();
    });
  return fetchOverNode as typeof fetch;
}

/** A request that gets no answer for this long fails (and `run --fallback` may use its copy). */
const REQUEST_TIMEOUT_MS = 30_000;

function readCa(caFile: string): string {
  let ca: string;
  try {
    ca = readFileSync(caFile, 'utf8');
  } catch (err) {
    throw new CliError(
      'ca_file_unreadable',
      `cannot read the CA file ${caFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  if (!ca.includes('-----BEGIN CERTIFICATE-----')) {
    throw new CliError('ca_file_invalid', `${caFile} is not a PEM certificate`);
  }
  return ca;
}

/** A streaming answer: `body` is the response as a web stream, read by the SDK's `watch`. */
function streaming(response: IncomingMessage): Response {
  const status = response.statusCode ?? 0;
  const base = answer(status, response.statusMessage ?? '', response.headers, Buffer.alloc(0));
  return Object.assign(base, {
    body: Readable.toWeb(response) as ReadableStream<Uint8Array>,
  }) as Response;
}

/** The part of the Fetch API's `Response` the SDK client reads. */
function answer(
  status: number,
  statusText: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Response {
  const header = (name: string): string | null => {
    const value = headers[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  };
  const setCookie = headers['set-cookie'] ?? [];
  return {
    status,
    statusText,
    ok: status >= 200 && status < 300,
    headers: {
      get: header,
      has: (name: string) => header(name) !== null,
      getSetCookie: () => setCookie,
    },
    body: body.length > 0 ? { cancel: async () => undefined } : null,
    text: async () => body.toString('utf8'),
    json: async () => JSON.parse(body.toString('utf8')) as unknown,
  } as unknown as Response;
}
