import type { CpuUse } from './cpu.js';
import type { LoadResult } from './load.js';

export interface Target {
  /** Shown in the table, e.g. "≥ 10,000 req/s, p99 ≤ 15 ms". */
  text: string;
  /** true when the figure meets the target. */
  check(row: Row, ceilingRps: number | null): boolean;
}

export interface LoadRow {
  kind: 'load';
  id: string;
  title: string;
  backend: string;
  result: LoadResult;
  /** CPU in cores during the measured run: the server's, the load generator's, and the rest of the machine's. */
  cpu: CpuUse;
  /** The server's largest RSS during the run (MB); null for the ceiling. */
  maxRssMB: number | null;
  /** The status every response is expected to have (others are reported). */
  expectStatus: number;
  /** Throughput as a fraction of the ceiling measured in the same run. */
  ratio: number | null;
  /** For responses as large as a secret listing: the fraction of the ceiling route sending as much. */
  sizedRatio: number | null;
  target: Target | null;
  pass: boolean | null;
}

export interface ValueRow {
  kind: 'value';
  id: string;
  title: string;
  backend: string;
  value: number;
  unit: 'ms' | 's' | 'MB' | 'KB' | 'tx/s' | 'MB/s' | '×' | '%' | 'stmt/s' | 'µs/req';
  /** What the value is (e.g. "median of 20 runs"). */
  detail: string;
  target: Target | null;
  pass: boolean | null;
  /** What the value was made of (every run, every file), in the JSON report only. */
  breakdown?: Record<string, unknown>;
}

export type Row = LoadRow | ValueRow;

const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const fmtNum = (n: number, unit: string) =>
  unit === 'ms'
    ? n < 10
      ? n.toFixed(2)
      : n < 100
        ? n.toFixed(1)
        : fmtInt(n)
    : unit === 'MB' || unit === 'KB'
      ? n.toFixed(1)
      : unit === 'tx/s' || unit === 'MB/s'
        ? fmtInt(n)
        : unit === 'stmt/s' || unit === 'µs/req'
          ? n.toFixed(1)
          : n.toFixed(2);

/** A share (a value row in %) of at least `bound`. */
const atLeastPercent = (bound: number): Target => ({
  text: `≥ ${bound} %`,
  check: (row) => row.kind === 'value' && row.value >= bound,
});

export const targets = {
  list: {
    text: '≥ 10,000 req/s, p99 ≤ 15 ms',
    check: (row) => row.kind === 'load' && row.result.rps >= 10_000 && row.result.p99 <= 15,
  },
  read: {
    text: '≥ 25,000 req/s and ≥ 50% of ceiling',
    check: (row, ceiling) =>
      row.kind === 'load' &&
      row.result.rps >= 25_000 &&
      ceiling !== null &&
      row.result.rps >= 0.5 * ceiling,
  },
  readShare: atLeastPercent(50),
  keyedShare: atLeastPercent(90),
  postgresShare: atLeastPercent(80),
  write: {
    text: '≥ 2,000 req/s',
    check: (row) => row.kind === 'load' && row.result.rps >= 2_000,
  },
  rekey10k: {
    text: '≤ 3 s',
    check: (row) => row.kind === 'value' && row.value <= 3,
  },
  run: {
    text: '≤ 250 ms median',
    check: (row) => row.kind === 'value' && row.value <= 250,
  },
  runReferences: {
    text: '≤ 110 % of the same run without references',
    check: (row) => row.kind === 'value' && row.value <= 110,
  },
  resolve10k: {
    text: '≤ 50 ms',
    check: (row) => row.kind === 'value' && row.value <= 50,
  },
  dashboardFirstLoad: {
    text: '≤ 350 KB gzip, incl. libsodium',
    check: (row) => row.kind === 'value' && row.value <= 350,
  },
  dashboardUnlock: {
    text: '≤ 1,500 ms (default KDF)',
    check: (row) => row.kind === 'value' && row.value <= 1500,
  },
  dashboardUnlockRest: {
    text: '≤ 300 ms',
    check: (row) => row.kind === 'value' && row.value <= 300,
  },
  scanFiles: {
    text: '≥ 200 MB/s',
    check: (row) => row.kind === 'value' && row.value >= 200,
  },
  scanFlat: {
    text: '≥ 0.8× (flat)',
    check: (row) => row.kind === 'value' && row.value >= 0.8,
  },
  scanHook: {
    text: '≤ 300 ms median',
    check: (row) => row.kind === 'value' && row.value <= 300,
  },
  rssIdle: {
    text: '≤ 120 MB',
    check: (row) => row.kind === 'value' && row.value <= 120,
  },
  rssLoad: {
    text: '≤ 250 MB',
    check: (row) => row.kind === 'value' && row.value <= 250,
  },
} satisfies Record<string, Target>;

export function judge<T extends Row>(row: T, ceilingRps: number | null): T {
  return { ...row, pass: row.target ? row.target.check(row, ceilingRps) : null };
}

/** Statuses other than the expected one, e.g. "429×12 err×3". */
function unexpected(row: LoadRow): string {
  const parts = Object.entries(row.result.statuses)
    .filter(([code]) => Number(code) !== row.expectStatus)
    .map(([code, n]) => `${code}×${n}`);
  if (row.result.errors) parts.push(`err×${row.result.errors}`);
  if (row.result.timeouts) parts.push(`timeout×${row.result.timeouts}`);
  return parts.join(' ');
}

function table(header: string[], rows: string[][], rightAligned: Set<number>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (rightAligned.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const verdict = (pass: boolean | null) => (pass === null ? '' : pass ? 'pass' : 'SHORT');

export function renderTables(rows: Row[]): string {
  const load = rows.filter((r): r is LoadRow => r.kind === 'load');
  const values = rows.filter((r): r is ValueRow => r.kind === 'value');
  const out: string[] = [];
  if (load.length) {
    out.push(
      table(
        [
          'HTTP scenario (50 connections)',
          'backend',
          'status',
          'req/s',
          '× ceiling',
          '× sized',
          'p50 ms',
          'p99 ms',
          'KB/resp',
          'srv µs/req',
          'CPU srv/gen/db/other',
          'RSS MB',
          'target',
          '',
          'other responses',
        ],
        load.map((r) => [
          r.title,
          r.backend,
          String(r.expectStatus),
          fmtInt(r.result.rps),
          r.ratio === null ? '' : `${(r.ratio * 100).toFixed(1)}%`,
          r.sizedRatio === null ? '' : `${(r.sizedRatio * 100).toFixed(1)}%`,
          String(r.result.p50),
          String(r.result.p99),
          (r.result.bytesPerRequest / 1000).toFixed(1),
          // Server CPU time per request: steadier than req/s when the machine is shared.
          r.result.rps ? fmtInt((r.cpu.server * 1e6) / r.result.rps) : '',
          [r.cpu.server, r.cpu.loadGenerator, r.cpu.database, r.cpu.others]
            .map((c) => c.toFixed(2))
            .join(' / '),
          r.maxRssMB === null ? '' : r.maxRssMB.toFixed(0),
          r.target?.text ?? '',
          verdict(r.pass),
          unexpected(r),
        ]),
        new Set([3, 4, 5, 6, 7, 8, 9, 10, 12]),
      ),
    );
  }
  if (values.length) {
    out.push(
      table(
        ['Measurement', 'backend', 'value', 'how', 'target', ''],
        values.map((r) => [
          r.title,
          r.backend,
          `${fmtNum(r.value, r.unit)} ${r.unit}`,
          r.detail,
          r.target?.text ?? '',
          verdict(r.pass),
        ]),
        new Set([2]),
      ),
    );
  }
  return out.join('\n\n');
}
