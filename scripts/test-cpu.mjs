// Preloaded into each test file's process when the run records times (TEST_TIMES):
// at exit, appends the CPU seconds of the process and of the child processes it
// started and reaped (servers, CLI commands; /proc/self/stat's utime, stime,
// cutime, cstime) to COFFER_TEST_CPU_LOG, one JSON line per file.
import { appendFileSync, readFileSync } from 'node:fs';

const log = process.env.COFFER_TEST_CPU_LOG;
const file = process.argv[1];
if (log && file && !file.endsWith('scripts/test.mjs')) {
  process.on('exit', () => {
    try {
      const stat = readFileSync('/proc/self/stat', 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // Fields 14-17 of proc(5), counted from the state (field 3) here, in clock
      // ticks: USER_HZ, 100 per second in every Linux /proc.
      const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number);
      const own = (utime + stime) / 100;
      const children = (cutime + cstime) / 100;
      appendFileSync(log, JSON.stringify({ file, own, children }) + '\n');
    } catch {
      // Not Linux: no CPU figures, the times are still recorded.
    }
  });
}
