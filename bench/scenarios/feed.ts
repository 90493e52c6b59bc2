// The change feed under load: STREAM_COUNT open event streams on one instance,
// one write fanned out to all of them (time from the write's acknowledgement
// to each stream's event, and to the last one), the memory an idle stream
// costs, and the secret listing's throughput with the streams open against
// the same listing without them, in the same run.
import { Agent, request, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import { apiPath } from '@coffer/sdk';
import type { LoadGenerator } from '../lib/load.js';
import { MB, measureLoad, type Timing } from '../lib/measure.js';
import type { ServerProcess } from '../lib/processes.js';
import type { Target, ValueRow } from '../lib/report.js';
import type { Fixture } from './fixture.js';

export const STREAM_COUNT = 1000;
/** Writes fanned out; each gives STREAM_COUNT delivery times. */
const WRITES = 5;

export const FEED_IDS = ['feed-fanout', 'feed-idle-memory', 'feed-listing'];

export const feedTargets = {
  fanout: {
    text: 'p99 ≤ 1 s to all 1,000',
    check: (row) => row.kind === 'value' && row.value <= 1000,
  },
  idle: {
    text: '≤ 20 KB per idle stream',
    check: (row) => row.kind === 'value' && row.value <= 20,
  },
  listing: {
    text: 'within 10% of no streams',
    check: (row) => row.kind === 'value' && row.value >= 90,
  },
} satisfies Record<string, Target>;

interface Stream {
  /** When this stream saw the event of write N (ms, performance.now()). */
  seen: Map<number, number>;
  close(): void;
}

/** Opens one event stream and records when each `secrets.changed` arrives. */
function openStream(
  baseUrl: string,
  ca: string | null,
  agent: Agent | undefined,
  path: string,
  bearer: string,
): Promise<Stream> {
  const url = new URL(path, baseUrl);
  const options: RequestOptions = {
    method: 'GET',
    headers: { authorization: `Bearer ${bearer}`, accept: 'text/event-stream' },
    ...(agent ? { agent } : {}),
    ...(ca ? { ca } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? request : httpRequest)(url, options, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`stream answered ${res.statusCode}`));
        res.resume();
        return;
      }
      const seen = new Map<number, number>();
      let ready = false;
      // The end of what came so far: a frame split across two reads is whole here.
      let tail = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const at = performance.now();
        tail = (tail + chunk).slice(-4096);
        if (!ready && tail.includes('event: ready')) {
          ready = true;
          resolve({ seen, close: () => req.destroy() });
        }
        // Write N updates BENCH_SECRET_00N: the event names it.
        for (const match of tail.matchAll(/"names":\["BENCH_SECRET_(\d+)"\]/g)) {
          const n = Number(match[1]);
          if (!seen.has(n)) seen.set(n, at);
        }
      });
      res.on('error', () => undefined);
    });
    req.on('error', reject);
    req.end();
  });
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

export async function measureFeed(ctx: {
  load: LoadGenerator;
  server: ServerProcess;
  fixture: Fixture;
  baseUrl: string;
  caFile: string | null;
  timing: Timing;
  listPlan: Parameters<typeof measureLoad>[2];
  say: (text: string) => void;
  push: (row: Omit<ValueRow, 'backend'>) => void;
}): Promise<void> {
  const { fixture } = ctx;
  const ca = ctx.caFile ? readFileSync(ctx.caFile, 'utf8') : null;
  const eventsPath = apiPath`/v1/projects/${fixture.projectId}/events`;

  // The listing without and with the streams in the order none, with, with,
  // none: a drift of the machine's speed during the run (a shared machine's
  // is large) weighs on both sides alike. A first run, not counted, lets the
  // server finish what the setup left (the invitations' e-mails).
  const listing = (label: string) =>
    measureLoad(ctx.load, ctx.server, ctx.listPlan, ctx.timing, label).then((m) => m.result);
  await listing('listing, settling');
  const without1 = await listing('listing, no streams');

  const agent = ctx.caFile
    ? new Agent({ keepAlive: false, maxSockets: Infinity, ...(ca ? { ca } : {}) })
    : undefined;
  const streams: Stream[] = [];
  const openAll = async () => {
    const opening = performance.now();
    // Opened 50 at a time (TLS handshakes are the cost), all on the API key.
    for (let i = 0; i < STREAM_COUNT; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, STREAM_COUNT - i) }, () =>
          openStream(ctx.baseUrl, ca, agent, eventsPath, fixture.apiKeyBearer),
        ),
      );
      streams.push(...batch);
    }
    return (performance.now() - opening) / 1000;
  };
  const closeAll = () => {
    for (const s of streams.splice(0)) s.close();
  };
  const settle = () => new Promise((resolve) => setTimeout(resolve, 3000));
  try {
    // A first round grows the server's heap to what opening 1,000 TLS streams
    // churns through; the second is measured on that heap, so the difference
    // is what the open streams hold, not the garbage of their handshakes.
    await openAll();
    closeAll();
    await settle();
    const rssBefore = ctx.server.rssMiB();
    const seconds = await openAll();
    ctx.say(`  ${STREAM_COUNT} event streams open (${seconds.toFixed(1)} s)`);
    await settle();
    const rssOpen = ctx.server.rssMiB();
    const perStreamKB = ((rssOpen - rssBefore) * 1024 * 1024) / STREAM_COUNT / 1000;

    // One write at a time, fanned out to every stream.
    const delays: number[] = [];
    const lasts: number[] = [];
    for (let w = 0; w < WRITES; w++) {
      const status = await put(ctx.baseUrl, ca, fixture.writes[w]!, fixture.apiKeyBearer);
      const acked = performance.now();
      if (status >= 300) throw new Error(`the write answered ${status}`);
      const deadline = acked + 30_000;
      while (streams.some((s) => !s.seen.has(w)) && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const missing = streams.filter((s) => !s.seen.has(w)).length;
      if (missing > 0) throw new Error(`${missing} streams never received write ${w}`);
      const times = streams.map((s) => Math.max(0, s.seen.get(w)! - acked));
      delays.push(...times);
      lasts.push(Math.max(...times));
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    delays.sort((a, b) => a - b);
    lasts.sort((a, b) => a - b);

    // The listing with every stream open, twice, then without again.
    const with1 = await listing(`listing, ${STREAM_COUNT} streams open`);
    const with2 = await listing(`listing, ${STREAM_COUNT} streams open`);
    closeAll();
    await settle();
    const without2 = await listing('listing, no streams again');
    const none = (without1.rps + without2.rps) / 2;
    const ratio = ((with1.rps + with2.rps) / 2 / none) * 100;

    ctx.push({
      kind: 'value',
      id: 'feed-fanout',
      title: `feed: one write to ${STREAM_COUNT} streams, p99 ack → event`,
      value: percentile(delays, 99),
      unit: 'ms',
      detail: `p50 ${percentile(delays, 50).toFixed(0)} ms, p99 ${percentile(delays, 99).toFixed(0)} ms over ${delays.length} deliveries; to the last stream: median ${percentile(lasts, 50).toFixed(0)} ms, worst ${lasts[lasts.length - 1]!.toFixed(0)} ms (${WRITES} writes)`,
      target: feedTargets.fanout,
      pass: null,
      breakdown: { lastMs: lasts },
    });
    ctx.push({
      kind: 'value',
      id: 'feed-idle-memory',
      title: 'feed: server memory per idle stream',
      value: perStreamKB,
      unit: 'KB',
      detail: `(VmRSS with ${STREAM_COUNT} streams − after a first round was closed) / ${STREAM_COUNT}: ${MB(rssBefore).toFixed(0)} → ${MB(rssOpen).toFixed(0)} MB`,
      target: feedTargets.idle,
      pass: null,
    });
    ctx.push({
      kind: 'value',
      id: 'feed-listing',
      title: `feed: listing throughput with ${STREAM_COUNT} streams open, % of none`,
      value: ratio,
      unit: '%',
      detail: `with: ${Math.round(with1.rps)} and ${Math.round(with2.rps)} req/s (p99 ${with1.p99}, ${with2.p99} ms); without, before and after: ${Math.round(without1.rps)} and ${Math.round(without2.rps)} req/s (p99 ${without1.p99}, ${without2.p99} ms)`,
      target: feedTargets.listing,
      pass: null,
    });
  } finally {
    closeAll();
    agent?.destroy();
  }
}

/** One of the fixture's writes (a new version of a secret of WRITE_ENV); resolves with the status. */
function put(baseUrl: string, ca: string | null, write: Fixture['writes'][number], bearer: string) {
  const url = new URL(write.path, baseUrl);
  return new Promise<number>((resolve, reject) => {
    const req = (url.protocol === 'https:' ? request : httpRequest)(
      url,
      {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${bearer}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(write.body),
        },
        ...(ca ? { ca } : {}),
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(write.body);
  });
}
