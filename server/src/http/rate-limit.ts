import type { RequestHandler } from 'express';
import type { Sequelize } from 'sequelize';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { DomainError } from '../domain/errors';
import type { Metrics } from '../metrics/registry';

/**
 * Fixed-window rate limiting, stored in PostgreSQL so every server process shares the same counters. It runs before
 * anything else is done for a request (body parsing, validation, handlers, /health's checks, /metrics, /docs): the
 * only work before it is resolving the API key (authenticate.ts). The bucket is the valid API key
 * (`res.locals.rateLimitKey`); a request without a key, or with a malformed or unknown one, counts against its
 * client IP, so a flood of bad keys is limited like any other flood. Refusals are 429 RATE_LIMITED with
 * Retry-After and RateLimit-* headers. When the database cannot be reached, an in-process limiter with the same
 * budget takes over (so /health can still report the outage, and the limit still holds per process).
 */
export function rateLimit(deps: { db: Sequelize; points: number; windowSeconds: number; metrics: Metrics; routeOf: (path: string) => string }): RequestHandler {
  const limiter = new RateLimiterPostgres({
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
  return async (req, res, next) => {
    const key = (res.locals.rateLimitKey as string | undefined) ?? `ip:${req.ip}`;
    try {
      const r = await limiter.consume(key, 1);
      res.setHeader('RateLimit-Limit', String(deps.points));
      res.setHeader('RateLimit-Remaining', String(r.remainingPoints));
      res.setHeader('RateLimit-Reset', String(Math.ceil(r.msBeforeNext / 1000)));
      next();
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        const retryAfter = String(Math.max(1, Math.ceil(err.msBeforeNext / 1000)));
        deps.metrics.rateLimited.inc({ route: deps.routeOf(req.path) });
        return next(
          new DomainError('RATE_LIMITED', `Too many requests; retry after ${retryAfter} s`, [], {
            'Retry-After': retryAfter,
            'RateLimit-Limit': String(deps.points),
            'RateLimit-Remaining': '0',
            'RateLimit-Reset': retryAfter,
          }),
        );
      }
      next(err);
    }
  };
}
