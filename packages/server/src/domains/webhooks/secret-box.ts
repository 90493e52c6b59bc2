import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * How a webhook's signing secret is stored. It is the server's own secret
 * (the server must read it to sign), not a user's secret. With
 * `WEBHOOK_SECRET_KEY` set it is encrypted with AES-256-GCM under that key,
 * which lives outside the database: `aesgcm:<iv>:<ciphertext+tag>` (base64),
 * bound to the webhook's id. Without it, it is stored as `plain:<secret>`,
 * protected only as the database is. A secret stored encrypted cannot be read
 * without the key (delivery fails and says so until the key is back or the
 * secret is rotated).
 */

export class SecretUnavailableError extends Error {
  constructor() {
    super(
      'The signing secret is encrypted and WEBHOOK_SECRET_KEY is missing or different; restore the key or rotate the secret',
    );
    this.name = 'SecretUnavailableError';
  }
}

export function sealSecret(secret: string, webhookId: string, key: Buffer | null): string {
  if (!key) return `plain:${secret}`;
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(webhookId));
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return `aesgcm:${iv.toString('base64')}:${body.toString('base64')}`;
}

export function openSecret(stored: string, webhookId: string, key: Buffer | null): string {
  if (stored.startsWith('plain:')) return stored.slice('plain:'.length);
  const [scheme, iv, body] = stored.split(':');
  if (scheme !== 'aesgcm' || !iv || !body || !key) throw new SecretUnavailableError();
  const bytes = Buffer.from(body, 'base64');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
    decipher.setAAD(Buffer.from(webhookId));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    return Buffer.concat([
      decipher.update(bytes.subarray(0, bytes.length - 16)),
      decipher.final(),
    ]).toString('utf8');
  } catch {
    throw new SecretUnavailableError();
  }
}

/** The secrets that sign an attempt at `at`: the current one, and the replaced one while its overlap lasts. */
export function signingSecrets(
  row: {
    id: string;
    secret: string;
    previous_secret: string | null;
    previous_secret_expires_at: string | null;
  },
  at: string,
  key: Buffer | null,
): string[] {
  const secrets = [openSecret(row.secret, row.id, key)];
  if (
    row.previous_secret &&
    row.previous_secret_expires_at &&
    row.previous_secret_expires_at > at
  ) {
    secrets.push(openSecret(row.previous_secret, row.id, key));
  }
  return secrets;
}
