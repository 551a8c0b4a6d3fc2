import type { Request, RequestHandler } from 'express';
import { DomainError } from '../domain/errors';
import type { AbuseMetrics } from '../metrics/abuse';

/**
 * Admission per route class, so that database work of one kind cannot take every pooled connection from another.
 * A request holds one slot of its class from when its body is parsed until its response ends; it uses at most one
 * pooled connection at a time, so a class's slots bound its connections.
 *
 * - `payments`: POST /v1/verify, /v1/settle, /x402/verify, /x402/settle: not bounded here (the rate limiter bounds
 *   them; a settle mostly waits on the ledger, not on the database).
 * - `writes` (every other POST/PUT/PATCH/DELETE) and `reads` (GET, /mcp) share one bound: the pool minus the
 *   reserve.
 *
 * The reserve (`reservedForPayments`, default 30 % of the pool, at least 1) is therefore never taken by reads or
 * writes: however many searches arrive, verify and settle find connections. A read or write over the bound waits
 * in a bounded queue (first come, first served); when that queue is full too it is answered 503
 * SERVICE_UNAVAILABLE with Retry-After: 1 (load shed, counted in api_admission_shed_total). /health, /version and
 * /metrics are not admitted (they stay observable under load). Per process: with several processes each has its own
 * pool and its own slots.
 */
export type RouteClass = 'payments' | 'writes' | 'reads';
const PAYMENT_PATHS = new Set(['/v1/verify', '/v1/settle', '/x402/verify', '/x402/settle']);
const UNADMITTED = new Set(['/health', '/version', '/metrics']);

export function routeClass(req: Pick<Request, 'method' | 'path'>): RouteClass | null {
  const path = req.path.length > 1 && req.path.endsWith('/') ? req.path.slice(0, -1) : req.path;
  if (UNADMITTED.has(path)) return null;
  if (PAYMENT_PATHS.has(path)) return 'payments';
  if (req.method === 'GET' || req.method === 'HEAD' || path === '/mcp') return 'reads';
  return 'writes';
}

export interface AdmissionOptions {
  /** Connections in the process's pool (DATABASE_POOL_MAX). */
  poolMax: number;
  /** Slots only payments may use (default max(1, 30 % of the pool)). */
  reservedForPayments?: number;
  /** Requests that may wait per class (default 200). */
  maxWaiting?: number;
  metrics: AbuseMetrics;
}

class Slots {
  private used = 0;
  private readonly queue: Array<() => void> = [];
  constructor(
    private readonly limit: number,
    private readonly maxWaiting: number,
  ) {}
  get inUse(): number {
    return this.used;
  }
  get waiting(): number {
    return this.queue.length;
  }
  /** Resolves when a slot is held; null when the class and its queue are full. */
  acquire(): Promise<void> | null {
    if (this.used < this.limit) {
      this.used += 1;
      return Promise.resolve();
    }
    if (this.queue.length >= this.maxWaiting) return null;
    return new Promise((resolve) => this.queue.push(resolve));
  }
  release(): void {
    const next = this.queue.shift();
    if (next)
      next(); // the slot passes straight to the next waiter
    else this.used -= 1;
  }
}

export function admission(opts: AdmissionOptions): RequestHandler {
  const pool = Math.max(1, opts.poolMax);
  const reserved = Math.min(pool - 1, opts.reservedForPayments ?? Math.max(1, Math.floor(pool * 0.3)));
  const bounded = new Slots(Math.max(1, pool - reserved), opts.maxWaiting ?? 200);
  const inflight: Record<RouteClass, number> = { payments: 0, writes: 0, reads: 0 };
  const waiting: Record<RouteClass, number> = { payments: 0, writes: 0, reads: 0 };
  const report = (c: RouteClass) => {
    opts.metrics.inflight.set({ class: c }, inflight[c]);
    opts.metrics.waiting.set({ class: c }, waiting[c]);
  };
  for (const c of Object.keys(inflight) as RouteClass[]) {
    report(c);
    opts.metrics.shed.inc({ class: c }, 0);
  }
  return (req, res, next) => {
    const c = routeClass(req);
    if (!c) return next();
    if (c === 'payments') {
      inflight.payments += 1;
      report(c);
      let done = false;
      const end = () => {
        if (done) return;
        done = true;
        inflight.payments -= 1;
        report(c);
      };
      res.on('finish', end);
      res.on('close', end);
      return next();
    }
    const wait = bounded.acquire();
    if (!wait) {
      opts.metrics.shed.inc({ class: c });
      return next(
        new DomainError(
          'SERVICE_UNAVAILABLE',
          'The service is at capacity for this kind of request; retry shortly',
          [],
          { 'Retry-After': '1' },
        ),
      );
    }
    waiting[c] += 1;
    report(c);
    let released = false;
    let admitted = false;
    const release = () => {
      if (released) return;
      released = true;
      if (admitted) {
        inflight[c] -= 1;
        bounded.release();
      }
      report(c);
    };
    res.on('finish', release);
    res.on('close', release);
    void wait.then(() => {
      admitted = true;
      waiting[c] -= 1;
      inflight[c] += 1;
      if (released) {
        // the client went away while waiting: pass the slot on at once
        inflight[c] -= 1;
        bounded.release();
        report(c);
        return;
      }
      report(c);
      next();
    });
  };
}
