/**
 * A multi-pattern matcher over bytes: Aho-Corasick on each pattern's first
 * ANCHOR bytes, then a direct comparison of the rest at each anchor hit.
 *
 * Why this shape: the cost per scanned byte must not grow with the number of
 * secrets. The automaton's states near the root (where text spends nearly all
 * its time) are a dense transition table over byte classes, a plain DFA step
 * per byte; deeper states (reached only when text shares a prefix with some
 * pattern) keep sorted child lists and failure links. Anchoring bounds the
 * automaton to ANCHOR states per pattern however long the values are.
 *
 * The patterns are copies of secret values and their encodings: `wipe()`
 * fills every table and the pattern store with zeros once the scan is done.
 */

/** Bytes of each pattern that go into the automaton; the rest is compared at a hit. */
const ANCHOR = 12;
/** Upper bound on the dense table's entries (Int32: 4 bytes each). */
const DENSE_ENTRIES = 1 << 20;

export type OnMatch = (pattern: number, start: number) => void;

export class Matcher {
  /** Byte → class; 0 for bytes that start or continue no anchor. */
  private readonly classOf = new Uint8Array(256);
  private readonly classCount: number;
  /** Rows of the states with id < denseCount (all states up to a depth): the full DFA step. */
  private readonly dense: Int32Array;
  private readonly denseCount: number;
  /** Sparse states: children are ids firstChild[s] … firstChild[s] + childCount[s] - 1, labels sorted. */
  private readonly firstChild: Int32Array;
  private readonly childCount: Int32Array;
  private readonly label: Uint8Array;
  private readonly fail: Int32Array;
  /** Per state, in one cache line: first child, child count, failure link, first child's label. */
  private readonly node: Int32Array;
  /** 1 where a state or a state on its failure chain ends an anchor. */
  private readonly emits: Uint8Array;
  /** The anchor a state ends (-1: none) and the next state on its failure chain that ends one (0: none). */
  private readonly anchorOf: Int32Array;
  private readonly dictLink: Int32Array;
  /** Anchor → its patterns (CSR), and each anchor's length. */
  private readonly anchorPatternStart: Int32Array;
  private readonly anchorPatterns: Int32Array;
  private readonly anchorLength: Int32Array;
  /** Every pattern's bytes, one after the other. */
  private readonly store: Buffer;
  private readonly patternStart: Int32Array;
  private readonly patternLength: Int32Array;
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

    // Anchors, sorted and unique, each with the patterns that start with it.
    const anchorOfPattern = Array.from({ length: count }, (_, p) => p).sort((a, b) =>
      this.compareAnchors(a, b),
    );
    const anchors: number[] = []; // a representative pattern per anchor
    const groups: number[][] = [];
    for (const p of anchorOfPattern) {
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
    this.anchorLength = new Int32Array(anchors.length);
    let at = 0;
    groups.forEach((group, a) => {
      this.anchorPatternStart[a] = at;
      for (const p of group) this.anchorPatterns[at++] = p;
      this.anchorLength[a] = Math.min(ANCHOR, this.patternLength[anchors[a]!]!);
    });
    this.anchorPatternStart[anchors.length] = at;

    // Byte classes: only bytes that occur in an anchor get one, numbered in
    // byte order so that children sorted by byte are sorted by class.
    const used = new Uint8Array(256);
    for (const p of anchors) {
      const start = this.patternStart[p]!;
      for (let i = 0; i < Math.min(ANCHOR, this.patternLength[p]!); i++)
        used[this.store[start + i]!] = 1;
    }
    let classes = 1;
    for (let b = 0; b < 256; b++) if (used[b]) this.classOf[b] = classes++;
    this.classCount = classes;

    // The trie, built depth-first from the sorted anchors: node parent, label, depth.
    let parent = new Int32Array(1024);
    let nodeLabel = new Uint8Array(1024);
    let depth = new Int32Array(1024);
    let ends = new Int32Array(1024).fill(-1);
    let nodes = 1;
    const path: number[] = [0];
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
    let previous = -1;
    anchors.forEach((p, a) => {
      const length = this.anchorLength[a]!;
      const start = this.patternStart[p]!;
      let common = 0;
      if (previous >= 0) {
        const prevStart = this.patternStart[previous]!;
        const prevLength = Math.min(ANCHOR, this.patternLength[previous]!);
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
        nodeLabel[node] = this.classOf[this.store[start + i]!]!;
        depth[node] = i + 1;
        path.push(node);
      }
      ends[path[length]!] = a;
      previous = p;
    });

    // Breadth-first ids: sorting by depth, stable in creation order, makes each
    // node's children contiguous and sorted by label.
    let maxDepth = 0;
    for (let n = 0; n < nodes; n++) maxDepth = Math.max(maxDepth, depth[n]!);
    const depthCount = new Int32Array(maxDepth + 2);
    for (let n = 0; n < nodes; n++) depthCount[depth[n]! + 1]!++;
    for (let d = 1; d <= maxDepth + 1; d++) depthCount[d]! += depthCount[d - 1]!;
    const newId = new Int32Array(nodes);
    const order = new Int32Array(nodes);
    for (let n = 0; n < nodes; n++) {
      const id = depthCount[depth[n]!]!++;
      newId[n] = id;
      order[id] = n;
    }
    this.firstChild = new Int32Array(nodes);
    this.childCount = new Int32Array(nodes);
    this.label = new Uint8Array(nodes);
    this.anchorOf = new Int32Array(nodes).fill(-1);
    for (let id = 0; id < nodes; id++) {
      const n = order[id]!;
      this.label[id] = nodeLabel[n]!;
      this.anchorOf[id] = ends[n]!;
      if (id === 0) continue;
      const par = newId[parent[n]!]!;
      if (this.childCount[par] === 0) this.firstChild[par] = id;
      this.childCount[par]!++;
    }

    // Failure links and dictionary links, breadth-first.
    this.fail = new Int32Array(nodes);
    this.dictLink = new Int32Array(nodes);
    this.emits = new Uint8Array(nodes);
    for (let id = 1; id < nodes; id++) {
      const par = newId[parent[order[id]!]!]!;
      if (par !== 0) {
        let f = this.fail[par]!;
        let next = this.child(f, this.label[id]!);
        while (next < 0 && f !== 0) {
          f = this.fail[f]!;
          next = this.child(f, this.label[id]!);
        }
        this.fail[id] = next < 0 ? 0 : next;
      }
      const f = this.fail[id]!;
      this.dictLink[id] = this.anchorOf[f]! >= 0 ? f : this.dictLink[f]!;
      this.emits[id] = this.anchorOf[id]! >= 0 || this.dictLink[id] !== 0 ? 1 : 0;
    }

    this.node = new Int32Array(nodes * 4);
    for (let id = 0; id < nodes; id++) {
      this.node[id * 4] = this.firstChild[id]!;
      this.node[id * 4 + 1] = this.childCount[id]!;
      this.node[id * 4 + 2] = this.fail[id]!;
      this.node[id * 4 + 3] = this.childCount[id]! > 0 ? this.label[this.firstChild[id]!]! : -1;
    }

    // Dense rows for every state up to the deepest level that fits.
    let denseCount = 1;
    for (let d = 1; d <= maxDepth; d++) {
      const upTo = depthCount[d]!; // ids of depth ≤ d after the counting pass above
      if (upTo * this.classCount > DENSE_ENTRIES) break;
      denseCount = upTo;
    }
    this.denseCount = denseCount;
    const C = this.classCount;
    this.dense = new Int32Array(denseCount * C);
    // A state's row is its failure state's row (computed before it, breadth-first)
    // with its own children written over it.
    for (let s = 0; s < denseCount; s++) {
      if (s > 0) {
        const f = this.fail[s]! * C;
        this.dense.copyWithin(s * C, f, f + C);
      }
      const first = this.firstChild[s]!;
      for (let k = first; k < first + this.childCount[s]!; k++)
        this.dense[s * C + this.label[k]!] = k;
    }
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

  /** The child of `state` labelled `cls`, or -1. */
  private child(state: number, cls: number): number {
    let lo = this.firstChild[state]!;
    let hi = lo + this.childCount[state]! - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const l = this.label[mid]!;
      if (l === cls) return mid;
      if (l < cls) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /**
   * Calls `onMatch(pattern, start)` for every occurrence of a pattern that
   * starts in `buf[0, end)` and lies wholly inside `buf`. Matches are reported
   * in the order their anchors end.
   */
  scan(buf: Uint8Array, end: number, onMatch: OnMatch): void {
    const { classOf, dense, denseCount, emits, label, node } = this;
    const C = this.classCount;
    // Anchors starting before `end` end before end + ANCHOR - 1.
    const stop = Math.min(buf.length, end + ANCHOR - 1);
    let s = 0;
    for (let i = 0; i < stop; i++) {
      const c = classOf[buf[i]!]!;
      if (s < denseCount) s = dense[s * C + c]!;
      else {
        for (;;) {
          const at = s << 2;
          const count = node[at + 1]!;
          let next = -1;
          if (count === 1) {
            if (node[at + 3] === c) next = node[at]!;
          } else {
            const first = node[at]!;
            for (let k = first; k < first + count; k++) {
              const l = label[k]!;
              if (l >= c) {
                if (l === c) next = k;
                break;
              }
            }
          }
          if (next >= 0) {
            s = next;
            break;
          }
          s = node[at + 2]!;
          if (s < denseCount) {
            s = dense[s * C + c]!;
            break;
          }
        }
      }
      if (emits[s] === 1) this.report(buf, end, i, s, onMatch);
    }
  }

  private report(buf: Uint8Array, end: number, at: number, state: number, onMatch: OnMatch) {
    for (let t = this.anchorOf[state]! >= 0 ? state : this.dictLink[state]!; t !== 0;) {
      const a = this.anchorOf[t]!;
      const start = at - this.anchorLength[a]! + 1;
      if (start < end) {
        for (let k = this.anchorPatternStart[a]!; k < this.anchorPatternStart[a + 1]!; k++) {
          const p = this.anchorPatterns[k]!;
          const length = this.patternLength[p]!;
          if (start + length > buf.length) continue;
          if (length <= ANCHOR || this.rest(buf, start, p, length)) onMatch(p, start);
        }
      }
      t = this.dictLink[t]!;
    }
  }

  private rest(buf: Uint8Array, start: number, p: number, length: number): boolean {
    const from = this.patternStart[p]!;
    for (let i = ANCHOR; i < length; i++) if (buf[start + i] !== this.store[from + i]) return false;
    return true;
  }

  /** Overwrites the patterns and every table derived from them with zeros. */
  wipe(): void {
    this.store.fill(0);
    this.classOf.fill(0);
    this.dense.fill(0);
    this.label.fill(0);
    this.firstChild.fill(0);
    this.childCount.fill(0);
    this.fail.fill(0);
    this.node.fill(0);
  }
}
