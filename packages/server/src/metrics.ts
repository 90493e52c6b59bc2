import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type Metric,
  type MetricValueWithName,
} from 'prom-client';
import { RedisChangeTokens, type ChangeTokens } from './db/change-tokens.js';
import type { Db } from './db/database.js';
import { AppError } from './errors.js';
import { RateLimitedError } from './http/pipeline.js';
import { countOutbox } from './domains/mail/outbox.repo.js';

type RequestLabel = 'method' | 'route' | 'status';

/** Upper bounds of the request duration histogram's buckets, in seconds. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One request series as `Metrics.observeRequest` counts it. */
interface RequestSeries {
  readonly labels: Record<RequestLabel, string>;
  count: number;
  sum: number;
  /** Observations per bucket of `DURATION_BUCKETS`, not yet cumulative; above the last: count less these. */
  readonly buckets: number[];
}

/**
 * A metric prom-client's registry exposes as it does its own (`registerMetric`
 * takes anything with a name and `get`): the request counter, or the duration
 * histogram with its cumulative `_bucket`, `_sum` and `_count` lines.
 */
function requestMetric(
  name: string,
  help: string,
  type: 'counter' | 'histogram',
  series: () => Iterable<RequestSeries>,
): Metric {
  const get = async () => {
    const values: MetricValueWithName<string>[] = [];
    for (const s of series()) {
      if (type === 'counter') {
        values.push({ labels: s.labels, value: s.count });
        continue;
      }
      let cumulative = 0;
      DURATION_BUCKETS.forEach((le, i) => {
        cumulative += s.buckets[i]!;
        values.push({
          metricName: `${name}_bucket`,
          labels: { ...s.labels, le },
          value: cumulative,
        });
      });
      values.push({
        metricName: `${name}_bucket`,
        labels: { ...s.labels, le: '+Inf' },
        value: s.count,
      });
      values.push({ metricName: `${name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${name}_count`, labels: s.labels, value: s.count });
    }
    return { name, help, type, values, aggregator: 'sum' as const };
  };
  return { name, help, get, reset: () => undefined } as unknown as Metric;
}

/**
 * Prometheus metrics of one app, on a registry of its own (never prom-client's
 * global one, so apps in one process — tests — never share or collide). Labels
 * hold route templates, methods, status codes and credential kinds only:
 * never a raw URL, a secret's name, an id or an e-mail address.
 * Values other parts keep anyway (cache hits, the audit buffer, the pool) are
 * read when scraped, so counting costs the request path nothing extra.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly rateLimited: Counter<'credential'>;
  /**
   * The request series by method, status and route template, counted here and
   * handed to prom-client only when scraped (`requestMetric`): prom-client's
   * own `inc` and `observe` validate and hash the labels on every call, a
   * microsecond and a half of every request. Bounded like the series
   * themselves (templates, not URLs).
   */
  private readonly requestSeries = new Map<string, RequestSeries>();

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const series = () => this.requestSeries.values();
    this.registry.registerMetric(
      requestMetric(
        'coffer_http_requests_total',
        'HTTP requests answered, by method, route template and status',
        'counter',
        series,
      ),
    );
    this.registry.registerMetric(
      requestMetric(
        'coffer_http_request_duration_seconds',
        'Time from request to response, by method, route template and status',
        'histogram',
        series,
      ),
    );
    this.rateLimited = new Counter({
      name: 'coffer_rate_limited_total',
      help: 'Requests refused with 429, by the budget exceeded (session, api_key, ci_token, anonymous, auth)',
      labelNames: ['credential'],
      registers,
    });
  }

  /** One answered request; `route` is the template (`/v1/projects/:project_id`), or `unmatched`. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let series = this.requestSeries.get(key);
    if (series === undefined) {
      series = {
        labels: { method, route, status: String(status) },
        count: 0,
        sum: 0,
        buckets: new Array<number>(DURATION_BUCKETS.length).fill(0),
      };
      this.requestSeries.set(key, series);
    }
    series.count++;
    series.sum += seconds;
    // Each observation in the first bucket it fits; the exposition sums them up (`le`).
    for (let i = 0; i < DURATION_BUCKETS.length; i++) {
      if (seconds <= DURATION_BUCKETS[i]!) {
        series.buckets[i]!++;
        break;
      }
    }
  }

  rateLimitedRequest(credential: string): void {
    this.rateLimited.inc({ credential });
  }

  /** A gauge read at scrape time (a read that fails leaves the last value). */
  gauge(name: string, help: string, read: () => number | Promise<number>): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        try {
          this.set(await read());
        } catch {
          // e.g. the database is down: /readyz says so; the scrape still answers
        }
      },
    });
  }

  /** A gauge with one label, read at scrape time (`read` returns a value per label value). */
  labelledGauge(
    name: string,
    help: string,
    label: string,
    read: () => Record<string, number> | null,
  ): void {
    new Gauge({
      name,
      help,
      labelNames: [label],
      registers: [this.registry],
      collect() {
        const values = read();
        if (!values) return;
        for (const [value, n] of Object.entries(values)) this.set({ [label]: value }, n);
      },
    });
  }

  /** A counter kept elsewhere as a running total (it only grows), read at scrape time. */
  counter(name: string, help: string, read: () => number): void {
    new Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  }

  /** Running totals kept elsewhere, one per label value, read at scrape time. */
  labelledCounter(
    name: string,
    help: string,
    label: string,
    read: () => Record<string, number>,
  ): void {
    new Counter({
      name,
      help,
      labelNames: [label],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [value, n] of Object.entries(read())) this.inc({ [label]: value }, n);
      },
    });
  }

  /** A histogram of values observed by the caller. */
  histogram(name: string, help: string, buckets: number[]): (value: number) => void {
    const histogram = new Histogram({ name, help, buckets, registers: [this.registry] });
    return (value) => histogram.observe(value);
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}

/**
 * Counts every answered request by its route template, and with
 * `METRICS_TOKEN` serves `GET /metrics` on the app's own port to requests
 * carrying `Authorization: Bearer <token>` (compared in constant time; 401
 * otherwise). That route is not rate limited and not in the OpenAPI document.
 */
export function registerMetrics(
  app: FastifyInstance,
  metrics: Metrics,
  context: ObservedParts,
  token: string | null,
): void {
  observeContext(app, metrics, context);
  // A callback hook: it runs on every request, and an async one costs a promise each time.
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(
      request.method,
      request.routeOptions.url ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
  if (token === null) return;
  const expected = createHash('sha256').update(token).digest();
  app.get(
    '/metrics',
    { config: { rateClass: 'none' }, schema: { hide: true } },
    async (request, reply) => {
      const header = request.headers.authorization ?? '';
      const match = /^Bearer (\S+)$/i.exec(header);
      const given = createHash('sha256')
        .update(match?.[1] ?? '')
        .digest();
      if (!match || !timingSafeEqual(given, expected)) {
        throw new AppError('unauthenticated', 'The metrics token is missing or wrong');
      }
      const { body, contentType } = await metrics.scrape();
      return reply.type(contentType).send(body);
    },
  );
}

interface CacheCounts {
  readonly hits: number;
  readonly misses: number;
}

/** The parts of an app whose state the metrics read. */
interface ObservedParts {
  db: Db;
  listingCache: CacheCounts;
  outbox: { readonly deliveryFailures: number };
  /** Every cache of the read path, by name (`listing`, `access`, `secret`, `credential`). */
  readCaches: Record<string, CacheCounts>;
  changeTokens: ChangeTokens | null;
}

/** What the app's parts keep: the listing cache, the outbox, the database pool, refusals. */
function observeContext(app: FastifyInstance, metrics: Metrics, ctx: ObservedParts): void {
  app.addHook('onError', async (_request, _reply, error) => {
    if (error instanceof RateLimitedError) metrics.rateLimitedRequest(error.budget);
  });
  const cache = ctx.listingCache;
  metrics.counter(
    'coffer_listing_cache_hits_total',
    'Secret listings answered from the listing cache',
    () => cache.hits,
  );
  metrics.counter(
    'coffer_listing_cache_misses_total',
    'Secret listings built from the database (not cached)',
    () => cache.misses,
  );
  const caches = Object.entries(ctx.readCaches);
  const byCache = (count: (c: CacheCounts) => number) => () =>
    Object.fromEntries(caches.map(([name, c]) => [name, count(c)]));
  metrics.labelledCounter(
    'coffer_read_cache_hits_total',
    'Lookups of the read path answered from a cache, by cache (listing, access, secret, credential)',
    'cache',
    byCache((c) => c.hits),
  );
  metrics.labelledCounter(
    'coffer_read_cache_misses_total',
    'Lookups of the read path that asked the database, by cache',
    'cache',
    byCache((c) => c.misses),
  );
  const statements = ctx.db.statements;
  metrics.labelledCounter(
    'coffer_db_statements_total',
    'Statements run on the database, by kind (select; other: writes, begin, commit, locks)',
    'kind',
    () => ({ select: statements.select, other: statements.other }),
  );
  const tokens = ctx.changeTokens;
  if (tokens) {
    metrics.gauge(
      'coffer_read_cache_degraded',
      '1 while the change tokens cannot be read (Redis unreachable): reads ask the database, writes to projects are refused',
      () => (tokens.degraded ? 1 : 0),
    );
    metrics.counter(
      'coffer_read_cache_fallbacks_total',
      'Reads that asked the database because the change tokens could not be read (Redis unreachable)',
      () => tokens.fallbacks,
    );
  }
  if (tokens instanceof RedisChangeTokens) {
    const observe = metrics.histogram(
      'coffer_change_seen_lag_seconds',
      "Time from a write's end on any instance to the first read on this one that met its new change token",
      [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 300],
    );
    tokens.onTokenSeen = (lagMs) => observe(lagMs / 1000);
  }
  const db = ctx.db;
  const outboxCount = (status: 'pending' | 'failed') => countOutbox(db.kysely, status);
  metrics.gauge(
    'coffer_outbox_pending',
    'E-mails waiting in the outbox to be delivered (backlog)',
    () => outboxCount('pending'),
  );
  metrics.gauge(
    'coffer_outbox_failed',
    'E-mails given up on after every retry (left for an operator)',
    () => outboxCount('failed'),
  );
  metrics.counter(
    'coffer_outbox_delivery_failures_total',
    'E-mail delivery attempts that failed (each is retried until the last)',
    () => ctx.outbox.deliveryFailures,
  );
  if (db.poolCounts) {
    const counts = db.poolCounts.bind(db);
    metrics.labelledGauge(
      'coffer_db_pool_connections',
      'PostgreSQL pool connections: total open, idle, and requests waiting for one',
      'state',
      () => {
        const { total, idle, waiting } = counts();
        return { total, idle, waiting };
      },
    );
  }
}

/** `METRICS_PORT`: the metrics alone, on a plain-HTTP listener of their own. */
export async function listenForMetrics(
  metrics: Metrics,
  host: string,
  port: number,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found\n');
      return;
    }
    metrics.scrape().then(
      ({ body, contentType }) => {
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return { server, url: `http://${shown}:${bound}/metrics` };
}
