// The load generator, in its own process so it never shares an event loop with
// the server under test. The parent (bench/run.ts) sends one LoadPlan at a time
// over IPC; each plan is a warm-up run followed by the measured run.
import autocannon from 'autocannon';
import { createRequire } from 'node:module';
import { idempotencyKeys } from './lib/keys.js';
import type { LoadPlan, LoadResult } from './lib/load.js';

// A 304 never has a body (RFC 9110 §15.4.5), whatever Content-Length says. Real
// clients (Node's http, undici, browsers, curl) know it; autocannon's parser,
// http-parser-js, must be told by the headers callback, as Node's own client
// does, or it waits for body bytes that never come. Wrap that callback.
const { HTTPParser } = createRequire(import.meta.url)('http-parser-js') as {
  HTTPParser: { kOnHeadersComplete: number; prototype: object };
};
Object.defineProperty(HTTPParser.prototype, HTTPParser.kOnHeadersComplete, {
  set(this: object, onHeaders: (info: { statusCode: number }) => unknown) {
    Object.defineProperty(this, HTTPParser.kOnHeadersComplete, {
      writable: true,
      value: (info: { statusCode: number }) => {
        onHeaders(info);
        return info.statusCode === 304 || info.statusCode === 204;
      },
    });
  },
});

function run(plan: LoadPlan, seconds: number): Promise<autocannon.Result> {
  const variants = plan.variants;
  let next = 0;
  const newKey = plan.idempotencyKeys ? idempotencyKeys() : null;
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
        // Cycle through the variants (writes go to a different secret each time).
        requests: variants?.length
          ? [
              {
                setupRequest: (req) => {
                  const variant = variants[next++ % variants.length]!;
                  req.path = variant.path;
                  if (variant.body !== undefined) req.body = variant.body;
                  // A new key per request, as the SDK sends with every write
                  // (`req.headers` is autocannon's copy for this request).
                  if (newKey) req.headers!['idempotency-key'] = newKey();
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

// The bench is gone (killed or interrupted): stop generating load.
process.on('disconnect', () => process.exit(0));

process.on('message', (message: { plan: LoadPlan }) => {
  const { plan } = message;
  (async () => {
    if (plan.warmupSeconds > 0) await run(plan, plan.warmupSeconds);
    process.send!({ measuring: true });
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
