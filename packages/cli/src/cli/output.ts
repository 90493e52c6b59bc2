/**
 * Output conventions: results go to stdout (JSON with `--json`, otherwise
 * human text); notes, prompts and progress go to stderr, so `coffer … --json |
 * jq` and `$(coffer secrets get X)` see only the result.
 */

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLine(text = ''): void {
  process.stdout.write(`${text}\n`);
}

/** A note for the human at the terminal (stderr). */
export function note(text: string): void {
  process.stderr.write(`${text}\n`);
}

type Cell = string | number | boolean | null | undefined;

/** Left-aligned columns with a header row; an empty list prints `empty` instead. */
export function printTable(
  columns: readonly string[],
  rows: readonly (readonly Cell[])[],
  empty = '(none)',
): void {
  if (rows.length === 0) {
    printLine(empty);
    return;
  }
  const text = rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))));
  const widths = columns.map((h, i) => Math.max(h.length, ...text.map((r) => r[i]!.length)));
  const format = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  printLine(format(columns.map((c) => c.toUpperCase())));
  for (const r of text) printLine(format(r));
}

/** `2026-11-22T07:30:00.000Z` → `2026-11-22 07:30`. */
export const shortTime = (iso: string | null | undefined): string =>
  iso ? iso.slice(0, 16).replace('T', ' ') : '-';
