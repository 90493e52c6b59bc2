import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError } from './cli/errors.js';

/**
 * The logged-in user's session on this machine:
 * `${XDG_CONFIG_HOME:-~/.config}/coffer/session.json`, mode 0600 in a 0700
 * directory.
 *
 * It holds the session cookie AND the user's unwrapped private keys (X25519
 * and Ed25519). That is deliberate: `coffer run` must start in milliseconds
 * and never prompt (it runs in scripts, editors, process managers), and any
 * at-rest protection we could add without a prompt would need its key on the
 * same disk. So the file is treated like an SSH private key: only its owner may
 * read it, the CLI refuses to use it when its permissions are broader than
 * 0600 (a leaked copy is as good as the password), and `coffer logout` deletes
 * it. The password itself is never stored.
 */
export interface StoredSession {
  version: 1;
  server: string;
  /** Absolute path of the PEM file trusted at login, reused by later commands. */
  caFile: string | null;
  /** The `coffer_session` cookie value. */
  cookie: string;
  user: { id: string; email: string; name: string };
  /** base64url: X25519 secret (32 bytes) and public key, Ed25519 secret (64 bytes) and public key. */
  keys: { encryption: string; encryptionPublic: string; signing: string; signingPublic: string };
  createdAt: string;
  /**
   * The highest version of the user's signed key pins this machine has seen
   * (GET /v1/me/key-pins): a lower one from the server is a rollback.
   */
  keyPinsVersion?: number;
}

function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'coffer');
}

export const sessionPath = (env: NodeJS.ProcessEnv = process.env): string =>
  join(configDir(env), 'session.json');

/** The stored session, or `null` when there is none. Refuses a file others can read. */
export function readSession(path = sessionPath()): StoredSession | null {
  let stat;
  try {
    stat = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if (!stat.isFile()) {
    throw new CliError(
      'insecure_session_file',
      `${path} is not a regular file; refusing to use it`,
    );
  }
  const mode = stat.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new CliError(
      'insecure_session_file',
      `${path} has mode 0${mode.toString(8)}, broader than 0600: it holds your private keys; run \`chmod 600 ${path}\` if you trust its contents, or \`coffer login\` again`,
    );
  }
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) {
    throw new CliError(
      'insecure_session_file',
      `${path} belongs to another user; refusing to use it`,
    );
  }
  let session: StoredSession;
  try {
    session = JSON.parse(readFileSync(path, 'utf8')) as StoredSession;
  } catch {
    throw new CliError(
      'invalid_session_file',
      `${path} is not valid JSON; run \`coffer login\` again`,
    );
  }
  if (session?.version !== 1 || typeof session.cookie !== 'string' || !session.keys) {
    throw new CliError(
      'invalid_session_file',
      `${path} is not a Coffer session; run \`coffer login\` again`,
    );
  }
  return session;
}

/** Writes the session atomically with mode 0600 (directory 0700). */
export function writeSession(session: StoredSession, path = sessionPath()): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, `${JSON.stringify(session, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Deletes the stored session; true when there was one. */
export function deleteSession(path = sessionPath()): boolean {
  try {
    rmSync(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
