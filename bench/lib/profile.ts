import { copyFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A span of the run, in the monotonic microseconds V8 profiles use (process.hrtime). */
export interface Window {
  label: string;
  startUs: number;
  endUs: number;
}

export const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** The whole profile, for a short-lived process (the CLI). */
export const WHOLE_RUN: Window = { label: 'whole run', startUs: 0, endUs: Number.MAX_SAFE_INTEGER };

interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface HotSpot {
  name: string;
  /** Share of the window's samples spent in this function itself. */
  selfShare: number;
}

export interface WindowProfile {
  label: string;
  samples: number;
  functions: HotSpot[];
  /** Self time grouped by package (`fastify`, `pino`, `node:internal`, `coffer`, …). */
  modules: HotSpot[];
}

function moduleOf(url: string): string {
  if (!url) return '(native/vm)';
  if (url.startsWith('node:')) return 'node:internal';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('wasm://')) return 'wasm (libsodium)';
  if (url.includes('/packages/server/dist/')) return 'coffer server';
  if (url.includes('/packages/cli/dist/')) return 'coffer cli';
  if (url.includes('/packages/sdk/dist/')) return 'coffer sdk';
  return url.replace(/^file:\/\//, '');
}

function top(counts: Map<string, number>, total: number, n: number): HotSpot[] {
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, count]) => ({ name, selfShare: count / total }));
}

type CallFrame = CpuProfile['nodes'][number]['callFrame'];

/**
 * The samples of `profile` inside `window`: the function each was taken in,
 * the microseconds it stands for (the time until the next sample) and its
 * stack, from that function out to the root (`stack` is computed when called).
 */
function* samplesIn(
  profile: CpuProfile,
  window: Window,
): Generator<{ frame: CallFrame; spanUs: number; stack: () => CallFrame[] }> {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parents.set(child, node.id);
  const stackOf = (id: number) => {
    const frames: CallFrame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at))
      frames.push(nodes.get(at)!);
    return frames;
  };
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    if (t < window.startUs || t > window.endUs) continue;
    const id = profile.samples[i]!;
    yield {
      frame: nodes.get(id)!,
      spanUs: profile.timeDeltas[i + 1] ?? 0,
      stack: () => stackOf(id),
    };
  }
}

/** `function file:line`, as the reports name a function. */
function functionName(frame: CallFrame): string {
  const file = frame.url.split('/').pop() ?? '';
  return `${frame.functionName || '(anonymous)'} ${file ? `${file}:${frame.lineNumber + 1}` : ''}`;
}

const readProfile = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;

/** Self time per function and per package inside each window, from a `--cpu-prof` file. */
export function summariseProfile(file: string, windows: Window[], topN = 12): WindowProfile[] {
  const profile = readProfile(file);
  return windows.map((w) => {
    const byFunction = new Map<string, number>();
    const byModule = new Map<string, number>();
    let total = 0;
    for (const { frame } of samplesIn(profile, w)) {
      const name = functionName(frame);
      byFunction.set(name, (byFunction.get(name) ?? 0) + 1);
      const mod = frame.functionName === '(idle)' ? '(idle)' : moduleOf(frame.url);
      byModule.set(mod, (byModule.get(mod) ?? 0) + 1);
      total++;
    }
    return {
      label: w.label,
      samples: total,
      functions: total ? top(byFunction, total, topN) : [],
      modules: total ? top(byModule, total, 8) : [],
    };
  });
}

/**
 * The `.cpuprofile` written into `dir`, copied to `keepAs` (under bench/results,
 * to open in Chrome DevTools or speedscope).
 */
export function findProfile(dir: string, keepAs: string): string | null {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return null;
  copyFileSync(join(dir, file), keepAs);
  return keepAs;
}

export function renderProfiles(backend: string, profiles: WindowProfile[]): string {
  const pct = (x: number) => `${(x * 100).toFixed(1).padStart(5)}%`;
  return profiles
    .filter((p) => p.samples > 0)
    .map((p) =>
      [
        `CPU profile — ${p.label} (${backend}), ${p.samples} samples, self time:`,
        '  by package: ' + p.modules.map((m) => `${m.name} ${pct(m.selfShare).trim()}`).join(', '),
        ...p.functions.map((f) => `  ${pct(f.selfShare)}  ${f.name}`),
      ].join('\n'),
    )
    .join('\n\n');
}

/** A window of a profile and the requests answered in it. */
export interface ProfiledRun {
  file: string;
  window: Window;
  requests: number;
}

/**
 * Main-thread CPU µs per request of one profiled run (idle samples left out):
 * by function, its own time (`self`) and its time with everything it calls
 * (`inclusive`, each sample counted once per function on its stack).
 */
function microsPerRequest(run: ProfiledRun): {
  total: number;
  self: Map<string, number>;
  inclusive: Map<string, number>;
} {
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  for (const { frame, spanUs, stack } of samplesIn(readProfile(run.file), run.window)) {
    if (frame.functionName === '(idle)') continue;
    const name = functionName(frame);
    self.set(name, (self.get(name) ?? 0) + spanUs);
    // Every stack ends in `(root)`, whose inclusive time is `total` again.
    const callers = stack().filter((caller) => caller.functionName !== '(root)');
    for (const caller of new Set(callers.map(functionName)))
      inclusive.set(caller, (inclusive.get(caller) ?? 0) + spanUs);
    total += spanUs;
  }
  const perRequest = (byFunction: Map<string, number>) =>
    new Map([...byFunction].map(([name, us]) => [name, us / Math.max(1, run.requests)]));
  return {
    total: total / Math.max(1, run.requests),
    self: perRequest(self),
    inclusive: perRequest(inclusive),
  };
}

/**
 * A run against its baseline (a read against the bare route replaying the same
 * answer, a keyed write against a plain one): the main thread's busy µs per
 * request of each, and the functions whose time per request differs most, by
 * their own time and with what they call. The second finds work that is spread
 * over many small functions (a keyed write's claim, its key's row). A
 * function's inclusive time counts wherever it ran, so work resumed from a
 * different place in the two runs (an await continued from a timer in one and
 * from I/O in the other) still compares. Sampling, not counting: figures
 * under a microsecond are noise, and so are differences of a few µs in
 * functions both runs call alike; the threads other than the main one (GC
 * helpers, libuv's pool) are not in the sum.
 */
export function renderProfileComparison(
  label: string,
  run: ProfiledRun,
  base: ProfiledRun,
  baseLabel = "the bare route's",
  topN = 25,
): string {
  const a = microsPerRequest(run);
  const b = microsPerRequest(base);
  const us = (x: number) => x.toFixed(1).padStart(7);
  const differing = (mine: Map<string, number>, theirs: Map<string, number>, n: number) =>
    [...new Set([...mine.keys(), ...theirs.keys()])]
      .map((name) => ({ name, run: mine.get(name) ?? 0, base: theirs.get(name) ?? 0 }))
      .sort((x, y) => y.run - y.base - (x.run - x.base))
      .slice(0, n)
      .map((r) => `  ${us(r.run)} ${us(r.base)} ${us(r.run - r.base)}  ${r.name}`);
  const header = `  ${'this'.padStart(7)} ${'base'.padStart(7)} ${'diff'.padStart(7)}  function`;
  return [
    `Main-thread CPU per request — ${label}: ${a.total.toFixed(1)} µs against ${baseLabel} ${b.total.toFixed(1)} µs; the functions that differ most (µs per request):`,
    header,
    ...differing(a.self, b.self, topN),
    `  … with what they call (inclusive):`,
    header,
    ...differing(a.inclusive, b.inclusive, topN),
  ].join('\n');
}
