import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): the secret
 * is `whsec_` and the base64 of 32 random bytes; each request carries
 * `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`,
 * `v1,` and the base64 HMAC-SHA256, keyed with the secret's bytes, of
 * `<id>.<timestamp>.<body>`. Several signatures are separated by spaces; a
 * receiver accepts the request when any of them verifies (rotation sends both).
 */

export const SECRET_PREFIX = 'whsec_';

export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** One `v1,<base64>` signature of a request. */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three headers of one attempt, signed with every secret given (current first). */
export function signatureHeaders(
  secrets: readonly string[],
  id: string,
  timestamp: number,
  body: string,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => sign(s, id, timestamp, body)).join(' '),
  };
}
