import { randomBytes } from 'node:crypto';

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
  // Rejection sampling keeps every character uniform over the 62-letter alphabet.
  let suffix = '';
  while (suffix.length < SUFFIX_LENGTH) {
    const byte = randomByte();
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
