// Each test file's time (its process's wall time: start, load, tests, exit), from
// the events of node's test runner. scripts/test.mjs records them when TEST_TIMES is
// set: TEST_TIMES=1 writes test-times.json (slowest first), TEST_TIMES=<path> writes
// there, and the ten slowest files are printed after the run. scripts/test-times.json
// is such a record; the runner starts the longest files first from it.
import { writeFileSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;

/** `sources` maps the file the runner ran (a compiled one) to the test file it came from. */
export function recordTimes(stream, sources, out) {
  const started = new Map();
  const ended = new Map();
  const measured = new Map();
  // A test inside a compiled file names its source (through the source map).
  const name = (file) => sources[file] ?? (isAbsolute(file) ? relative(root, file) : file);
  const seen = (data) => {
    if (!data?.file) return null;
    const file = name(data.file);
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
    const rows = [...started.keys()]
      .map((file) => ({
        file,
        seconds: Math.round((measured.get(file) ?? ended.get(file) - started.get(file)) / 100) / 10,
      }))
      .sort((a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file));
    const total = Math.round(rows.reduce((sum, row) => sum + row.seconds, 0));
    writeFileSync(out, JSON.stringify({ total, files: rows }, null, 2) + '\n');
    const lines = [`test times: ${rows.length} files, ${total} s in all, written to ${out}`];
    for (const row of rows.slice(0, 10))
      lines.push(`  ${row.seconds.toFixed(1).padStart(6)} s  ${row.file}`);
    process.stderr.write(lines.join('\n') + '\n');
  });
}
