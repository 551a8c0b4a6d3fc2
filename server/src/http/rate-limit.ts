import type { RequestHandler } from 'express';
import type { Sequelize } from 'sequelize';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { DomainError } from '../domain/errors';
import type { Metrics } from '../metrics/registry';

/**
 * Fixed-window rate limiting, counted in PostgreSQL so every server process shares the same counters. It runs before
 * anything else is done for a request (body parsing, validation, handlers, /health's checks, /metrics, /docs): the
 * only work before it is resolving the API key (authenticate.ts). The bucket is the valid API key
 * (`res.locals.rateLimitKey`); a request without a key, or with a malformed or unknown one, counts against its
 * client IP, so a flood of bad keys is limited like any other flood. Refusals are 429 RATE_LIMITED with
 * Retry-After and RateLimit-* headers. When the database cannot be reached, an in-process limiter with the same
 * budget takes over (so /health can still report the outage, and the limit still holds per process).
 *
 * Leases (so that one hot row per key is not written by every request): a process takes points from the shared
 * counter `leaseSize(points)` at a time — 1 % of the window's limit, at least 1, at most 100 — and admits requests
 * from its lease in memory until the lease is spent or the window ends. Every admitted request was counted in
 * PostgreSQL before it was admitted, so the processes together never admit more than the limit. Tolerance: a
 * process may hold up to `lease − 1` leased points unused when the window ends, so with P processes the shared limit
 * can refuse up to P × (lease − 1) requests early (at most 1 % of the limit per process); with a limit under 200 the
 * lease is 1 and the limit is exact. Concurrent requests of one key in one process wait for one lease request
 * instead of each writing the row. Once the shared counter refuses, the process answers 429 for that key until the
 * window ends without asking again (a fixed window's count only grows). RateLimit-Remaining is the shared count
 * left when the lease was taken plus this process's unused lease.
 */
export const MAX_LEASE = 100;
export const leaseSize = (points: number): number => Math.max(1, Math.min(MAX_LEASE, Math.floor(points / 100)));
/** Keys whose lease or refusal a process remembers; the oldest is dropped beyond it (its unused points are lost). */
const MAX_LOCAL_KEYS = 50_000;

interface LocalBucket {
  /** Leased points not yet used. */
  left: number;
  /** Points left in the shared counter after the last lease. */
  sharedLeft: number;
  /** Epoch ms when the window (and the lease) ends. */
  resetAt: number;
  /** The shared counter is spent for this window: no more leases. */
  spent: boolean;
  /** A lease request in flight; other requests of the key wait for it. */
  pending: Promise<void> | null;
}

export function rateLimit(deps: { db: Sequelize; points: number; windowSeconds: number; metrics: Metrics; routeOf: (path: string) => string }): RequestHandler {
  const shared = new RateLimiterPostgres({
    storeClient: deps.db,
    storeType: 'sequelize',
    tableName: 'rate_limits',
    tableCreated: true,
    clearExpiredByTimeout: false,
    keyPrefix: 'api',
    points: deps.points,
    duration: deps.windowSeconds,
    insuranceLimiter: new RateLimiterMemory({ keyPrefix: 'api', points: deps.points, duration: deps.windowSeconds }),
  });
  const lease = leaseSize(deps.points);
  const buckets = new Map<string, LocalBucket>();

  /** Takes a lease from the shared counter into `bucket`. */
  async function refill(key: string, bucket: LocalBucket): Promise<void> {
    const startedAt = Date.now();
    try {
      const r = await shared.consume(key, lease);
      bucket.left += lease;
      bucket.sharedLeft = r.remainingPoints;
      bucket.resetAt = startedAt + r.msBeforeNext;
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      // The counter went from consumed − lease to consumed atomically: the points of that range within the limit
      // are this process's; every other process sees the counter past the limit.
      bucket.left += Math.max(0, deps.points - (err.consumedPoints - lease));
      bucket.sharedLeft = 0;
      bucket.spent = true;
      bucket.resetAt = startedAt + err.msBeforeNext;
    }
  }

  /** Admits (returns the bucket after taking one point) or refuses (returns null with the bucket's window end). */
  async function take(key: string): Promise<{ admitted: boolean; bucket: LocalBucket }> {
    for (;;) {
      const now = Date.now();
      let bucket = buckets.get(key);
      if (bucket && bucket.resetAt <= now && !bucket.pending) {
        buckets.delete(key);
        bucket = undefined;
      }
      if (!bucket) {
        bucket = { left: 0, sharedLeft: 0, resetAt: Number.POSITIVE_INFINITY, spent: false, pending: null };
        buckets.set(key, bucket);
        while (buckets.size > MAX_LOCAL_KEYS) buckets.delete(buckets.keys().next().value as string);
      }
      if (bucket.left > 0) {
        bucket.left -= 1;
        return { admitted: true, bucket };
      }
      if (bucket.spent) return { admitted: false, bucket };
      if (!bucket.pending) {
        const b = bucket;
        b.pending = refill(key, b).finally(() => {
          b.pending = null;
        });
      }
      await bucket.pending;
    }
  }

  return async (req, res, next) => {
    const key = (res.locals.rateLimitKey as string | undefined) ?? `ip:${req.ip}`;
    try {
      const { admitted, bucket } = await take(key);
      const resetSeconds = Math.max(1, Math.ceil((bucket.resetAt - Date.now()) / 1000));
      if (admitted) {
        res.setHeader('RateLimit-Limit', String(deps.points));
        res.setHeader('RateLimit-Remaining', String(bucket.sharedLeft + bucket.left));
        res.setHeader('RateLimit-Reset', String(resetSeconds));
        return next();
      }
      const retryAfter = String(resetSeconds);
      deps.metrics.rateLimited.inc({ route: deps.routeOf(req.path) });
      return next(
        new DomainError('RATE_LIMITED', `Too many requests; retry after ${retryAfter} s`, [], {
          'Retry-After': retryAfter,
          'RateLimit-Limit': String(deps.points),
          'RateLimit-Remaining': '0',
          'RateLimit-Reset': retryAfter,
        }),
      );
    } catch (err) {
      next(err);
    }
  };
}
