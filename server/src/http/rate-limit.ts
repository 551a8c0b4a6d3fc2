import type { RequestHandler } from 'express';
import type { Sequelize } from 'sequelize';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { DomainError } from '../domain/errors';
import type { Metrics } from '../metrics/registry';

/**
 * Fixed-window rate limiting per API key (or per client IP without a key), stored in PostgreSQL so every server
 * process shares the same counters. Refusals are 429 RATE_LIMITED with Retry-After and RateLimit-* headers.
 */
export function rateLimit(deps: { db: Sequelize; points: number; windowSeconds: number; metrics: Metrics }): RequestHandler {
  const limiter = new RateLimiterPostgres({
    storeClient: deps.db,
    storeType: 'sequelize',
    tableName: 'rate_limits',
    tableCreated: true,
    clearExpiredByTimeout: false,
    keyPrefix: 'api',
    points: deps.points,
    duration: deps.windowSeconds,
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
        deps.metrics.rateLimited.inc({ route: routeOf(req.originalUrl) });
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

/** A bounded label for a path that has not been matched to a route yet: its first two segments. */
function routeOf(url: string): string {
  return url.split('?')[0].split('/').slice(0, 3).join('/');
}
