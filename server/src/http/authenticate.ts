import type { RequestHandler } from 'express';
import { DomainError } from '../domain/errors';
import { hashApiKey, sameSecret, PUBLIC, type Principal } from '../domain/auth/principal';
import type { SellerRepository } from '../domain/sellers/types';

const BEARER = /^Bearer ([A-Za-z0-9_\-.~+/=]{16,512})$/;

/**
 * Resolves `Authorization: Bearer <api key>` into a principal (res.locals.principal) and, for a valid key, its rate
 * limit bucket (res.locals.rateLimitKey). It never answers by itself: a malformed or unknown key is only marked
 * (res.locals.credentialsRejected), so that the rate limiter counts it against the client IP first and
 * `rejectBadCredentials` answers 401 after it. A malformed header is not looked up at all.
 */
export function resolveCredentials(deps: { sellers: SellerRepository; operatorApiKey: string | null }): RequestHandler {
  return async (req, res, next) => {
    res.locals.principal = PUBLIC;
    const header = req.get('authorization');
    if (!header) return next();
    const match = BEARER.exec(header);
    if (!match) {
      res.locals.credentialsRejected = true;
      return next();
    }
    const key = match[1];
    if (deps.operatorApiKey && sameSecret(key, deps.operatorApiKey)) {
      res.locals.principal = { role: 'operator' } satisfies Principal;
      res.locals.rateLimitKey = 'operator';
      return next();
    }
    try {
      const record = await deps.sellers.findApiKeyByHash(hashApiKey(key));
      if (!record || record.role !== 'seller' || !record.sellerId) {
        res.locals.credentialsRejected = true;
        return next();
      }
      res.locals.principal = { role: 'seller', sellerId: record.sellerId, keyId: record.id } satisfies Principal;
      res.locals.rateLimitKey = `key:${record.id}`;
      next();
    } catch (err) {
      next(err);
    }
  };
}

/**
 * A header that is malformed or names no key: 401 UNAUTHORIZED, even on public endpoints, so a typo never silently
 * downgrades a seller to public. Runs after the rate limiter.
 */
export function rejectBadCredentials(): RequestHandler {
  return (_req, res, next) => {
    if (res.locals.credentialsRejected) return next(new DomainError('UNAUTHORIZED', 'The API key is malformed or unknown'));
    next();
  };
}
