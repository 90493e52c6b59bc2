/**
 * The forms a value takes when it leaks: as it is, escaped in JSON, encoded in
 * a URL, in base64 (standard or URL-safe, at any alignment inside a longer
 * base64 stream) and in hex. Every form is built straight into a Buffer (never
 * a string) so it can be zeroed after the scan.
 */

export type Encoding =
  | 'raw'
  | 'json-escaped'
  | 'url-encoded'
  | 'base64'
  | 'base64url'
  | 'hex'
  /** A raw or URL-encoded match between `scheme://user:` and `@`: a password in a connection URL. */
  | 'url-userinfo';

export interface Variant {
  encoding: Encoding;
  bytes: Buffer;
}

const STANDARD = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/');
const URL_SAFE = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_');
const HEX_LOWER = Buffer.from('0123456789abcdef');
const HEX_UPPER = Buffer.from('0123456789ABCDEF');

/**
 * Every distinct form of `raw` (the value's UTF-8 bytes; `text` is the same
 * value as a string, needed for JSON's escapes of code units). The first form
 * of each byte string wins, so an alphanumeric value is found as `raw`.
 */
export function variantsOf(raw: Buffer, text: string): Variant[] {
  const out: Variant[] = [];
  const add = (encoding: Encoding, bytes: Buffer) => {
    if (bytes.length === 0 || out.some((v) => v.bytes.equals(bytes))) bytes.fill(0);
    else out.push({ encoding, bytes });
  };
  add('raw', Buffer.from(raw));
  // Most tokens are all letters, digits and `-._~`: then both are the raw value, not worth building.
  if (raw.some((b) => !UNRESERVED[b])) {
    // JSON.stringify's escapes; the same with non-ASCII as \uXXXX (Python's json.dumps);
    // and with `/` as `\/` (PHP's json_encode).
    add('json-escaped', jsonEscaped(text, false, false));
    add('json-escaped', jsonEscaped(text, true, false));
    add('json-escaped', jsonEscaped(text, false, true));
    // encodeURIComponent; every byte but the unreserved ones; both with lower-case hex too.
    for (const lower of [false, true]) {
      add('url-encoded', percentEncoded(raw, COMPONENT_SAFE, lower));
      add('url-encoded', percentEncoded(raw, UNRESERVED, lower));
    }
  }
  for (const alignment of [0, 1, 2]) {
    add('base64', base64Inner(raw, alignment, STANDARD));
    add('base64url', base64Inner(raw, alignment, URL_SAFE));
  }
  add('hex', hex(raw, HEX_LOWER));
  add('hex', hex(raw, HEX_UPPER));
  return out;
}

const UNRESERVED = new Uint8Array(256);
for (const c of Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~'))
  UNRESERVED[c] = 1;
const COMPONENT_SAFE = Uint8Array.from(UNRESERVED);
for (const c of Buffer.from("!'()*")) COMPONENT_SAFE[c] = 1;

function percentEncoded(raw: Buffer, safe: Uint8Array, lower: boolean): Buffer {
  const digits = lower ? HEX_LOWER : HEX_UPPER;
  const out = Buffer.allocUnsafe(raw.length * 3);
  let n = 0;
  for (const b of raw) {
    if (safe[b]) out[n++] = b;
    else {
      out[n++] = 0x25; // %
      out[n++] = digits[b >> 4]!;
      out[n++] = digits[b & 15]!;
    }
  }
  return finish(out, n);
}

function hex(raw: Buffer, digits: Buffer): Buffer {
  const out = Buffer.allocUnsafe(raw.length * 2);
  raw.forEach((b, i) => {
    out[2 * i] = digits[b >> 4]!;
    out[2 * i + 1] = digits[b & 15]!;
  });
  return out;
}

/**
 * The characters of base64 that depend only on `raw` when it starts
 * `alignment` bytes into a 3-byte group of a longer stream: the first 0, 2 or
 * 3 characters mix in the bytes before it, and a last partial group's final
 * character mixes in the bytes after it.
 */
function base64Inner(raw: Buffer, alignment: number, alphabet: Buffer): Buffer {
  const bytes = Buffer.allocUnsafe(alignment + raw.length);
  bytes.fill(0, 0, alignment);
  raw.copy(bytes, alignment);
  const full = Math.floor(bytes.length / 3) * 3;
  const out = Buffer.allocUnsafe(Math.ceil((bytes.length * 4) / 3));
  let n = 0;
  for (let i = 0; i < full; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[n++] = alphabet[v >> 18]!;
    out[n++] = alphabet[(v >> 12) & 63]!;
    out[n++] = alphabet[(v >> 6) & 63]!;
    out[n++] = alphabet[v & 63]!;
  }
  const left = bytes.length - full;
  if (left > 0) {
    const v = (bytes[full]! << 16) | (left === 2 ? bytes[full + 1]! << 8 : 0);
    out[n++] = alphabet[v >> 18]!;
    out[n++] = alphabet[(v >> 12) & 63]!;
    if (left === 2) out[n++] = alphabet[(v >> 6) & 63]!;
    n--; // the last character also holds bits of whatever follows
  }
  bytes.fill(0);
  const skip = [0, 2, 3][alignment]!;
  const inner = Buffer.from(out.subarray(skip, Math.max(skip, n)));
  out.fill(0);
  return inner;
}

/** `text` as it appears between the quotes of a JSON string. */
function jsonEscaped(text: string, asciiOnly: boolean, slash: boolean): Buffer {
  const out = Buffer.allocUnsafe(text.length * 6 + 4);
  let n = 0;
  const put = (ascii: string) => {
    for (let k = 0; k < ascii.length; k++) out[n++] = ascii.charCodeAt(k);
  };
  const unicode = (code: number) => put(`\\u${code.toString(16).padStart(4, '0')}`);
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x22) put('\\"');
    else if (code === 0x5c) put('\\\\');
    else if (code === 0x2f && slash) put('\\/');
    else if (code < 0x20) {
      const short = SHORT_ESCAPES[code];
      if (short) put(short);
      else unicode(code);
    } else if (code < 0x80) out[n++] = code;
    else if (asciiOnly) unicode(code);
    else {
      // One code point in UTF-8 (a surrogate pair is one 4-byte sequence).
      const point = text.codePointAt(i)!;
      if (point > 0xffff) i++;
      n = utf8(point, out, n);
    }
  }
  return finish(out, n);
}

function utf8(point: number, out: Buffer, n: number): number {
  if (point < 0x800) {
    out[n++] = 0xc0 | (point >> 6);
  } else if (point < 0x10000) {
    out[n++] = 0xe0 | (point >> 12);
    out[n++] = 0x80 | ((point >> 6) & 63);
  } else {
    out[n++] = 0xf0 | (point >> 18);
    out[n++] = 0x80 | ((point >> 12) & 63);
    out[n++] = 0x80 | ((point >> 6) & 63);
  }
  out[n++] = 0x80 | (point & 63);
  return n;
}

const SHORT_ESCAPES: Record<number, string> = {
  8: '\\b',
  9: '\\t',
  10: '\\n',
  12: '\\f',
  13: '\\r',
};

/** The first `n` bytes of `out` in a buffer of their own; `out` is zeroed. */
function finish(out: Buffer, n: number): Buffer {
  const copy = Buffer.from(out.subarray(0, n));
  out.fill(0);
  return copy;
}
