import { variantsOf, type Encoding } from './encodings.js';
import { Matcher } from './matcher.js';

/** One occurrence: which secret (index into the scan's list), in which form, where (1-based). */
export interface Hit {
  secret: number;
  encoding: Encoding;
  line: number;
  column: number;
}

/** Line and column (in code points since the line's start) where a buffer begins. */
interface Cursor {
  line: number;
  column: number;
}

/** Bytes scanned per window of a stream; windows overlap by the longest pattern. */
const WINDOW = 8 << 20;
/** Git's heuristic: a NUL byte in the first 8,000 bytes makes a file binary. */
const BINARY_PROBE = 8000;

export const looksBinary = (buf: Uint8Array): boolean =>
  buf.subarray(0, BINARY_PROBE).indexOf(0) !== -1;

/**
 * Every encoded form of every value in one matcher. The forms are copied into
 * the matcher and zeroed right away; `wipe()` zeroes the matcher.
 */
export class SecretScanner {
  private readonly matcher: Matcher;
  private readonly patternSecret: Int32Array;
  private readonly patternLength: Int32Array;
  private readonly patternEncoding: Encoding[] = [];
  readonly patternCount: number;

  constructor(values: readonly { bytes: Buffer; text: string }[]) {
    const patterns: Buffer[] = [];
    const secrets: number[] = [];
    values.forEach((value, i) => {
      for (const variant of variantsOf(value.bytes, value.text)) {
        patterns.push(variant.bytes);
        secrets.push(i);
        this.patternEncoding.push(variant.encoding);
      }
    });
    this.patternSecret = Int32Array.from(secrets);
    this.patternLength = Int32Array.from(patterns.map((p) => p.length));
    this.patternCount = patterns.length;
    this.matcher = new Matcher(patterns);
    for (const p of patterns) p.fill(0);
  }

  /** The hits in a whole buffer (a file, a blob, a diff's added lines). */
  scanBuffer(buf: Uint8Array): Hit[] {
    return this.scanWindow(buf, buf.length, { line: 1, column: 0 });
  }

  /** The hits in a stream of any length, scanned in overlapping windows. */
  async scanStream(chunks: AsyncIterable<Uint8Array>): Promise<{ hits: Hit[]; bytes: number }> {
    const hits: Hit[] = [];
    const cursor: Cursor = { line: 1, column: 0 };
    const overlap = Math.max(0, this.matcher.maxLength - 1);
    let pending: Uint8Array[] = [];
    let pendingLength = 0;
    let bytes = 0;
    const flush = (final: boolean) => {
      while (pendingLength >= WINDOW + overlap || (final && pendingLength > 0)) {
        const window = Buffer.concat(pending, pendingLength);
        const end = final ? Math.min(WINDOW, window.length) : WINDOW;
        hits.push(...this.scanWindow(window, end, cursor));
        advance(window, end, cursor);
        const tail = Buffer.from(window.subarray(end));
        window.fill(0);
        pending = tail.length > 0 ? [tail] : [];
        pendingLength = tail.length;
        if (final && tail.length === 0) break;
      }
    };
    for await (const chunk of chunks) {
      bytes += chunk.length;
      pending.push(chunk);
      pendingLength += chunk.length;
      flush(false);
    }
    flush(true);
    return { hits, bytes };
  }

  private scanWindow(buf: Uint8Array, end: number, cursor: Cursor): Hit[] {
    const found: { pattern: number; start: number }[] = [];
    this.matcher.scan(buf, end, (pattern, start) => found.push({ pattern, start }));
    if (found.length === 0) return [];
    found.sort((a, b) => a.start - b.start || a.pattern - b.pattern);
    const hits: Hit[] = [];
    const seen = new Set<string>();
    const locate = locator(buf, cursor);
    for (const { pattern, start } of found) {
      const secret = this.patternSecret[pattern]!;
      const key = `${secret}:${start}`;
      if (seen.has(key)) continue;
      seen.add(key);
      let encoding = this.patternEncoding[pattern]!;
      if (
        (encoding === 'raw' || encoding === 'url-encoded') &&
        inUserinfo(buf, start, start + this.patternLength[pattern]!)
      )
        encoding = 'url-userinfo';
      hits.push({ secret, encoding, ...locate(start) });
    }
    return hits;
  }

  wipe(): void {
    this.matcher.wipe();
  }
}

/** Whether `buf[start, end)` is the password of a `scheme://user:password@host` URL. */
function inUserinfo(buf: Uint8Array, start: number, end: number): boolean {
  if (buf[start - 1] !== 0x3a || buf[end] !== 0x40) return false; // ':' before, '@' after
  // Back from the ':' over the user name to `://`.
  for (let i = start - 2; i >= Math.max(2, start - 256); i--) {
    const b = buf[i]!;
    if (b === 0x2f) return buf[i - 1] === 0x2f && buf[i - 2] === 0x3a; // `://`
    if (b === 0x40 || b === 0x3a || b <= 0x20) return false;
  }
  return false;
}

/** Converts ascending offsets of `buf` to lines and columns (code points, 1-based). */
function locator(buf: Uint8Array, cursor: Cursor) {
  let line = cursor.line;
  let lineStart = -1; // -1: the line began before this buffer
  let pos = 0;
  return (offset: number): { line: number; column: number } => {
    for (let nl = buf.indexOf(10, pos); nl !== -1 && nl < offset; nl = buf.indexOf(10, pos)) {
      line++;
      lineStart = nl;
      pos = nl + 1;
    }
    const from = lineStart + 1;
    const before = lineStart < 0 ? cursor.column : 0;
    return { line, column: before + codePoints(buf, from, offset) + 1 };
  };
}

/** Moves the cursor past `buf[0, end)`. */
function advance(buf: Uint8Array, end: number, cursor: Cursor): void {
  let last = -1;
  for (let nl = buf.indexOf(10); nl !== -1 && nl < end; nl = buf.indexOf(10, nl + 1)) {
    cursor.line++;
    last = nl;
  }
  cursor.column =
    last < 0 ? cursor.column + codePoints(buf, 0, end) : codePoints(buf, last + 1, end);
}

/** UTF-8 code points in `buf[from, to)`: the bytes that are not continuation bytes. */
function codePoints(buf: Uint8Array, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if ((buf[i]! & 0xc0) !== 0x80) n++;
  return n;
}
