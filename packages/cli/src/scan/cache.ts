import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Encoding } from './encodings.js';
import type { OnMatch } from './matcher.js';
import type { PatternMatcher, PatternTable } from './scanner.js';
import { sipHash, sipKey, type SipKey } from './siphash.js';
import type { NotScanned, ScanSecret } from './values.js';

/**
 * The pre-commit hook's keyed-hash cache: what `coffer scan --staged` needs to
 * find the team's values in a diff without fetching and decrypting them, and
 * without any value (or part of one) on the disk.
 *
 * Per pattern (each encoded form of each value) it keeps its length, a keyed
 * hash of its first bytes (SipHash-2-4 of up to 8 bytes: the anchor) and a
 * keyed hash of the whole (HMAC-SHA-256, 128 bits). The scan computes the
 * anchor's keyed hash at every position of the diff; only where it equals a
 * pattern's does it hash the text of that pattern's length and compare. The
 * keys come from the caller's own secret (a login's private key, a token's
 * key part) through HKDF, so they are never on the disk; the file is
 * encrypted and authenticated with a key of the same origin (AES-256-GCM), so
 * it shows nothing (not even the secrets' names) and a changed file is
 * refused, not trusted. It is valid while the server says, in one round trip,
 * that nothing it was built from has changed (see `values.ts`).
 */

const MAGIC = Buffer.from('coffer-scan-cache\0');
const VERSION = 2;
/** Bytes of each pattern under the anchor hash (all of a shorter one). */
export const KEYED_ANCHOR = 8;
/** A form this long is looked for every STRIDE bytes, through its anchors at offsets 0 to STRIDE - 1. */
const STRIDE = 4;
const LONG = KEYED_ANCHOR + STRIDE - 1;
/** Anchor hashes kept per pattern: [high, low] at each offset (a short pattern uses the first). */
const TAGS = 2 * STRIDE;
/** Bytes of each pattern's full keyed hash. */
const FULL_TAG = 16;

export interface CacheKeys {
  /** Names the file (an HMAC of what it is for), so its name says nothing either. */
  name: Buffer;
  anchor: SipKey;
  full: Buffer;
  seal: Buffer;
}

/** The keys, from the secret only this caller holds. */
export function cacheKeys(material: Uint8Array): CacheKeys {
  const okm = Buffer.from(
    hkdfSync('sha256', material, Buffer.alloc(0), 'coffer scan cache v1', 112),
  );
  const keys = {
    name: Buffer.from(okm.subarray(0, 32)),
    anchor: sipKey(okm.subarray(32, 48)),
    full: Buffer.from(okm.subarray(48, 80)),
    seal: Buffer.from(okm.subarray(80, 112)),
  };
  okm.fill(0);
  return keys;
}

export function wipeKeys(keys: CacheKeys): void {
  keys.name.fill(0);
  keys.anchor.fill(0);
  keys.full.fill(0);
  keys.seal.fill(0);
}

/** `$XDG_CACHE_HOME/coffer/scan` (default `~/.cache/coffer/scan`). */
export function cacheDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache');
  return join(base, 'coffer', 'scan');
}

/** The file of one (server, project, environments, minimum length) for this credential. */
export function cachePath(keys: CacheKeys, descriptor: string, env = process.env): string {
  const name = createHmac('sha256', keys.name).update(descriptor).digest('hex').slice(0, 32);
  return join(cacheDirectory(env), `${name}.cache`);
}

/** The part of the cache that is not keyed hashes: who the patterns belong to, and how to check it. */
export interface CacheHeader {
  projectId: string;
  /** The environments scanned, each with the ETag of its check listing (see `values.ts`). */
  environments: { id: string; slug: string; etag: string }[];
  secrets: ScanSecret[];
  notScanned: NotScanned[];
}

export interface CachedScan {
  header: CacheHeader;
  patterns: PatternTable;
  /** Per pattern: its anchors' SipHash as [high, low], at offsets 0 to 3 (a short one: 0 only). */
  anchorTags: Int32Array;
  /** Per pattern: the first 16 bytes of HMAC-SHA-256 of the whole pattern. */
  fullTags: Buffer;
}

const ENCODINGS: Encoding[] = ['raw', 'json-escaped', 'url-encoded', 'base64', 'base64url', 'hex'];

/** The keyed hashes of the patterns, as the scanner builds them (before it zeroes them). */
export function keyedTags(
  keys: CacheKeys,
  patterns: readonly Buffer[],
): { anchorTags: Int32Array; fullTags: Buffer } {
  const anchorTags = new Int32Array(TAGS * patterns.length);
  const fullTags = Buffer.alloc(FULL_TAG * patterns.length);
  const out = new Int32Array(2);
  patterns.forEach((pattern, p) => {
    const offsets = pattern.length >= LONG ? STRIDE : 1;
    for (let j = 0; j < offsets; j++) {
      sipHash(keys.anchor, pattern, j, Math.min(KEYED_ANCHOR, pattern.length), out);
      anchorTags[TAGS * p + 2 * j] = out[0]!;
      anchorTags[TAGS * p + 2 * j + 1] = out[1]!;
    }
    fullTag(keys.full, pattern, 0, pattern.length).copy(fullTags, FULL_TAG * p);
  });
  return { anchorTags, fullTags };
}

function fullTag(key: Buffer, buf: Uint8Array, at: number, length: number): Buffer {
  return createHmac('sha256', key)
    .update(buf.subarray(at, at + length))
    .digest()
    .subarray(0, FULL_TAG);
}

/** Encrypts and writes the cache (0600, in a 0700 directory, renamed into place). */
export function writeCache(
  path: string,
  keys: CacheKeys,
  descriptor: string,
  cached: CachedScan,
): boolean {
  const header = Buffer.from(JSON.stringify(cached.header));
  const n = cached.patterns.length.length;
  const encodings = Uint8Array.from(cached.patterns.encoding, (e) => ENCODINGS.indexOf(e));
  const length = Buffer.alloc(8);
  length.writeUInt32LE(header.length, 0);
  length.writeUInt32LE(n, 4);
  const plain = Buffer.concat([
    length,
    header,
    bytesOf(cached.patterns.secret),
    bytesOf(cached.patterns.length),
    encodings,
    bytesOf(cached.anchorTags),
    cached.fullTags,
  ]);
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keys.seal, nonce);
  cipher.setAAD(aad(descriptor));
  const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
  plain.fill(0);
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(temporary, Buffer.concat([MAGIC, nonce, cipher.getAuthTag(), sealed]), {
      mode: 0o600,
    });
    chmodSync(temporary, 0o600);
    renameSync(temporary, path);
    return true;
  } catch {
    // A cache that cannot be written costs the next commit time, nothing else.
    rmSync(temporary, { force: true });
    return false;
  }
}

/** The cache, or null when there is none, it is of another version, or it fails authentication. */
export function readCache(path: string, keys: CacheKeys, descriptor: string): CachedScan | null {
  let file: Buffer;
  try {
    file = readFileSync(path);
  } catch {
    return null;
  }
  const body = MAGIC.length + 12 + 16;
  if (file.length < body + 8 || !file.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  let plain: Buffer;
  try {
    const decipher = createDecipheriv(
      'aes-256-gcm',
      keys.seal,
      file.subarray(MAGIC.length, MAGIC.length + 12),
    );
    decipher.setAAD(aad(descriptor));
    decipher.setAuthTag(file.subarray(MAGIC.length + 12, body));
    plain = Buffer.concat([decipher.update(file.subarray(body)), decipher.final()]);
  } catch {
    return null; // changed, truncated, or sealed with another credential's key
  }
  const headerLength = plain.readUInt32LE(0);
  const n = plain.readUInt32LE(4);
  let at = 8;
  const take = (bytes: number) => {
    const part = plain.subarray(at, at + bytes);
    at += bytes;
    return part;
  };
  const header = JSON.parse(take(headerLength).toString('utf8')) as CacheHeader;
  const secret = int32s(take(4 * n));
  const length = int32s(take(4 * n));
  const encoding = Array.from(take(n), (e) => ENCODINGS[e]!);
  const anchorTags = int32s(take(4 * TAGS * n));
  const fullTags = Buffer.from(take(FULL_TAG * n));
  plain.fill(0);
  return { header, patterns: { secret, length, encoding }, anchorTags, fullTags };
}

const aad = (descriptor: string) => Buffer.from(`coffer scan cache v${VERSION}\0${descriptor}`);

const bytesOf = (a: Int32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

function int32s(bytes: Buffer): Int32Array {
  const out = new Int32Array(bytes.length / 4);
  Buffer.from(out.buffer).set(bytes);
  return out;
}

/**
 * A matcher over keyed hashes only. A form of 11 bytes or more is looked for
 * every 4 bytes: the SipHash of the 8 bytes at each multiple of 4 is looked up
 * in an open-addressing table of the forms' anchors at their offsets 0 to 3
 * (one of which any occurrence holds at such a position); a shorter form's
 * anchor (its first 8 bytes, or all of it) is hashed at every position. At a
 * hit, the HMAC of the text of the form's length is compared with the form's.
 * It holds no pattern, so there is no value to wipe, only its keys. The cost
 * is a SipHash (about 0.4 µs) per 4 bytes: meant for diffs, not trees.
 */
export class KeyedMatcher implements PatternMatcher {
  readonly maxLength: number;
  /** Per group: the anchor length, its table of entries (pattern × offset + 1) and mask; group 0 is the long forms. */
  private readonly groups: { length: number; table: Int32Array; mask: number }[] = [];
  private readonly out = new Int32Array(2);

  constructor(
    private readonly keys: CacheKeys,
    private readonly patternLength: Int32Array,
    private readonly anchorTags: Int32Array,
    private readonly fullTags: Buffer,
  ) {
    const n = patternLength.length;
    let maxLength = 0;
    const entries = new Map<number, number[]>(); // anchor length (0: long) → entries
    for (let p = 0; p < n; p++) {
      const length = patternLength[p]!;
      maxLength = Math.max(maxLength, length);
      const key = length >= LONG ? 0 : Math.min(KEYED_ANCHOR, length);
      let list = entries.get(key);
      if (!list) entries.set(key, (list = []));
      if (key === 0) for (let j = 0; j < STRIDE; j++) list.push(p * STRIDE + j);
      else list.push(p * STRIDE);
    }
    this.maxLength = maxLength;
    for (const key of [...entries.keys()].sort((a, b) => a - b)) {
      const list = entries.get(key)!;
      let size = 16;
      while (size < list.length * 2) size *= 2;
      const table = new Int32Array(size); // entry + 1, or 0 for an empty slot
      const mask = size - 1;
      for (const e of list) {
        let slot = anchorTags[2 * e + 1]! & mask;
        while (table[slot] !== 0) slot = (slot + 1) & mask;
        table[slot] = e + 1;
      }
      this.groups.push({ length: key, table, mask });
    }
  }

  scan(buf: Uint8Array, end: number, onMatch: OnMatch): void {
    for (const { length, table, mask } of this.groups) {
      if (length === 0) {
        // Every fourth position; an occurrence starting at t holds anchor t mod 4… at the next multiple of 4.
        const stop = Math.min(buf.length - KEYED_ANCHOR, end + STRIDE - 2);
        for (let a = 0; a <= stop; a += STRIDE)
          this.probe(buf, end, a, KEYED_ANCHOR, table, mask, onMatch);
      } else {
        const stop = Math.min(end - 1, buf.length - length);
        for (let i = 0; i <= stop; i++) this.probe(buf, end, i, length, table, mask, onMatch);
      }
    }
  }

  private probe(
    buf: Uint8Array,
    end: number,
    at: number,
    length: number,
    table: Int32Array,
    mask: number,
    onMatch: OnMatch,
  ): void {
    const { anchorTags, patternLength, out } = this;
    sipHash(this.keys.anchor, buf, at, length, out);
    const hi = out[0]!;
    const lo = out[1]!;
    for (let slot = lo & mask; table[slot] !== 0; slot = (slot + 1) & mask) {
      const e = table[slot]! - 1;
      if (anchorTags[2 * e + 1] !== lo || anchorTags[2 * e] !== hi) continue;
      const p = (e / STRIDE) | 0;
      const start = at - (e % STRIDE);
      const size = patternLength[p]!;
      if (start < 0 || start >= end || start + size > buf.length) continue;
      if (
        size <= length ||
        fullTag(this.keys.full, buf, start, size).equals(
          this.fullTags.subarray(FULL_TAG * p, FULL_TAG * (p + 1)),
        )
      )
        onMatch(p, start);
    }
  }

  wipe(): void {
    for (const group of this.groups) group.table.fill(0);
    this.anchorTags.fill(0);
    this.fullTags.fill(0);
  }
}
