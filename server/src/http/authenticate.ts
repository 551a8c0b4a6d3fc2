import type { RequestHandler } from 'express';
import { DomainError } from '../domain/errors';
import { hashApiKey, sameSecret, PUBLIC, type Principal } from '../domain/auth/principal';
import type { ApiKeyRecord, SellerRepository } from '../domain/sellers/types';

const BEARER = /^Bearer ([A-Za-z0-9_\-.~+/=]{16,512})$/;

/**
 * Resolves `Authorization: Bearer <api key>` into a principal (res.locals.principal) and, for a valid key, its rate
 * limit bucket (res.locals.rateLimitKey). It never answers by itself: a malformed or unknown key is only marked
 * (res.locals.credentialsRejected), so that the rate limiter counts it against the client IP first and
 * `rejectBadCredentials` answers 401 after it. A malformed header is not looked up at all.
 *
 * Valid keys are cached in the process (ApiKeyCache: key hash → principal, API_KEY_CACHE_TTL_MS, at most
 * API_KEY_CACHE_MAX entries), so a seller's requests do not look the key up in the database every time. Unknown
 * keys are not cached (a key created a moment ago is found at once). The service has no key revocation or rotation
 * today (api_keys.revoked_at is never set by it); a key revoked in the database is refused by every process within
 * the TTL, or at once by a process that calls `forget` on its cache.
 */
export function resolveCredentials(deps: { sellers: SellerRepository; operatorApiKey: string | null; cache?: ApiKeyCache }): RequestHandler {
  const cache = deps.cache ?? new ApiKeyCache();
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
      const hash = hashApiKey(key);
      let record = cache.get(hash);
      if (!record) {
        record = await deps.sellers.findApiKeyByHash(hash);
        if (record) cache.set(hash, record);
      }
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

/** How long a valid key's lookup is reused: the longest a key revoked in the database keeps working in a process. */
export const API_KEY_CACHE_TTL_MS = 30_000;
/** Most keys cached per process; the least recently used one is dropped beyond it. */
export const API_KEY_CACHE_MAX = 10_000;

/** A bounded, short-lived cache of API-key hash → key record (never the key itself). */
export class ApiKeyCache {
  private readonly entries = new Map<string, { record: ApiKeyRecord; expiresAt: number }>();

  constructor(
    private readonly ttlMs = API_KEY_CACHE_TTL_MS,
    private readonly max = API_KEY_CACHE_MAX,
    private readonly now: () => number = Date.now,
  ) {}

  get(hash: Buffer): ApiKeyRecord | null {
    const id = hash.toString('base64');
    const entry = this.entries.get(id);
    if (!entry) return null;
    this.entries.delete(id);
    if (entry.expiresAt <= this.now()) return null;
    this.entries.set(id, entry); // most recently used last
    return entry.record;
  }

  set(hash: Buffer, record: ApiKeyRecord): void {
    if (this.ttlMs <= 0) return;
    const id = hash.toString('base64');
    this.entries.delete(id);
    this.entries.set(id, { record, expiresAt: this.now() + this.ttlMs });
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** Drops a key (by its record id) at once: for a revocation or rotation done by this process. */
  forget(keyId: string): void {
    for (const [id, entry] of this.entries) if (entry.record.id === keyId) this.entries.delete(id);
  }

  clear(): void {
    this.entries.clear();
  }
}
