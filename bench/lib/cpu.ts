import { readdirSync, readFileSync } from 'node:fs';

/** Linux clock ticks per second (USER_HZ), the unit of /proc/stat and /proc/<pid>/stat. */
const HZ = 100;

/** How many cores the machine keeps busy over `ms` (before the run: other people's work). */
export async function busyCores(ms: number): Promise<number> {
  const start = machineBusyTicks();
  await new Promise((resolve) => setTimeout(resolve, ms));
  return (machineBusyTicks() - start) / HZ / (ms / 1000);
}

function machineBusyTicks(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields.map(Number) as number[];
  void idle;
  void iowait;
  return user! + nice! + system! + irq! + softirq! + steal!;
}

function processTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at ")".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime + stime
  } catch {
    return 0;
  }
}

/** The database services of the scaled setup, part of the system under test. */
const DATABASE_COMMANDS = new Set(['postgres', 'redis-server']);

function databaseTicks(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      if (DATABASE_COMMANDS.has(comm)) total += processTicks(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return total;
}

/** CPU used during a measurement, in cores (1.0 = one core busy the whole time). */
export interface CpuUse {
  server: number;
  loadGenerator: number;
  /** PostgreSQL and Redis processes (whoever their clients are). */
  database: number;
  /** Everything else on the machine: other people's work skews the figures. */
  others: number;
}

/**
 * Starts accounting CPU time of the server (several processes: instances and
 * their load balancer), the load generator and the bench itself against the
 * whole machine; `stop()` returns the use in cores.
 */
export function startCpuAccounting(
  serverPids: number | readonly number[],
  loadPid: number,
): { stop(): CpuUse } {
  const pids = typeof serverPids === 'number' ? [serverPids] : serverPids;
  const serverTicks = () => pids.reduce((sum, pid) => sum + processTicks(pid), 0);
  const started = performance.now();
  const machine0 = machineBusyTicks();
  const server0 = serverTicks();
  const load0 = processTicks(loadPid);
  const self0 = processTicks(process.pid);
  const database0 = databaseTicks();
  return {
    stop() {
      const seconds = (performance.now() - started) / 1000;
      const server = serverTicks() - server0;
      const load = processTicks(loadPid) - load0;
      const self = processTicks(process.pid) - self0;
      const database = databaseTicks() - database0;
      const others = machineBusyTicks() - machine0 - server - load - self - database;
      const cores = (ticks: number) => Math.max(0, ticks) / HZ / seconds;
      return {
        server: cores(server),
        loadGenerator: cores(load),
        database: cores(database),
        others: cores(others),
      };
    },
  };
}
