/** One run of a diff: kept, only in the old value, or only in the new one. */
export interface Piece {
  kind: 'same' | 'removed' | 'added';
  text: string;
}

/** Above this many cells the middle of two sequences is shown as replaced, not diffed. */
const MAX_CELLS = 1_000_000;

/**
 * Longest-common-subsequence diff of two sequences: the common prefix and
 * suffix are trimmed first, so a small edit in a long value stays cheap.
 */
function diff<T>(a: T[], b: T[]): { kind: Piece['kind']; item: T }[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (
    end < a.length - start &&
    end < b.length - start &&
    a[a.length - 1 - end] === b[b.length - 1 - end]
  )
    end++;
  const x = a.slice(start, a.length - end);
  const y = b.slice(start, b.length - end);
  const out: { kind: Piece['kind']; item: T }[] = a
    .slice(0, start)
    .map((item) => ({ kind: 'same', item }));
  const width = y.length + 1;
  if ((x.length + 1) * width > MAX_CELLS) {
    for (const item of x) out.push({ kind: 'removed', item });
    for (const item of y) out.push({ kind: 'added', item });
  } else {
    const lcs = new Uint32Array((x.length + 1) * width);
    for (let i = x.length - 1; i >= 0; i--)
      for (let j = y.length - 1; j >= 0; j--)
        lcs[i * width + j] =
          x[i] === y[j]
            ? lcs[(i + 1) * width + j + 1]! + 1
            : Math.max(lcs[(i + 1) * width + j]!, lcs[i * width + j + 1]!);
    let i = 0;
    let j = 0;
    while (i < x.length || j < y.length) {
      if (i < x.length && j < y.length && x[i] === y[j]) {
        out.push({ kind: 'same', item: x[i]! });
        i++;
        j++;
      } else if (
        j < y.length &&
        (i >= x.length || lcs[i * width + j + 1]! >= lcs[(i + 1) * width + j]!)
      ) {
        out.push({ kind: 'added', item: y[j++]! });
      } else {
        out.push({ kind: 'removed', item: x[i++]! });
      }
    }
  }
  for (const item of a.slice(a.length - end)) out.push({ kind: 'same', item });
  return out;
}

/** Line-level differences of two values (the history's diff view). */
export function lineDiff(before: string, after: string): Piece[] {
  return diff(before.split('\n'), after.split('\n')).map(({ kind, item }) => ({
    kind,
    text: item,
  }));
}

/**
 * Character-level differences (by code point, so no surrogate pair is split),
 * as runs: the old value's pieces (same / removed) and the new value's (same /
 * added). Two values sharing less than a third are shown replaced whole.
 */
export function charDiff(before: string, after: string): { before: Piece[]; after: Piece[] } {
  const runs = { before: [] as Piece[], after: [] as Piece[] };
  const push = (list: Piece[], kind: Piece['kind'], text: string) => {
    const last = list[list.length - 1];
    if (last?.kind === kind) last.text += text;
    else list.push({ kind, text });
  };
  const a = Array.from(before);
  const b = Array.from(after);
  const pieces = diff(a, b);
  // Values with little in common read better replaced whole than as scattered letters.
  const same = pieces.filter((p) => p.kind === 'same').length;
  if (same * 3 < Math.max(a.length, b.length))
    return {
      before: before ? [{ kind: 'removed', text: before }] : [],
      after: after ? [{ kind: 'added', text: after }] : [],
    };
  for (const { kind, item } of pieces) {
    if (kind !== 'added') push(runs.before, kind, item);
    if (kind !== 'removed') push(runs.after, kind, item);
  }
  return runs;
}
