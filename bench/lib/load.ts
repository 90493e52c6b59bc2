import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** One load measurement: a warm-up run, then the measured run, same settings. */
export interface LoadPlan {
  url: string;
  method: string;
  headers: Record<string, string>;
  /** Path (and body) of each request, cycled through one per request; default: the URL's. */
  variants?: Array<{ path: string; body?: string }>;
  /** Send each request with a new `Idempotency-Key` (with `variants`). */
  idempotencyKeys?: boolean;
  connections: number;
  warmupSeconds: number;
  seconds: number;
}

export interface LoadResult {
  requests: number;
  durationSeconds: number;
  /** Completed requests per second over the measured run. */
  rps: number;
  /** Latency percentiles in milliseconds. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Response count per HTTP status. */
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  bytesPerRequest: number;
}

/**
 * autocannon in a child process of its own (bench/load-worker.ts). One worker
 * serves every measurement of a run, so the load generator is the same for
 * the ceiling and for each scenario.
 */
export class LoadGenerator {
  private readonly child: ChildProcess;

  constructor() {
    this.child = fork(fileURLToPath(new URL('../load-worker.ts', import.meta.url)), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Runs the warm-up, calls `onMeasuring` as the measured run starts, resolves with its result. */
  run(plan: LoadPlan, onMeasuring: () => void = () => undefined): Promise<LoadResult> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) =>
        reject(new Error(`load worker exited (code ${code}) during a measurement`));
      const onMessage = (message: { measuring?: true; result?: LoadResult; error?: string }) => {
        if (message.measuring) return onMeasuring();
        this.child.off('exit', onExit);
        this.child.off('message', onMessage);
        if (message.result) resolve(message.result);
        else reject(new Error(`load worker: ${message.error}`));
      };
      this.child.once('exit', onExit);
      this.child.on('message', onMessage);
      this.child.send({ plan });
    });
  }

  close(): void {
    this.child.kill();
  }
}
