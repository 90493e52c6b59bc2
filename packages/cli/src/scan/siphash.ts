/**
 * SipHash-2-4 (Aumasson and Bernstein, 2012) of at most 8 bytes: a keyed
 * pseudorandom function made for short inputs, fast enough to run at every
 * position of a staged diff. The scan's cache keeps the keyed hashes of the
 * patterns' first bytes; without the 128-bit key they reveal nothing.
 *
 * JavaScript has no 64-bit integers that are fast, so each 64-bit word is two
 * unsigned 32-bit halves. The result is left in `out` ([high, low]).
 */

/** The key as four little-endian 32-bit words: k0 low, k0 high, k1 low, k1 high. */
export type SipKey = Int32Array;

export function sipKey(key: Uint8Array): SipKey {
  if (key.length !== 16) throw new RangeError('a SipHash key is 16 bytes');
  const view = new DataView(key.buffer, key.byteOffset, 16);
  return Int32Array.of(
    view.getInt32(0, true),
    view.getInt32(4, true),
    view.getInt32(8, true),
    view.getInt32(12, true),
  );
}

/**
 * SipHash-2-4 of `buf[at, at + length)`, `length` ≤ 8, into `out` as
 * [high 32 bits, low 32 bits] of the 64-bit result (as signed 32-bit integers).
 */
export function sipHash(
  key: SipKey,
  buf: Uint8Array,
  at: number,
  length: number,
  out: Int32Array,
): void {
  const k0l = key[0]!;
  const k0h = key[1]!;
  const k1l = key[2]!;
  const k1h = key[3]!;
  // "somepseudorandomlygeneratedbytes"
  let v0l = k0l ^ 0x70736575;
  let v0h = k0h ^ 0x736f6d65;
  let v1l = k1l ^ 0x6e646f6d;
  let v1h = k1h ^ 0x646f7261;
  let v2l = k0l ^ 0x6e657261;
  let v2h = k0h ^ 0x6c796765;
  let v3l = k1l ^ 0x79746573;
  let v3h = k1h ^ 0x74656462;
  let t = 0;
  let u = 0;
  // The message: one full block when length is 8, then the last block (the
  // remaining bytes and the length in the top byte).
  const blocks = length === 8 ? 2 : 1;
  let ml = 0;
  let mh = 0;
  let rounds = 2;
  for (let phase = 0; phase < blocks + 1; phase++) {
    if (phase < blocks) {
      if (phase === 0 && length === 8) {
        ml = buf[at]! | (buf[at + 1]! << 8) | (buf[at + 2]! << 16) | (buf[at + 3]! << 24);
        mh = buf[at + 4]! | (buf[at + 5]! << 8) | (buf[at + 6]! << 16) | (buf[at + 7]! << 24);
      } else {
        ml = 0;
        mh = length << 24;
        const rest = length === 8 ? 0 : length;
        for (let i = 0; i < rest; i++) {
          if (i < 4) ml |= buf[at + i]! << (8 * i);
          else mh |= buf[at + i]! << (8 * (i - 4));
        }
      }
      v3l ^= ml;
      v3h ^= mh;
      rounds = 2;
    } else {
      v2l ^= 0xff;
      rounds = 4;
    }
    for (let r = 0; r < rounds; r++) {
      // v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
      t = (v0l + v1l) | 0;
      v0h = (v0h + v1h + (t >>> 0 < v0l >>> 0 ? 1 : 0)) | 0;
      v0l = t;
      t = (v1h << 13) | (v1l >>> 19);
      v1l = (v1l << 13) | (v1h >>> 19);
      v1h = t;
      v1l ^= v0l;
      v1h ^= v0h;
      t = v0l;
      v0l = v0h;
      v0h = t;
      // v2 += v3; v3 = rotl(v3, 16); v3 ^= v2
      t = (v2l + v3l) | 0;
      v2h = (v2h + v3h + (t >>> 0 < v2l >>> 0 ? 1 : 0)) | 0;
      v2l = t;
      t = (v3h << 16) | (v3l >>> 16);
      v3l = (v3l << 16) | (v3h >>> 16);
      v3h = t;
      v3l ^= v2l;
      v3h ^= v2h;
      // v0 += v3; v3 = rotl(v3, 21); v3 ^= v0
      t = (v0l + v3l) | 0;
      v0h = (v0h + v3h + (t >>> 0 < v0l >>> 0 ? 1 : 0)) | 0;
      v0l = t;
      t = (v3h << 21) | (v3l >>> 11);
      v3l = (v3l << 21) | (v3h >>> 11);
      v3h = t;
      v3l ^= v0l;
      v3h ^= v0h;
      // v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
      t = (v2l + v1l) | 0;
      v2h = (v2h + v1h + (t >>> 0 < v2l >>> 0 ? 1 : 0)) | 0;
      v2l = t;
      t = (v1h << 17) | (v1l >>> 15);
      v1l = (v1l << 17) | (v1h >>> 15);
      v1h = t;
      v1l ^= v2l;
      v1h ^= v2h;
      t = v2l;
      v2l = v2h;
      v2h = t;
    }
    if (phase < blocks) {
      v0l ^= ml;
      v0h ^= mh;
    }
  }
  u = v0h ^ v1h ^ v2h ^ v3h;
  t = v0l ^ v1l ^ v2l ^ v3l;
  out[0] = u;
  out[1] = t;
}
