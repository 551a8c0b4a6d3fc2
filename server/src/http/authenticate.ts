import type { RequestHandler } from 'express';
import { DomainError } from '../domain/errors';
import { hashApiKey, sameSecret, PUBLIC, type Principal } from '../domain/auth/principal';
import type { ApiKeyRecord, SellerRepository } from '../domain/sellers/types';

const BEARER = /^Bearer ([A-Za-z0-9_\-.~+/=]{16,512})$/;

/** The operator keys accepted right now (the current one, and during a rotation the previous one). */
export type OperatorKeys = () => readonly string[];

/**
 * Resolves `Authorization: Bearer <api key>` into a principal (res.locals.principal) and, for a valid key, its
 * principal's rate limit bucket (res.locals.rateLimitKey: `seller:<sellerId>` for every key of a seller, so minting
 * more keys buys no more requests; `operator` for every operator key) and its idempotency scope
 * (res.locals.idempotencyScope: the key, `key:<keyId>`, or `operator`). It never answers by itself: a malformed,
 * unknown, revoked or expired key
 * is only marked (res.locals.credentialsRejected), so that the rate limiter counts it against the client IP first
 * and `rejectBadCredentials` answers 401 after it. A malformed header is not looked up at all.
 *
 * Operator keys: every key `operatorKeys()` returns is accepted (see operator-keys.ts: a rotation adds the new key
 * and later drops the old one, without a restart).
 *
 * Seller keys are cached in the process (ApiKeyCache: key hash → record, API_KEY_CACHE_TTL_MS, at most
 * API_KEY_CACHE_MAX entries), so a seller's requests do not look the key up in the database every time. Unknown
 * keys are not cached (a key created a moment ago is found at once). A revocation is heard by every process through
 * PostgreSQL LISTEN/NOTIFY (api-key-changes.ts), which drops the key from each cache; while a process is not
 * listening (at start, or its listening connection was lost) its cache is suspended and every request looks the key
 * up. Expiry is checked on every request against the cached `expiresAt`. `lastUsedAt` is written at most once a
 * minute per key and process, after the answer is decided (fire and forget: a failed write never fails a request).
 */
export function resolveCredentials(deps: {
  sellers: SellerRepository;
  operatorApiKey: string | null;
  operatorKeys?: OperatorKeys;
  cache?: ApiKeyCache;
  now?: () => number;
}): RequestHandler {
  const cache = deps.cache ?? new ApiKeyCache();
  const now = deps.now ?? Date.now;
  const operatorKeys: OperatorKeys = deps.operatorKeys ?? (() => (deps.operatorApiKey ? [deps.operatorApiKey] : []));
  const touchedAt = new Map<string, number>();
  const touch = (keyId: string) => {
    const t = now();
    if ((touchedAt.get(keyId) ?? 0) > t - LAST_USED_EVERY_MS) return;
    touchedAt.set(keyId, t);
    if (touchedAt.size > API_KEY_CACHE_MAX) touchedAt.delete(touchedAt.keys().next().value as string);
    deps.sellers.touchApiKey(keyId).catch(() => touchedAt.delete(keyId));
  };
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
    // Every accepted operator key is compared (constant time each), so the answer's timing does not tell which matched.
    let operator = false;
    for (const k of operatorKeys()) operator = sameSecret(key, k) || operator;
    if (operator) {
      res.locals.principal = { role: 'operator' } satisfies Principal;
      res.locals.rateLimitKey = 'operator';
      res.locals.idempotencyScope = 'operator';
      return next();
    }
    try {
      const hash = hashApiKey(key);
      let record = cache.get(hash);
      if (!record) {
        const generation = cache.generation;
        record = await deps.sellers.findApiKeyByHash(hash);
        if (record) cache.set(hash, record, generation);
      }
      if (
        !record ||
        record.role !== 'seller' ||
        !record.sellerId ||
        (record.expiresAt && record.expiresAt.getTime() <= now())
      ) {
        res.locals.credentialsRejected = true;
        return next();
      }
      res.locals.principal = {
        role: 'seller',
        sellerId: record.sellerId,
        keyId: record.id,
        scope: record.scope,
      } satisfies Principal;
      // The seller is the principal: all its keys share one budget (issue #29: a new key never resets the limit).
      res.locals.rateLimitKey = `seller:${record.sellerId}`;
      res.locals.idempotencyScope = `key:${record.id}`;
      touch(record.id);
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
    if (res.locals.credentialsRejected)
      return next(new DomainError('UNAUTHORIZED', 'The API key is malformed, unknown, revoked or expired'));
    next();
  };
}

/** How long a valid key's lookup is reused at most (a backstop: revocations are heard at once through NOTIFY). */
export const API_KEY_CACHE_TTL_MS = 30_000;
/** Most keys cached per process; the least recently used one is dropped beyond it. */
export const API_KEY_CACHE_MAX = 10_000;
/** `lastUsedAt` is written at most this often per key and process. */
export const LAST_USED_EVERY_MS = 60_000;

/**
 * A bounded, short-lived cache of API-key hash → key record (never the key itself). It serves only while `resume`d
 * (its process listens for key changes); `generation` grows with every change heard, so a lookup that started
 * before a revocation was heard is not cached after it.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, { record: ApiKeyRecord; expiresAt: number }>();
  private active: boolean;
  generation = 0;

  constructor(
    private readonly ttlMs = API_KEY_CACHE_TTL_MS,
    private readonly max = API_KEY_CACHE_MAX,
    private readonly now: () => number = Date.now,
    /** Whether it serves from the start (true when nothing listens for changes, e.g. a unit test of the cache). */
    startActive = true,
  ) {
    this.active = startActive;
  }

  get(hash: Buffer): ApiKeyRecord | null {
    if (!this.active) return null;
    const id = hash.toString('base64');
    const entry = this.entries.get(id);
    if (!entry) return null;
    this.entries.delete(id);
    if (entry.expiresAt <= this.now()) return null;
    this.entries.set(id, entry); // most recently used last
    return entry.record;
  }

  /** Caches a record looked up when the cache was at `generation` (default: now); ignored if a change was heard since.
   * */
  set(hash: Buffer, record: ApiKeyRecord, generation = this.generation): void {
    if (this.ttlMs <= 0 || !this.active || generation !== this.generation) return;
    const id = hash.toString('base64');
    this.entries.delete(id);
    this.entries.set(id, { record, expiresAt: this.now() + this.ttlMs });
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** Drops a key (by its record id) at once: a revocation heard from any process. */
  forget(keyId: string): void {
    this.generation += 1;
    for (const [id, entry] of this.entries) if (entry.record.id === keyId) this.entries.delete(id);
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
  }

  /** Stops serving and forgets everything (the process may miss changes). */
  suspend(): void {
    this.active = false;
    this.clear();
  }

  /** Serves again (the process hears changes again). */
  resume(): void {
    this.clear();
    this.active = true;
  }
}
