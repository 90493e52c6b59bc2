import { startCpuAccounting, type CpuUse } from './cpu.js';
import type { LoadGenerator, LoadPlan, LoadResult } from './load.js';
import { nowUs, type Window } from './profile.js';
import type { ServerProcess } from './processes.js';

export interface Timing {
  connections: number;
  warmupSeconds: number;
  seconds: number;
}

/** What else a measurement watches: more processes of the server, a counter read at both ends. */
export interface MeasureExtras {
  /** Processes whose CPU counts as the server's besides `server` (other instances, a load balancer). */
  alsoServerPids?: readonly number[];
  /** Called as the measured run starts and once it ends (e.g. to read statement counters). */
  onMeasuring?: () => void;
  onMeasured?: () => void;
}

/**
 * Runs one load plan against a server while sampling its RSS every 250 ms.
 * Returns the result, the largest RSS seen and the profile window of the run.
 */
export async function measureLoad(
  load: LoadGenerator,
  server: ServerProcess,
  plan: Omit<LoadPlan, keyof Timing>,
  timing: Timing,
  label: string,
  extras: MeasureExtras = {},
): Promise<{ result: LoadResult; cpu: CpuUse; maxRssMiB: number; window: Window }> {
  const pids = [server.pid, ...(extras.alsoServerPids ?? [])];
  let maxRssMiB = server.rssMiB();
  const sampler = setInterval(() => {
    try {
      maxRssMiB = Math.max(maxRssMiB, server.rssMiB());
    } catch {
      // the process is gone; the measurement reports the failure
    }
  }, 250);
  let measuredFromUs = nowUs();
  let cpu = startCpuAccounting(pids, load.pid);
  try {
    // CPU use and the profile window cover the measured run only, not the warm-up.
    const result = await load.run({ ...plan, ...timing }, () => {
      measuredFromUs = nowUs();
      cpu = startCpuAccounting(pids, load.pid);
      extras.onMeasuring?.();
    });
    extras.onMeasured?.();
    return {
      result,
      cpu: cpu.stop(),
      maxRssMiB,
      window: { label, startUs: measuredFromUs, endUs: nowUs() },
    };
  } finally {
    clearInterval(sampler);
  }
}

/** Runs `fn` `runs` times after `warmup` untimed runs; returns every duration in ms. */
export async function timeRuns(
  runs: number,
  warmup: number,
  fn: () => Promise<unknown>,
): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const durations: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    durations.push(performance.now() - start);
  }
  return durations;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export const MB = (mib: number) => (mib * 1024 * 1024) / 1e6;
