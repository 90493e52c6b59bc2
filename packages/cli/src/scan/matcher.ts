/**
 * A multi-pattern matcher over bytes whose cost per scanned byte does not grow
 * with the number of patterns: q-gram filters in front of a trie.
 *
 * Each pattern's first ANCHOR bytes (its anchor) go into a trie. An anchor of
 * at least 11 bytes (every form of a value of 8 characters or more but its
 * shortest base64 runs) is "long": the 8-byte grams at its offsets 0 to 3 go
 * into a blocked Bloom filter, each setting PROBES bits inside one 64-byte
 * line. Any occurrence of a long anchor then holds one of its grams at a text
 * offset that is a multiple of 4, so the scan tests only every fourth offset:
 * two 32-bit words, a multiply, and one cache line however large the filter
 * (up to 512 KB, about 16 bits per gram, well under 1 % false candidates). At
 * a candidate it walks the trie from each of the 4 starts whose anchor could
 * hold that gram. The other anchors (short values' forms, if any) go into a
 * small filter of their first 4 bytes tested at every byte, as before.
 *
 * Why grams of 8 bytes: with 4-byte grams, the hex forms of 10,000 values put
 * most 4-digit runs of a text into the filter (a hex form's first 4
 * characters are 2 bytes of the value), and the trie walks at those true
 * prefixes made 10,000 secrets scan at half the speed of 10. Why sampled: a
 * test every fourth byte is a quarter of the work and of the cache misses of
 * a large filter.
 *
 * Why not Aho-Corasick's automaton, which this started as: measured on this
 * project's bench, its per-byte table lookups spread over a transition table
 * that grows with the pattern count (a few MB at 10,000 secrets in 9 forms
 * each) and fall out of the CPU caches, so throughput fell about 10× from 10
 * to 10,000 secrets. The trie here is the automaton's goto function, walked
 * anchored instead of followed with failure links.
 *
 * The patterns are copies of secret values and their encodings: `wipe()`
 * fills the pattern store, the trie and the filters with zeros after the scan.
 */

/** Bytes of each pattern that go into the trie; the rest is compared at a hit. */
const ANCHOR = 12;
/** Every how many bytes the long anchors' filter is tested (the word size). */
const STRIDE = 4;
/** An anchor this long holds an 8-byte gram at each of its first STRIDE offsets. */
const LONG = 8 + STRIDE - 1;
/** Bits each gram sets in its line of the long anchors' filter. */
const PROBES = 6;

/** Bits of a filter for `grams` grams: about 32 each, from 4 Kbit up to 2^maxBits. */
function filterBits(grams: number, maxBits: number): number {
  let bits = 12;
  while (bits < maxBits && 2 ** bits < grams * 32) bits++;
  return bits;
}

/** The little-endian 32-bit word at `at` (bytes past the end read as 0). */
function word(buf: Uint8Array, at: number): number {
  return buf[at]! | (buf[at + 1]! << 8) | (buf[at + 2]! << 16) | (buf[at + 3]! << 24);
}

const gramMix = (first: number, second: number) => first ^ Math.imul(second, 0x85ebca77);

export type OnMatch = (pattern: number, start: number) => void;

export class Matcher {
  /** Every pattern's bytes, one after the other. */
  private readonly store: Buffer;
  private readonly patternStart: Int32Array;
  private readonly patternLength: Int32Array;
  /** Anchor → its patterns (CSR). */
  private readonly anchorPatternStart: Int32Array;
  private readonly anchorPatterns: Int32Array;
  /** The trie, breadth-first: root's children by byte; others' children contiguous, sorted. */
  private readonly rootChild = new Int32Array(256);
  private readonly firstChild: Int32Array;
  private readonly childCount: Int32Array;
  private readonly label: Uint8Array;
  /** The anchor a node ends, or -1. */
  private readonly anchorOf: Int32Array;
  /** The short anchors' q-gram filter, tested at every byte. */
  private readonly gram: number;
  private readonly bitmap: Uint8Array;
  private readonly bitShift: number;
  private readonly hasShort: boolean;
  /** The long anchors' filter of 8-byte grams, tested every STRIDE bytes. */
  private readonly longBitmap: Int32Array;
  private readonly lineShift: number;
  /** Per anchor: 1 if long. */
  private readonly long: Uint8Array;
  /** The longest pattern: how far a window must overlap the next. */
  readonly maxLength: number;

  constructor(patterns: readonly Uint8Array[]) {
    const count = patterns.length;
    this.patternStart = new Int32Array(count);
    this.patternLength = new Int32Array(count);
    let total = 0;
    let maxLength = 0;
    for (let p = 0; p < count; p++) {
      const length = patterns[p]!.length;
      if (length === 0) throw new RangeError('empty pattern');
      this.patternStart[p] = total;
      this.patternLength[p] = length;
      total += length;
      maxLength = Math.max(maxLength, length);
    }
    this.maxLength = maxLength;
    this.store = Buffer.alloc(total);
    for (let p = 0; p < count; p++) this.store.set(patterns[p]!, this.patternStart[p]);

    // Anchors, sorted and unique, each with the patterns that start with it. The
    // first 6 bytes as a number decide most comparisons without a byte loop.
    const keys = new Float64Array(count);
    for (let p = 0; p < count; p++) {
      let key = 0;
      for (let i = 0; i < 6; i++)
        key = key * 256 + (i < this.patternLength[p]! ? this.store[this.patternStart[p]! + i]! : 0);
      keys[p] = key;
    }
    const sorted = Array.from({ length: count }, (_, p) => p).sort(
      (a, b) => keys[a]! - keys[b]! || this.compareAnchors(a, b),
    );
    keys.fill(0);
    const anchors: number[] = []; // a representative pattern per anchor
    const groups: number[][] = [];
    for (const p of sorted) {
      const last = anchors[anchors.length - 1];
      if (last !== undefined && this.compareAnchors(last, p) === 0)
        groups[groups.length - 1]!.push(p);
      else {
        anchors.push(p);
        groups.push([p]);
      }
    }
    this.anchorPatternStart = new Int32Array(anchors.length + 1);
    this.anchorPatterns = new Int32Array(count);
    let at = 0;
    groups.forEach((group, a) => {
      this.anchorPatternStart[a] = at;
      for (const p of group) this.anchorPatterns[at++] = p;
    });
    this.anchorPatternStart[anchors.length] = at;
    const anchorLength = (p: number) => Math.min(ANCHOR, this.patternLength[p]!);

    // Long anchors (at least LONG bytes) go into the sampled filter: the 8-byte
    // grams at their offsets 0 to STRIDE - 1, so that any occurrence holds one
    // gram that starts at a multiple of STRIDE in the text. The others (short
    // values' forms) go into a filter of their first 4 bytes, tested at every byte.
    this.long = Uint8Array.from(anchors, (p) => (anchorLength(p) >= LONG ? 1 : 0));
    const shortAnchors = anchors.filter((_, a) => !this.long[a]);
    const longAnchors = anchors.filter((_, a) => this.long[a]);
    let gram = 4;
    for (const p of shortAnchors) gram = Math.min(gram, anchorLength(p));
    this.gram = gram;
    this.hasShort = shortAnchors.length > 0;
    const shortBits = filterBits(shortAnchors.length, 22);
    this.bitmap = new Uint8Array(2 ** (shortBits - 3));
    this.bitShift = 32 - shortBits;
    for (const p of shortAnchors) {
      const start = this.patternStart[p]!;
      let k = 0;
      for (let i = 0; i < gram; i++) k = (k << 8) | this.store[start + i]!;
      const h = Math.imul(k, 0x9e3779b1) >>> this.bitShift;
      this.bitmap[h >>> 3]! |= 1 << (h & 7);
      const h2 = Math.imul(k, 0x85ebca77) >>> this.bitShift;
      this.bitmap[h2 >>> 3]! |= 1 << (h2 & 7);
    }
    // A blocked Bloom filter: each gram sets PROBES bits in one 64-byte line,
    // so a test costs one cache line however large the filter is; about 16
    // bits per gram (up to 512 KB), for well under 1 % false candidates.
    let lineBits = 3;
    while (lineBits < 13 && 2 ** (lineBits + 9) < longAnchors.length * STRIDE * 16) lineBits++;
    this.longBitmap = new Int32Array(2 ** (lineBits + 4));
    this.lineShift = 32 - lineBits;
    for (const p of longAnchors) {
      for (let j = 0; j < STRIDE; j++) {
        const at = this.patternStart[p]! + j;
        const mix = gramMix(word(this.store, at), word(this.store, at + 4));
        const line = (Math.imul(mix, 0x9e3779b1) >>> this.lineShift) << 4;
        const g1 = Math.imul(mix, 0xc2b2ae3d);
        const g2 = Math.imul(mix, 0x27d4eb2f) | 1;
        for (let k = 0; k < PROBES; k++) {
          const bit = (g1 + Math.imul(k, g2)) >>> 23;
          this.longBitmap[line + (bit >>> 5)]! |= 1 << (bit & 31);
        }
      }
    }

    // The trie, depth-first from the sorted anchors: parent, label, depth of each node.
    let parent = new Int32Array(1024);
    let nodeLabel = new Uint8Array(1024);
    let depth = new Int32Array(1024);
    let ends = new Int32Array(1024).fill(-1);
    const grow = () => {
      const size = parent.length * 2;
      const p2 = new Int32Array(size);
      p2.set(parent);
      parent = p2;
      const l2 = new Uint8Array(size);
      l2.set(nodeLabel);
      nodeLabel = l2;
      const d2 = new Int32Array(size);
      d2.set(depth);
      depth = d2;
      const e2 = new Int32Array(size).fill(-1);
      e2.set(ends);
      ends = e2;
    };
    let nodes = 1;
    const path: number[] = [0];
    let previous = -1;
    anchors.forEach((p, a) => {
      const length = anchorLength(p);
      const start = this.patternStart[p]!;
      let common = 0;
      if (previous >= 0) {
        const prevStart = this.patternStart[previous]!;
        const prevLength = anchorLength(previous);
        while (
          common < length &&
          common < prevLength &&
          this.store[start + common] === this.store[prevStart + common]
        )
          common++;
      }
      path.length = common + 1;
      for (let i = common; i < length; i++) {
        if (nodes === parent.length) grow();
        const node = nodes++;
        parent[node] = path[i]!;
        nodeLabel[node] = this.store[start + i]!;
        depth[node] = i + 1;
        path.push(node);
      }
      ends[path[length]!] = a;
      previous = p;
    });

    // Breadth-first ids: sorting by depth, stable in creation order (which is
    // sorted order), makes each node's children contiguous and sorted by byte.
    let maxDepth = 0;
    for (let n = 0; n < nodes; n++) maxDepth = Math.max(maxDepth, depth[n]!);
    const nextId = new Int32Array(maxDepth + 2);
    for (let n = 0; n < nodes; n++) nextId[depth[n]! + 1]!++;
    for (let d = 1; d <= maxDepth + 1; d++) nextId[d]! += nextId[d - 1]!;
    const newId = new Int32Array(nodes);
    const order = new Int32Array(nodes);
    for (let n = 0; n < nodes; n++) {
      const id = nextId[depth[n]!]!++;
      newId[n] = id;
      order[id] = n;
    }
    this.firstChild = new Int32Array(nodes);
    this.childCount = new Int32Array(nodes);
    this.label = new Uint8Array(nodes);
    this.anchorOf = new Int32Array(nodes).fill(-1);
    this.rootChild.fill(-1);
    for (let id = 1; id < nodes; id++) {
      const n = order[id]!;
      this.label[id] = nodeLabel[n]!;
      this.anchorOf[id] = ends[n]!;
      const par = newId[parent[n]!]!;
      if (this.childCount[par] === 0) this.firstChild[par] = id;
      this.childCount[par]!++;
      if (par === 0) this.rootChild[nodeLabel[n]!] = id;
    }
    for (const scratch of [parent, nodeLabel, depth, ends, newId, order]) scratch.fill(0);
  }

  private compareAnchors(a: number, b: number): number {
    const la = Math.min(ANCHOR, this.patternLength[a]!);
    const lb = Math.min(ANCHOR, this.patternLength[b]!);
    const sa = this.patternStart[a]!;
    const sb = this.patternStart[b]!;
    const store = this.store;
    for (let i = 0; i < la && i < lb; i++) {
      const d = store[sa + i]! - store[sb + i]!;
      if (d !== 0) return d;
    }
    return la - lb;
  }

  /**
   * Calls `onMatch(pattern, start)` for every occurrence of a pattern that
   * starts in `buf[0, end)` and lies wholly inside `buf`, in order of start.
   */
  scan(buf: Uint8Array, end: number, onMatch: OnMatch): void {
    if (this.hasShort) this.scanShort(buf, end, onMatch);
    this.scanLong(buf, end, onMatch);
  }

  /** The short anchors: a 4-byte gram in a register, a bit tested per byte. */
  private scanShort(buf: Uint8Array, end: number, onMatch: OnMatch): void {
    const { bitmap, bitShift, gram } = this;
    const mask = gram === 4 ? -1 : 2 ** (8 * gram) - 1;
    // A candidate's gram ends gram - 1 bytes after its start.
    const stop = Math.min(buf.length, end + gram - 1);
    let k = 0;
    for (let i = 0; i < stop; i++) {
      k = ((k << 8) | buf[i]!) & mask;
      const h = Math.imul(k, 0x9e3779b1) >>> bitShift;
      if ((bitmap[h >>> 3]! & (1 << (h & 7))) === 0) continue;
      // A second bit of another hash: a tenth of the false candidates go no further.
      const h2 = Math.imul(k, 0x85ebca77) >>> bitShift;
      if ((bitmap[h2 >>> 3]! & (1 << (h2 & 7))) !== 0 && i >= gram - 1)
        this.walk(buf, i - gram + 1, 0, onMatch);
    }
  }

  /**
   * The long anchors: the 8-byte gram at every STRIDE-th offset (two 32-bit
   * words, the second read once and kept as the next gram's first), and at a
   * candidate a walk from each of the STRIDE starts whose anchor holds it.
   */
  private scanLong(buf: Uint8Array, end: number, onMatch: OnMatch): void {
    const { longBitmap: bitmap, lineShift } = this;
    // Gram starts a: multiples of 4 with a < end + STRIDE - 1 and a + 8 ≤ length.
    const stop = Math.min(buf.length - 8, end + STRIDE - 2);
    if (stop < 0) return;
    let next = word(buf, 0);
    outer: for (let a = 0; a <= stop; a += STRIDE) {
      const first = next;
      next = word(buf, a + 4);
      const mix = gramMix(first, next);
      const line = (Math.imul(mix, 0x9e3779b1) >>> lineShift) << 4;
      const g1 = Math.imul(mix, 0xc2b2ae3d);
      const g2 = Math.imul(mix, 0x27d4eb2f) | 1;
      for (let k = 0; k < PROBES; k++) {
        const bit = (g1 + Math.imul(k, g2)) >>> 23;
        if ((bitmap[line + (bit >>> 5)]! & (1 << (bit & 31))) === 0) continue outer;
      }
      for (let t = Math.max(0, a - STRIDE + 1); t <= a && t < end; t++)
        this.walk(buf, t, 1, onMatch);
    }
  }

  /**
   * Follows the trie from the root along `buf[start…]`, reporting each pattern
   * whose anchor is on the path and in the filter that found the start (long or not).
   */
  private walk(buf: Uint8Array, start: number, long: number, onMatch: OnMatch): void {
    let s = this.rootChild[buf[start]!]!;
    const limit = Math.min(buf.length, start + ANCHOR);
    for (let j = start + 1; s >= 0; j++) {
      const a = this.anchorOf[s]!;
      if (a >= 0 && this.long[a] === long) {
        for (let k = this.anchorPatternStart[a]!; k < this.anchorPatternStart[a + 1]!; k++) {
          const p = this.anchorPatterns[k]!;
          const length = this.patternLength[p]!;
          if (
            start + length <= buf.length &&
            (length <= ANCHOR || this.rest(buf, start, p, length))
          )
            onMatch(p, start);
        }
      }
      if (j >= limit) return;
      s = this.child(s, buf[j]!);
    }
  }

  /** The child of `state` labelled `byte`, or -1 (most deep nodes have one child). */
  private child(state: number, byte: number): number {
    let lo = this.firstChild[state]!;
    let hi = lo + this.childCount[state]! - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const l = this.label[mid]!;
      if (l === byte) return mid;
      if (l < byte) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  private rest(buf: Uint8Array, start: number, p: number, length: number): boolean {
    const from = this.patternStart[p]!;
    for (let i = ANCHOR; i < length; i++) if (buf[start + i] !== this.store[from + i]) return false;
    return true;
  }

  /** Overwrites the patterns and everything derived from them with zeros. */
  wipe(): void {
    this.store.fill(0);
    this.label.fill(0);
    this.rootChild.fill(0);
    this.bitmap.fill(0);
    this.longBitmap.fill(0);
    this.firstChild.fill(0);
    this.childCount.fill(0);
  }
}
