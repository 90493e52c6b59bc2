// The load generator, in its own process so it never shares an event loop with
// the server under test. The parent (bench/run.ts) sends one LoadPlan at a time
// over IPC; each plan is a warm-up run followed by the measured run.
import autocannon from 'autocannon';
import type { LoadPlan, LoadResult } from './lib/load.js';

function run(plan: LoadPlan, seconds: number): Promise<autocannon.Result> {
  const bodies = plan.bodies;
  let next = 0;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: plan.url,
        method: plan.method,
        headers: plan.headers,
        connections: plan.connections,
        duration: seconds,
        pipelining: 1,
        timeout: 10,
        // Cycle through the request bodies (writes send a distinct value each time).
        requests: bodies?.length
          ? [
              {
                setupRequest: (req) => {
                  req.body = bodies[next++ % bodies.length];
                  return req;
                },
              },
            ]
          : [{}],
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
}

process.on('message', (message: { plan: LoadPlan }) => {
  const { plan } = message;
  (async () => {
    if (plan.warmupSeconds > 0) await run(plan, plan.warmupSeconds);
    const r = await run(plan, plan.seconds);
    const statuses: Record<string, number> = {};
    for (const [code, stat] of Object.entries(r.statusCodeStats)) {
      statuses[code] = stat.count;
    }
    const durationSeconds = (r.finish.getTime() - r.start.getTime()) / 1000;
    const result: LoadResult = {
      requests: r.requests.total,
      durationSeconds,
      rps: r.requests.total / durationSeconds,
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      max: r.latency.max,
      statuses,
      errors: r.errors,
      timeouts: r.timeouts,
      bytesPerRequest: r.requests.total ? r.throughput.total / r.requests.total : 0,
    };
    process.send!({ result });
  })().catch((err: unknown) => {
    process.send!({ error: err instanceof Error ? err.message : String(err) });
  });
});
