// The slice of autocannon's API the load worker uses (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      body?: string;
      headers?: Record<string, string>;
      setupRequest?: (req: Request) => Request;
    }
    interface Options {
      url: string;
      method?: string;
      headers?: Record<string, string>;
      connections?: number;
      duration?: number;
      pipelining?: number;
      timeout?: number;
      requests?: Request[];
    }
    interface Histogram {
      average: number;
      total: number;
      p50: number;
      p90: number;
      p99: number;
      max: number;
    }
    interface Result {
      start: Date;
      finish: Date;
      errors: number;
      timeouts: number;
      non2xx: number;
      requests: Histogram;
      latency: Histogram;
      throughput: Histogram;
      statusCodeStats: Record<string, { count: number }>;
    }
  }
  function autocannon(
    options: autocannon.Options,
    callback: (err: Error | null, result: autocannon.Result) => void,
  ): unknown;
  export default autocannon;
}
