import { performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import type { FastifyBaseLogger } from 'fastify';

/** How often the server looks at whether it is idle. */
const CHECK_INTERVAL_MS = 5_000;
/** Busier than this share of a check's interval, the server is not idle. */
const IDLE_UTILIZATION = 0.05;
/** The young generation counts as grown above this (V8 starts it at 1 MiB). */
const GROWN_BYTES = 4 * 1024 * 1024;
/** Collections that left it grown, at most, before the server is busy again. */
const MAX_ATTEMPTS = 3;

const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
const youngGenerationBytes = () =>
  getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;

/**
 * Gives memory back when the server goes idle. Under load the young generation
 * grows to the size `npm start` allows it (`--max-semi-space-size=8`: fewer
 * scavenges, each copying the objects of the requests in flight, cost a read
 * about two thirds of the CPU it took at 2 MB), but V8 keeps it at that size
 * after the load has gone. When the event loop was idle for a whole check and
 * the young generation was seen grown at a check since the last such
 * collection, one memory-reducing full collection (V8's "last resort": a
 * regular one leaves the young generation grown more often, and on Node 24
 * keeps the pages) shrinks it back to its start and returns the pages: about
 * 6 ms on Node 20, 80 ms on Node 24, while nothing else runs. (V8 sometimes
 * shrinks it by itself once the load has gone, and on Node 24 then keeps its
 * pages: the collection returns those too.)
 * Right after a load even that one may leave it grown (`attempts`, below);
 * the flag's size bounds what is kept. It needs `gc`, which `--expose-gc`
 * provides; without it the server works the same and keeps the memory.
 */
export function idleMemoryRelease(log: Pick<FastifyBaseLogger, 'debug'>): {
  start(): void;
  stop(): void;
} {
  const collect = globalThis.gc;
  if (!collect) return { start() {}, stop() {} };
  let timer: NodeJS.Timeout | null = null;
  let last = performance.eventLoopUtilization();
  // V8 shrinks the young generation when its allocation rate, sampled at
  // its last collections, is low: the first collection after a load may
  // still see the load's samples and leave it grown, a later one (5 s on,
  // with an idle sample) does not. Never more than MAX_ATTEMPTS of those
  // until the server has been busy again.
  let attempts = 0;
  // Whether the young generation was seen grown since the last collection
  // here (it may have shrunk since, its pages kept: see above).
  let grown = false;
  const check = () => {
    const current = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(current, last).utilization;
    last = current;
    const young = youngGenerationBytes();
    if (young > GROWN_BYTES) grown = true;
    if (busy > IDLE_UTILIZATION) {
      attempts = 0;
      return;
    }
    if (!grown || attempts >= MAX_ATTEMPTS) return;
    const rss = process.memoryUsage.rss();
    const started = performance.now();
    collect({ type: 'major', flavor: 'last-resort' });
    const left = youngGenerationBytes();
    grown = left > GROWN_BYTES;
    attempts = grown ? attempts + 1 : 0;
    log.debug(
      {
        ms: Math.round(performance.now() - started),
        youngMiB: [young, left].map(mib),
        rssMiB: [rss, process.memoryUsage.rss()].map(mib),
      },
      'idle: collected garbage and returned the young generation',
    );
  };
  return {
    start() {
      if (timer) return;
      last = performance.eventLoopUtilization();
      timer = setInterval(check, CHECK_INTERVAL_MS);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}
