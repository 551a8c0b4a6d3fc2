/**
 * Load generation over keep-alive HTTP/1.1 (node:http with a keep-alive agent), bounded by request count AND time,
 * and the statistics the benches print. Only loopback URLs are accepted.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface Answer {
  status: number;
  text: string;
  /** Milliseconds from sending the request to the end of the response. */
  ms: number;
  /** performance.now() of this process when the request was handed to node:http, and when its response ended. */
  sentAt?: number;
  endAt?: number;
  /** The response's Server-Timing header (the service with SERVER_TIMING=true), if any. */
  serverTiming?: string;
}

export interface HttpClient {
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  json<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: T }>;
  close(): void;
}

/** A keep-alive client for one loopback base URL. */
export function httpClient(baseUrl: string, maxSockets = 256): HttpClient {
  const base = new URL(baseUrl);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(base.hostname))
    throw new Error(`benches talk to loopback only, not ${base.hostname}`);
  const agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  const once = (
    method: string,
    path: string,
    payload: Buffer | undefined,
    headers: Record<string, string>,
  ): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const t = performance.now();
      const req = http.request(
        {
          host: base.hostname,
          port: base.port,
          path,
          method,
          agent,
          headers: {
            ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
            ...headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const endAt = performance.now();
            const timing = res.headers['server-timing'];
            resolve({
              status: res.statusCode ?? 0,
              text: Buffer.concat(chunks).toString('utf8'),
              ms: endAt - t,
              sentAt: t,
              endAt,
              ...(typeof timing === 'string' ? { serverTiming: timing } : {}),
            });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const payload =
      body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    try {
      return await once(method, path, payload, headers);
    } catch (err) {
      // A keep-alive socket the server closed just as we reused it: the request never reached a handler.
      if ((err as NodeJS.ErrnoException).code === 'ECONNRESET') return once(method, path, payload, headers);
      throw err;
    }
  };
  return {
    request,
    async json<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
      const a = await request(method, path, body, headers);
      let parsed: unknown;
      try {
        parsed = JSON.parse(a.text);
      } catch {
        parsed = { raw: a.text.slice(0, 500) };
      }
      return { status: a.status, body: parsed as T };
    },
    close: () => agent.destroy(),
  };
}

export interface LoadResult {
  ok: number;
  failed: number;
  seconds: number;
  /** Latencies of the successful requests, ms, sorted ascending. */
  latencies: number[];
  /** Requests per second that succeeded. */
  rate: number;
  firstFailure: string | null;
}

type Send = (i: number) => Promise<Answer>;

function finish(
  ok: number,
  failed: number,
  started: number,
  latencies: number[],
  firstFailure: string | null,
): LoadResult {
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { ok, failed, seconds, latencies, rate: ok / seconds, firstFailure };
}

/**
 * Closed loop: `concurrency` clients send back to back until `maxRequests` were sent or `maxSeconds` passed.
 * `isOk` decides success (default: a 2xx status).
 */
export async function closedLoop(opts: {
  concurrency: number;
  maxRequests: number;
  maxSeconds: number;
  send: Send;
  isOk?: (a: Answer) => boolean;
}): Promise<LoadResult> {
  const isOk = opts.isOk ?? ((a: Answer) => a.status >= 200 && a.status < 300);
  const started = performance.now();
  const deadline = started + opts.maxSeconds * 1000;
  const latencies: number[] = [];
  let next = 0;
  let ok = 0;
  let failed = 0;
  let firstFailure: string | null = null;
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      while (next < opts.maxRequests && performance.now() < deadline) {
        const i = next++;
        try {
          const a = await opts.send(i);
          if (isOk(a)) {
            ok++;
            latencies.push(a.ms);
          } else {
            failed++;
            firstFailure ??= `${a.status} ${a.text.slice(0, 400)}`;
          }
        } catch (err) {
          failed++;
          firstFailure ??= (err as Error).message;
        }
      }
    }),
  );
  return finish(ok, failed, started, latencies, firstFailure);
}

/**
 * Open loop at a fixed arrival rate (requests are sent on schedule whether or not earlier ones finished, up to
 * `maxInFlight`), so latency is measured from the scheduled send time: a slow server cannot hide its queueing
 * (no coordinated omission). Bounded by `maxRequests` and `maxSeconds`.
 */
export async function openLoop(opts: {
  rate: number;
  maxRequests: number;
  maxSeconds: number;
  maxInFlight?: number;
  send: Send;
  isOk?: (a: Answer) => boolean;
}): Promise<LoadResult & { late: number; traces: OpenLoopTrace[] }> {
  const isOk = opts.isOk ?? ((a: Answer) => a.status >= 200 && a.status < 300);
  const maxInFlight = opts.maxInFlight ?? 512;
  const total = Math.min(opts.maxRequests, Math.floor(opts.rate * opts.maxSeconds));
  const interval = 1000 / opts.rate;
  const started = performance.now();
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let late = 0;
  let inFlight = 0;
  let firstFailure: string | null = null;
  const pending: Array<Promise<void>> = [];
  const traces: OpenLoopTrace[] = [];
  for (let i = 0; i < total; i++) {
    const scheduled = started + i * interval;
    const wait = scheduled - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    else if (wait < -interval) late++;
    if (inFlight >= maxInFlight) {
      failed++;
      firstFailure ??= `more than ${maxInFlight} requests in flight`;
      continue;
    }
    inFlight++;
    pending.push(
      opts.send(i).then(
        (a) => {
          inFlight--;
          if (isOk(a)) {
            ok++;
            const latency = performance.now() - scheduled;
            latencies.push(latency);
            traces.push({ scheduled, latency, answer: a });
          } else {
            failed++;
            firstFailure ??= `${a.status} ${a.text.slice(0, 400)}`;
          }
        },
        (err: Error) => {
          inFlight--;
          failed++;
          firstFailure ??= err.message;
        },
      ),
    );
  }
  await Promise.all(pending);
  return { ...finish(ok, failed, started, latencies, firstFailure), late, traces };
}

/** One successful request of an open loop: when it was due (performance.now()), its latency from then, its answer. */
export interface OpenLoopTrace {
  scheduled: number;
  latency: number;
  answer: Answer;
}

/** The p-th percentile of ascending-sorted values (nearest rank). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export function latencyLine(sorted: number[]): string {
  const f = (v: number) => `${v.toFixed(1)} ms`;
  return (
    `p50 ${f(percentile(sorted, 50))}  p95 ${f(percentile(sorted, 95))}  p99 ${f(percentile(sorted, 99))}  max ` +
    `${f(sorted[sorted.length - 1] ?? NaN)}`
  );
}

/** Reads a positive number from the environment (bench settings); `zeroAllowed`: 0 too (a step turned off). */
export function envNumber(name: string, fallback: number, zeroAllowed = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (n === 0 && !zeroAllowed))
    throw new Error(`${name} must be a ${zeroAllowed ? 'non-negative' : 'positive'} number (got "${raw}")`);
  return n;
}

/** A POST's answer: its status, its Retry-After in seconds (null when absent) and its JSON body. */
export interface PostAnswer {
  status: number;
  retryAfter: number | null;
  body: Record<string, any>;
}

/** One POST on a fresh connection from `localAddress` (the client address the service sees, req.ip). */
export function postFrom(localAddress: string, url: string, body: unknown, apiKey?: string): Promise<PostAnswer> {
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        localAddress,
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': payload.length,
          ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            const ra = res.headers['retry-after'];
            resolve({
              status: res.statusCode ?? 0,
              retryAfter: ra ? Number(ra) : null,
              body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
            });
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** One run's lines: count, rate, latency percentiles, CPU per request of each process (if measured), first failure. */
export function reportLoad(label: string, r: LoadResult & { cpuMs?: Record<string, number> }, extra = ''): void {
  console.log(`${label}: ${r.ok} ok, ${r.failed} failed in ${r.seconds.toFixed(2)} s = ${r.rate.toFixed(1)}/s${extra}`);
  console.log(`  latency ${latencyLine(r.latencies)}`);
  if (r.cpuMs)
    console.log(
      `  CPU per request (user + system, /proc): ${Object.entries(r.cpuMs)
        .map(([k, ms]) => `${k} ${ms.toFixed(2)} ms`)
        .join(', ')}`,
    );
  if (r.firstFailure) console.log(`  first failure: ${r.firstFailure}`);
}
