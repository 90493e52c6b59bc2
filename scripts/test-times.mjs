// Each test file's time (its process's wall time: start, load, tests, exit), from
// the events of node's test runner, and its CPU seconds: its own process's and those
// of the processes it started (servers, CLI commands), from scripts/test-cpu.mjs.
// scripts/test.mjs records them when TEST_TIMES is set: TEST_TIMES=1 writes
// test-times.json (slowest first), TEST_TIMES=<path> writes there, and the ten
// slowest files are printed after the run. scripts/test-times.json is such a
// record; the runner starts the longest files first from it.
import { readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;

/**
 * The test file a path names: `sources` maps a file the runner ran (a compiled
 * one) to its source; a test inside a compiled file names its source already
 * (through the source map), absolute.
 */
const sourceOf = (sources, file) =>
  sources[file] ?? (isAbsolute(file) ? relative(root, file) : file);

/** `sources` maps the file the runner ran (a compiled one) to the test file it came from. */
export function recordTimes(stream, sources, out) {
  const started = new Map();
  const ended = new Map();
  const measured = new Map();
  const seen = (data) => {
    if (!data?.file) return null;
    const file = sourceOf(sources, data.file);
    const now = Date.now();
    if (!started.has(file)) started.set(file, now);
    ended.set(file, now);
    return file;
  };
  for (const type of ['test:enqueue', 'test:dequeue', 'test:start', 'test:pass', 'test:fail'])
    stream.on(type, seen);
  stream.on('test:complete', (data) => {
    const file = seen(data);
    // Node 20 reports each file as a test of its own, timed from its process's start.
    if (file && data.name === data.file) measured.set(file, data.details.duration_ms);
  });
  process.on('exit', () => {
    const cpu = readCpu(sources);
    const tenths = (value) => Math.round(value * 10) / 10;
    const rows = [...started.keys()]
      .map((file) => ({
        file,
        seconds: tenths((measured.get(file) ?? ended.get(file) - started.get(file)) / 1000),
        ...(cpu.has(file) ? { cpu: tenths(cpu.get(file)) } : {}),
      }))
      .sort((a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file));
    const total = Math.round(rows.reduce((sum, row) => sum + row.seconds, 0));
    const cpuTotal = Math.round(rows.reduce((sum, row) => sum + (row.cpu ?? 0), 0));
    writeFileSync(out, JSON.stringify({ total, cpu: cpuTotal, files: rows }, null, 2) + '\n');
    const lines = [
      `test times: ${rows.length} files, ${total} s in all, ${cpuTotal} CPU s, written to ${out}`,
    ];
    for (const row of rows.slice(0, 10))
      lines.push(
        `  ${row.seconds.toFixed(1).padStart(6)} s ${(row.cpu ?? NaN).toFixed(1).padStart(6)} CPU s  ${row.file}`,
      );
    process.stderr.write(lines.join('\n') + '\n');
  });
}

/** CPU seconds per test file (own + children), from the lines scripts/test-cpu.mjs appended. */
function readCpu(sources) {
  const cpu = new Map();
  const log = process.env.COFFER_TEST_CPU_LOG;
  if (!log) return cpu;
  let text = '';
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    return cpu;
  }
  for (const line of text.split('\n').filter(Boolean)) {
    const { file, own, children } = JSON.parse(line);
    const name = sourceOf(sources, file);
    cpu.set(name, (cpu.get(name) ?? 0) + own + children);
  }
  return cpu;
}
