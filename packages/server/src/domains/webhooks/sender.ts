import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { WebhookConfig } from '../../config.js';
import {
  parseWebhookUrl,
  pinnedLookup,
  resolveTarget,
  WebhookTargetError,
} from './address-guard.js';

/** What is read of a receiver's answer; the rest is discarded unread. */
const RESPONSE_READ_LIMIT = 4096;
/** What the delivery log keeps of it. */
export const RESPONSE_EXCERPT_CHARS = 200;
/** A payload larger than this is not sent (events carry names and ids, far below it). */
export const MAX_PAYLOAD_BYTES = 256 * 1024;

export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  /** Why it failed, for the log (never the receiver's whole answer). */
  error: string | null;
  responseExcerpt: string | null;
}

const USER_AGENT = 'Coffer-Webhooks/1';

/** Printable, single-line, short: what the delivery log may keep of a receiver's answer. */
function excerptOf(bytes: Buffer): string | null {
  if (bytes.length === 0) return null;
  const text = bytes
    .toString('utf8')
    .replace(/[^\x20-\x7e\u00a0-\uffff]+/g, ' ')
    .trim();
  if (!text) return null;
  return text.length > RESPONSE_EXCERPT_CHARS
    ? `${text.slice(0, RESPONSE_EXCERPT_CHARS - 1)}…`
    : text;
}

/**
 * POSTs one signed payload. The URL is checked again (scheme, and every
 * address its host resolves to) and the connection goes to the checked
 * address; redirects are not followed (a 3xx is a failure); the whole attempt
 * is bounded by `WEBHOOK_TIMEOUT_MS`; at most 4 KiB of the answer is read.
 */
export async function sendWebhook(
  rawUrl: string,
  headers: Record<string, string>,
  body: string,
  config: WebhookConfig,
): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const failed = (
    error: string,
    statusCode: number | null = null,
    excerpt: string | null = null,
  ) => ({
    ok: false,
    statusCode,
    durationMs: elapsed(),
    error,
    responseExcerpt: excerpt,
  });
  if (Buffer.byteLength(body) > MAX_PAYLOAD_BYTES) {
    return failed(`the payload is larger than ${MAX_PAYLOAD_BYTES} bytes`);
  }
  let url: URL;
  let lookup: ReturnType<typeof pinnedLookup>;
  try {
    url = parseWebhookUrl(rawUrl, config);
    lookup = pinnedLookup(await resolveTarget(url, config));
  } catch (err) {
    if (err instanceof WebhookTargetError) return failed(`refused: ${err.message}`);
    throw err;
  }
  const requester = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve(result);
    };
    const req = requester(url, {
      method: 'POST',
      agent: false,
      lookup: lookup as never,
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': USER_AGENT,
        connection: 'close',
      },
    });
    const deadline = setTimeout(() => {
      req.destroy();
      finish(failed(`no complete answer within ${config.timeoutMs} ms`));
    }, config.timeoutMs);
    deadline.unref();
    req.on('error', (err: Error & { code?: string }) =>
      finish(failed(`${err.code ?? 'error'}: ${err.message}`.slice(0, 300))),
    );
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => {
        const status = res.statusCode ?? 0;
        const excerpt = excerptOf(Buffer.concat(chunks).subarray(0, RESPONSE_READ_LIMIT));
        if (status >= 200 && status < 300) {
          finish({
            ok: true,
            statusCode: status,
            durationMs: elapsed(),
            error: null,
            responseExcerpt: excerpt,
          });
        } else if (status >= 300 && status < 400) {
          finish(failed(`answered ${status}; redirects are not followed`, status, excerpt));
        } else {
          finish(failed(`answered ${status}`, status, excerpt));
        }
        res.destroy();
      };
      res.on('data', (chunk: Buffer) => {
        if (size < RESPONSE_READ_LIMIT) chunks.push(chunk);
        size += chunk.length;
        if (size >= RESPONSE_READ_LIMIT) done();
      });
      res.on('end', done);
      res.on('error', done);
    });
    req.end(body);
  });
}
