import { randomBytes } from 'node:crypto';
import { activeClaim } from './db/write-claims.js';

/**
 * Identifier prefixes; the suffix is 20 base62 characters: random (≈119
 * bits), or for the kinds in `TIME_ORDERED`, the time and then random.
 */
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
 * The rows every write appends (a secret's versions, the audit log, the
 * outbox, webhook deliveries and their attempts): their ids start with the
 * time they were made, 8 base62 digits of Unix milliseconds (in the
 * alphabet's order, which is ASCII's, so ids sort by time until the year
 * 8900), then 12 random characters (≈71 bits). Random ids put each new row
 * on a random page of its table's id index, so a SQLite group commit wrote
 * one page of the index per write and the checkpoint copied it again, more
 * often the larger the index (a write cost more the more rows there were);
 * ids made in time order go to the end of the index, as the rows themselves
 * do. The time is no secret: every such row holds its `created_at`.
 */
const TIME_ORDERED: ReadonlySet<IdKind> = new Set([
  'secretVersion',
  'auditEvent',
  'outbox',
  'webhookDelivery',
  'webhookAttempt',
]);
const TIME_DIGITS = 8;

/** `ms` as `TIME_DIGITS` base62 digits, most significant first. */
function timeDigits(ms: number): string {
  let digits = '';
  for (let rest = Math.max(0, Math.floor(ms)), i = 0; i < TIME_DIGITS; i++) {
    digits = ALPHABET[rest % 62]! + digits;
    rest = Math.floor(rest / 62);
  }
  return digits;
}

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
  // A time-ordered id made from the key takes the claim's instant, which a
  // repeat handled at the first attempt's instant shares.
  const claim = activeClaim();
  const fromKey = claim && !claim.writing ? claim : null;
  const bytes = fromKey ? fromKey.idBytes(kind) : null;
  let i = 0;
  const next = bytes ? () => bytes[i++ % bytes.length]! : randomByte;
  let suffix = TIME_ORDERED.has(kind)
    ? timeDigits(fromKey ? fromKey.at.getTime() : Date.now())
    : '';
  // Rejection sampling keeps every character uniform over the 62-letter alphabet.
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
