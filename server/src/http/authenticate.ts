import type { RequestHandler } from 'express';
import { DomainError } from '../domain/errors';
import { hashApiKey, sameSecret, PUBLIC, type Principal } from '../domain/auth/principal';
import type { SellerRepository } from '../domain/sellers/types';

/**
 * Resolves `Authorization: Bearer <api key>` into a principal (res.locals.principal). No header: public. A header
 * that is malformed or names no key: 401 UNAUTHORIZED, even on public endpoints, so a typo never silently
 * downgrades a seller to public.
 */
export function authenticate(deps: { sellers: SellerRepository; operatorApiKey: string | null }): RequestHandler {
  return async (req, res, next) => {
    const header = req.get('authorization');
    if (!header) {
      res.locals.principal = PUBLIC;
      return next();
    }
    const match = /^Bearer ([A-Za-z0-9_\-.~+/=]{16,512})$/.exec(header);
    const fail = () => next(new DomainError('UNAUTHORIZED', 'The API key is malformed or unknown'));
    if (!match) return fail();
    const key = match[1];
    if (deps.operatorApiKey && sameSecret(key, deps.operatorApiKey)) {
      res.locals.principal = { role: 'operator' } satisfies Principal;
      res.locals.rateLimitKey = 'operator';
      return next();
    }
    try {
      const record = await deps.sellers.findApiKeyByHash(hashApiKey(key));
      if (!record || record.role !== 'seller' || !record.sellerId) return fail();
      res.locals.principal = { role: 'seller', sellerId: record.sellerId, keyId: record.id } satisfies Principal;
      res.locals.rateLimitKey = `key:${record.id}`;
      next();
    } catch (err) {
      next(err);
    }
  };
}
