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
} as const;

export type IdKind = keyof typeof ID_PREFIX;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SUFFIX_LENGTH = 20;

export function newId(kind: IdKind): string {
  // Rejection sampling keeps every character uniform over the 62-letter alphabet.
  let suffix = '';
  while (suffix.length < SUFFIX_LENGTH) {
    for (const byte of randomBytes(32)) {
      if (byte < 248 && suffix.length < SUFFIX_LENGTH) suffix += ALPHABET[byte % 62];
    }
  }
  return `${ID_PREFIX[kind]}_${suffix}`;
}

export function idPattern(kind: IdKind): string {
  return `^${ID_PREFIX[kind]}_[0-9A-Za-z]{${SUFFIX_LENGTH}}$`;
}

export function isId(kind: IdKind, value: string): boolean {
  return (
    value.length === ID_PREFIX[kind].length + 1 + SUFFIX_LENGTH &&
    new RegExp(idPattern(kind)).test(value)
  );
}
