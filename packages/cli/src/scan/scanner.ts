import { variantsOf, type Encoding } from './encodings.js';
import { Matcher, type OnMatch } from './matcher.js';

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

/** What the scanner needs of a matcher: the plain one (values) or the keyed one (the cache). */
export interface PatternMatcher {
  scan(buf: Uint8Array, end: number, onMatch: OnMatch): void;
  readonly maxLength: number;
  wipe(): void;
}

/** Per pattern: its secret (index into the scan's list), length and encoding. */
export interface PatternTable {
  secret: Int32Array;
  length: Int32Array;
  encoding: Encoding[];
}

/**
 * Every encoded form of every value in one matcher. The forms are copied into
 * the matcher and zeroed right away; `wipe()` zeroes the matcher. With
 * `tagger`, each form is also handed to it (for the keyed-hash cache) before
 * it is zeroed.
 */
export class SecretScanner {
  private readonly matcher: PatternMatcher;
  readonly patterns: PatternTable;
  readonly patternCount: number;

  constructor(
    source:
      | readonly { bytes: Buffer; text: string }[]
      | { matcher: PatternMatcher; patterns: PatternTable },
    tagger?: (patterns: readonly Buffer[], table: PatternTable) => void,
  ) {
    if (!Array.isArray(source)) {
      const given = source as { matcher: PatternMatcher; patterns: PatternTable };
      this.matcher = given.matcher;
      this.patterns = given.patterns;
      this.patternCount = given.patterns.length.length;
      return;
    }
    const values = source as readonly { bytes: Buffer; text: string }[];
    const patterns: Buffer[] = [];
    const secrets: number[] = [];
    const encodings: Encoding[] = [];
    values.forEach((value, i) => {
      for (const variant of variantsOf(value.bytes, value.text)) {
        patterns.push(variant.bytes);
        secrets.push(i);
        encodings.push(variant.encoding);
      }
    });
    this.patterns = {
      secret: Int32Array.from(secrets),
      length: Int32Array.from(patterns.map((p) => p.length)),
      encoding: encodings,
    };
    this.patternCount = patterns.length;
    this.matcher = new Matcher(patterns);
    tagger?.(patterns, this.patterns);
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
    this.scanWrapped(buf, end, found);
    if (found.length === 0) return [];
    found.sort((a, b) => a.start - b.start || a.pattern - b.pattern);
    const hits: Hit[] = [];
    const seen = new Set<string>();
    const locate = locator(buf, cursor);
    for (const { pattern, start } of found) {
      const secret = this.patterns.secret[pattern]!;
      const key = `${secret}:${start}`;
      if (seen.has(key)) continue;
      seen.add(key);
      let encoding = this.patterns.encoding[pattern]!;
      if (
        (encoding === 'raw' || encoding === 'url-encoded') &&
        inUserinfo(buf, start, start + this.patterns.length[pattern]!)
      )
        encoding = 'url-userinfo';
      hits.push({ secret, encoding, ...locate(start) });
    }
    return hits;
  }

  /**
   * Base64 broken into lines (PEM, MIME, `base64` without `-w0`, a YAML block
   * scalar): each run of two or more lines holding only base64 characters
   * (the first at least 16, indentation and `\r` aside) is joined without its
   * line breaks and matched again; a base64 form found across a break is
   * reported where it starts in the file. Matches within one line were found
   * by the scan of the file itself.
   */
  private scanWrapped(
    buf: Uint8Array,
    end: number,
    found: { pattern: number; start: number }[],
  ): void {
    let lines: number[] = []; // start, end of each line of the current run
    const flush = () => {
      if (lines.length >= 4 && lines[1]! - lines[0]! >= 16)
        this.matchJoined(buf, end, lines, found);
      lines = [];
    };
    for (let at = 0; at < buf.length;) {
      if (at >= end && lines.length === 0) break;
      let nl = buf.indexOf(10, at);
      if (nl < 0) nl = buf.length;
      let from = at;
      while (from < nl && (buf[from] === 0x20 || buf[from] === 0x09)) from++;
      let to = nl;
      if (to > from && buf[to - 1] === 0x0d) to--;
      // The last character first: most lines of code and prose end in one that is not base64.
      let base64 = to - from >= 4 && BASE64_CHAR[buf[to - 1]!] === 1;
      for (let i = from; base64 && i < to - 1; i++) base64 = BASE64_CHAR[buf[i]!] === 1;
      if (base64) lines.push(from, to);
      else flush();
      at = nl + 1;
    }
    flush();
  }

  private matchJoined(
    buf: Uint8Array,
    end: number,
    lines: number[],
    found: { pattern: number; start: number }[],
  ): void {
    const parts: Uint8Array[] = [];
    const joinedAt: number[] = []; // where each line starts in the joined text
    let length = 0;
    for (let i = 0; i < lines.length; i += 2) {
      joinedAt.push(length);
      parts.push(buf.subarray(lines[i]!, lines[i + 1]!));
      length += lines[i + 1]! - lines[i]!;
    }
    const joined = Buffer.concat(parts, length);
    const lineOf = (offset: number) => {
      let lo = 0;
      let hi = joinedAt.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (joinedAt[mid]! <= offset) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    };
    this.matcher.scan(joined, joined.length, (pattern, start) => {
      const encoding = this.patterns.encoding[pattern];
      if (encoding !== 'base64' && encoding !== 'base64url') return;
      const first = lineOf(start);
      if (lineOf(start + this.patterns.length[pattern]! - 1) === first) return;
      const at = lines[2 * first]! + (start - joinedAt[first]!);
      if (at < end) found.push({ pattern, start: at });
    });
    joined.fill(0);
  }

  wipe(): void {
    this.matcher.wipe();
  }
}

/** Characters of standard and URL-safe base64, padding included. */
const BASE64_CHAR = new Uint8Array(256);
for (const c of Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_='))
  BASE64_CHAR[c] = 1;

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
