import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Sequelize } from 'sequelize';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { DomainError } from '../domain/errors';
import type { Metrics } from '../metrics/registry';

/**
 * Fixed-window rate limiting, counted in PostgreSQL so every server process shares the same counters. It runs before
 * anything else is done for a request (body parsing, validation, handlers, /health's checks, /metrics, /docs): the
 * only work before it is resolving the API key (authenticate.ts). The bucket is the principal of a valid key
 * (`res.locals.rateLimitKey`): the seller (`seller:<sellerId>`, shared by all its keys, so minting a key never resets
 * the limit) or the operator (`operator`, every operator key); a request without a key, or with a malformed or
 * unknown one, counts against its client IP, so a flood of bad keys is limited like any other flood. Refusals are 429
 * RATE_LIMITED with
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

type RateLimitDeps = {
  db: Sequelize;
  points: number;
  windowSeconds: number;
  metrics: Metrics;
  routeOf: (path: string) => string;
};

export function rateLimit(deps: RateLimitDeps): RequestHandler {
  return createRateLimiter(deps).middleware;
}

/**
 * Charges `points` more to the request's bucket (the same key the middleware used): for a request that carries
 * several units of work (an MCP batch pays one point per JSON-RPC message). Rejects with 429 RATE_LIMITED when the
 * bucket runs out part-way (the points taken stay spent).
 */
export type ChargeRequest = (req: Request, res: Response, points: number) => Promise<void>;

export function createRateLimiter(deps: RateLimitDeps): { middleware: RequestHandler; charge: ChargeRequest } {
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

  /** The bucket after taking one point from its lease when it has one for the current window; else null (ask take). */
  function takeLeased(key: string): LocalBucket | null {
    const bucket = buckets.get(key);
    if (!bucket || bucket.left <= 0 || bucket.resetAt <= Date.now()) return null;
    bucket.left -= 1;
    return bucket;
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

  const keyOf = (req: Request, res: Response) => (res.locals.rateLimitKey as string | undefined) ?? `ip:${req.ip}`;
  const refused = (req: Request, bucket: LocalBucket) => {
    const retryAfter = String(Math.max(1, Math.ceil((bucket.resetAt - Date.now()) / 1000)));
    deps.metrics.rateLimited.inc({ route: deps.routeOf(req.path) });
    return new DomainError('RATE_LIMITED', `Too many requests; retry after ${retryAfter} s`, [], {
      'Retry-After': retryAfter,
      'RateLimit-Limit': String(deps.points),
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': retryAfter,
    });
  };
  const headers = (res: Response, bucket: LocalBucket) => {
    res.setHeader('RateLimit-Limit', String(deps.points));
    res.setHeader('RateLimit-Remaining', String(bucket.sharedLeft + bucket.left));
    res.setHeader('RateLimit-Reset', String(Math.max(1, Math.ceil((bucket.resetAt - Date.now()) / 1000))));
  };

  const middleware: RequestHandler = (req, res, next) => {
    const key = keyOf(req, res);
    // Most requests find a point in their process's lease: admitted at once, without a promise (take's first case).
    const leased = takeLeased(key);
    if (leased) {
      headers(res, leased);
      return next();
    }
    return admitSlow(key, req, res, next);
  };
  const admitSlow = async (key: string, req: Request, res: Response, next: NextFunction) => {
    try {
      const { admitted, bucket } = await take(key);
      if (!admitted) return next(refused(req, bucket));
      headers(res, bucket);
      next();
    } catch (err) {
      next(err);
    }
  };
  const charge: ChargeRequest = async (req, res, points) => {
    const key = keyOf(req, res);
    for (let i = 0; i < points; i++) {
      const { admitted, bucket } = await take(key);
      if (!admitted) throw refused(req, bucket);
      if (i === points - 1) headers(res, bucket);
    }
  };
  return { middleware, charge };
}

/** Sign-up challenges a client address, and a wallet address, may ask for per hour (POST /v1/sellers/challenges). */
export interface ChallengeLimit {
  perClient: number;
  perWallet: number;
}
export const DEFAULT_CHALLENGE_LIMIT: ChallengeLimit = { perClient: 60, perWallet: 10 };
const CHALLENGE_WINDOW_SECONDS = 3600;

/**
 * Sign-up challenges are limited per client address and per wallet address (an hour's window each, counted in
 * PostgreSQL across processes), on top of the general limit: every challenge is a row until the retention worker
 * removes it, and a wallet needs one per sign-up. Runs after validation (only well-formed requests count, keyed by
 * their wallet). Refusals are 429 RATE_LIMITED with Retry-After.
 */
export function challengeRateLimit(deps: { db: Sequelize; limit?: ChallengeLimit; metrics: Metrics }): RequestHandler {
  const limit = deps.limit ?? DEFAULT_CHALLENGE_LIMIT;
  const limiter = (keyPrefix: string, points: number) =>
    new RateLimiterPostgres({
      storeClient: deps.db,
      storeType: 'sequelize',
      tableName: 'rate_limits',
      tableCreated: true,
      clearExpiredByTimeout: false,
      keyPrefix,
      points,
      duration: CHALLENGE_WINDOW_SECONDS,
    });
  const perClient = limiter('challenge-client', limit.perClient);
  const perWallet = limiter('challenge-wallet', limit.perWallet);
  return async (req, res, next) => {
    if (req.method !== 'POST' || req.path !== '/v1/sellers/challenges') return next();
    const wallet = (req.body as { walletAddress?: unknown } | undefined)?.walletAddress;
    try {
      await perClient.consume(`ip:${req.ip}`);
      if (typeof wallet === 'string') await perWallet.consume(wallet);
      next();
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) return next(err);
      const retryAfter = String(Math.max(1, Math.ceil(err.msBeforeNext / 1000)));
      deps.metrics.rateLimited.inc({ route: '/v1/sellers/challenges' });
      next(
        new DomainError(
          'RATE_LIMITED',
          `Too many sign-up challenges from this address or for this wallet; retry after ${retryAfter} s`,
          [],
          { 'Retry-After': retryAfter },
        ),
      );
    }
  };
}
