import { sumMetrics } from './scale-out.js';

/**
 * The server's garbage-collection time, as its metrics report it
 * (`nodejs_gc_duration_seconds`, from prom-client's default metrics, which
 * V8's `gc` performance entries feed), summed over `metricsUrls`.
 */
export interface GcTime {
  /** Scavenges of the young generation, s. */
  minor: number;
  /** Mark-compacts, s: their final pauses. */
  major: number;
  /** Incremental marking steps ahead of a mark-compact, s. */
  incremental: number;
  atMs: number;
}

const GC_SUM = /^nodejs_gc_duration_seconds_sum\{kind="(minor|major|incremental)"\} ([\d.e+-]+)/gm;

export async function readGcTime(metricsUrls: readonly string[]): Promise<GcTime> {
  const time = await sumMetrics(metricsUrls, GC_SUM, ['minor', 'major', 'incremental']);
  return { ...time, atMs: performance.now() };
}

/** µs of each kind per request between two readings, at `rps` requests per second. */
export function gcPerRequest(
  from: GcTime,
  to: GcTime,
  rps: number,
): { minor: number; major: number; incremental: number; total: number } {
  const requests = (rps * (to.atMs - from.atMs)) / 1000;
  const per = (kind: 'minor' | 'major' | 'incremental') =>
    requests > 0 ? ((to[kind] - from[kind]) * 1e6) / requests : 0;
  const [minor, major, incremental] = [per('minor'), per('major'), per('incremental')];
  return { minor, major, incremental, total: minor + major + incremental };
}
