import { randomBytes } from 'node:crypto';
import { activeClaim } from './db/write-claims.js';

/** Identifier prefixes; the suffix is 20 random base62 characters (≈119 bits). */
export const ID_PREFIX = {
  project: 'proj',
  member: 'mbr',
  user: 'usr',
  environment: 'env',
  secret: 'sec',
  secretVersion: 'ver',
  apiKey: 'key',
  ciToken: 'cit',
  session: 'ses',
  auditEvent: 'evt',
  grant: 'grt',
  outbox: 'msg',
  webhook: 'whk',
  webhookDelivery: 'whd',
  webhookAttempt: 'wha',
  override: 'ovr',
} as const;

type IdKind = keyof typeof ID_PREFIX;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SUFFIX_LENGTH = 20;

/**
 * CSPRNG bytes drawn 4 KiB at a time: one `randomBytes` per 150-odd ids
 * instead of one per id (a write creates several: secret, version, audit event).
 */
let pool = Buffer.alloc(0);
let offset = 0;
function randomByte(): number {
  if (offset >= pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  return pool[offset++]!;
}

export function newId(kind: IdKind): string {
  // A request with an idempotency key draws its ids from the key, so that a
  // repeat makes the same ones (db/write-claims.ts); others from the CSPRNG.
  // Ids made inside the write itself are not made again by a repeat (it skips
  // the write), so only those made around it need to come from the key.
  const claim = activeClaim();
  const bytes = claim && !claim.writing ? claim.idBytes(kind) : null;
  let i = 0;
  const next = bytes ? () => bytes[i++ % bytes.length]! : randomByte;
  // Rejection sampling keeps every character uniform over the 62-letter alphabet.
  let suffix = '';
  while (suffix.length < SUFFIX_LENGTH) {
    const byte = next();
    if (byte < 248) suffix += ALPHABET[byte % 62];
  }
  return `${ID_PREFIX[kind]}_${suffix}`;
}

export function idPattern(kind: IdKind): string {
  return `^${ID_PREFIX[kind]}_[0-9A-Za-z]{${SUFFIX_LENGTH}}$`;
}

const PATTERNS = new Map<IdKind, RegExp>();

export function isId(kind: IdKind, value: string): boolean {
  let pattern = PATTERNS.get(kind);
  if (!pattern) {
    pattern = new RegExp(idPattern(kind));
    PATTERNS.set(kind, pattern);
  }
  return value.length === ID_PREFIX[kind].length + 1 + SUFFIX_LENGTH && pattern.test(value);
}

/**
 * `value` as a SQL string literal, for the few statements that travel without
 * parameters (see `inSharedProjectTransaction`): only a well-formed id of
 * `kind` is accepted, so nothing but base62 ever reaches the SQL text.
 */
export function idLiteral(kind: IdKind, value: string): string {
  if (!isId(kind, value)) {
    const article = /^[aeiou]/.test(kind) ? 'an' : 'a';
    throw new Error(`not ${article} ${kind} id: ${JSON.stringify(value)}`);
  }
  return `'${value}'`;
}
