import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { CliError } from '../cli/errors.js';

/**
 * The encrypted local copy `coffer run --fallback FILE` keeps, so a service can
 * still start while the server is unreachable. Plaintext never touches the
 * disk. Construction (node:crypto, standard primitives only):
 *
 *   ikm   = the caller's private key material: a user's X25519 secret key
 *           (from the session), or a token's 32-byte key part (from
 *           COFFER_TOKEN) — the same secret that can already decrypt the
 *           environment, and nothing the server ever sees
 *   salt  = 32 fresh random bytes per write
 *   key   = HKDF-SHA-256(ikm, salt, info = "coffer/v1/cli-fallback", 32 bytes)
 *   nonce = 12 fresh random bytes
 *   aad   = "coffer/v1/cli-fallback" ‖ 0 ‖ server ‖ 0 ‖ project ‖ 0 ‖ environment
 *   body  = AES-256-GCM(key, nonce, JSON { secrets, fetched_at }, aad)
 *
 * A fresh key per write makes nonce reuse impossible; the AAD binds the copy to
 * its server, project and environment, so a copy renamed to stand in for
 * another environment fails to open. The file is written atomically with mode
 * 0600. Anyone with the ikm could decrypt it, which is no more than they could
 * already do with the server's ciphertext.
 */
const FORMAT = 'coffer-fallback-v1';
const INFO = 'coffer/v1/cli-fallback';

export interface FallbackScope {
  server: string;
  project: string;
  environment: string;
}

interface FallbackFile extends FallbackScope {
  format: typeof FORMAT;
  created_at: string;
  salt: string;
  nonce: string;
  ciphertext: string;
  tag: string;
}

const aadOf = (scope: FallbackScope) =>
  Buffer.from([INFO, scope.server, scope.project, scope.environment].join('\0'), 'utf8');

const keyOf = (ikm: Uint8Array, salt: Buffer) =>
  Buffer.from(hkdfSync('sha256', ikm, salt, INFO, 32));

export function writeFallback(
  path: string,
  ikm: Uint8Array,
  scope: FallbackScope,
  secrets: Record<string, string>,
  now = new Date(),
): void {
  const salt = randomBytes(32);
  const nonce = randomBytes(12);
  const key = keyOf(ikm, salt);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(aadOf(scope));
  const plaintext = Buffer.from(JSON.stringify({ secrets, fetched_at: now.toISOString() }), 'utf8');
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  plaintext.fill(0);
  key.fill(0);
  const file: FallbackFile = {
    format: FORMAT,
    ...scope,
    created_at: now.toISOString(),
    salt: salt.toString('base64url'),
    nonce: nonce.toString('base64url'),
    ciphertext: ciphertext.toString('base64url'),
    tag: cipher.getAuthTag().toString('base64url'),
  };
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, `${JSON.stringify(file)}\n`, { mode: 0o600, flag: 'wx' });
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw new CliError(
      'fallback_write_failed',
      `cannot write the fallback copy ${path}: ${(err as Error).message}`,
    );
  }
}

/** Opens the copy; throws a CliError when missing, for another scope, or not decryptable with `ikm`. */
export function readFallback(
  path: string,
  ikm: Uint8Array,
  scope: FallbackScope,
): { secrets: Record<string, string>; fetchedAt: string } {
  let file: FallbackFile;
  try {
    file = JSON.parse(readFileSync(path, 'utf8')) as FallbackFile;
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    throw new CliError(
      'fallback_unavailable',
      missing ? `no fallback copy at ${path}` : `${path} is not a Coffer fallback copy`,
    );
  }
  if (file.format !== FORMAT)
    throw new CliError('fallback_unavailable', `${path} is not a Coffer fallback copy`);
  if (
    file.project !== scope.project ||
    file.environment !== scope.environment ||
    file.server !== scope.server
  ) {
    throw new CliError(
      'fallback_unavailable',
      `${path} holds ${file.project}/${file.environment} on ${file.server}, not ${scope.project}/${scope.environment} on ${scope.server}`,
    );
  }
  const key = keyOf(ikm, Buffer.from(file.salt, 'base64url'));
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(file.nonce, 'base64url'));
    decipher.setAAD(aadOf(scope));
    decipher.setAuthTag(Buffer.from(file.tag, 'base64url'));
    const plaintext = Buffer.concat([
      decipher.update(Buffer.from(file.ciphertext, 'base64url')),
      decipher.final(),
    ]);
    const body = JSON.parse(plaintext.toString('utf8')) as {
      secrets: Record<string, string>;
      fetched_at: string;
    };
    plaintext.fill(0);
    return { secrets: body.secrets, fetchedAt: body.fetched_at };
  } catch {
    throw new CliError(
      'fallback_unavailable',
      `${path} cannot be decrypted with these credentials`,
    );
  } finally {
    key.fill(0);
  }
}
