import { DomainError, notFound } from '../errors';
import { newId } from '../ids';
import { assertAdminFor, newApiKey, type Principal } from '../auth/principal';
import type { ApiKeyInfo, ApiKeyScope, SellerRepository } from './types';

/** Keys of one seller that are neither revoked nor expired. */
export const MAX_ACTIVE_KEYS = 20;
/** Keys shown by the list, newest first. */
export const MAX_LISTED_KEYS = 100;
/** The latest expiry a key may be given. */
const MAX_EXPIRY_MS = 10 * 365 * 24 * 3600 * 1000;

/**
 * A seller's API keys: several per seller, each with a name, a scope and an optional expiry. Rotation is
 * create-then-revoke. The secret is returned once by `create` and stored only as a hash. Only the seller's admin
 * keys and the operator manage keys.
 */
export function createKeyService(deps: { sellers: SellerRepository; now?: () => number }) {
  const { sellers } = deps;
  const now = deps.now ?? Date.now;

  async function sellerFor(principal: Principal, sellerId: string): Promise<void> {
    if (!(await sellers.findById(sellerId))) throw notFound('seller', sellerId);
    assertAdminFor(principal, sellerId);
  }

  return {
    async create(
      principal: Principal,
      sellerId: string,
      input: { name: string; scope: ApiKeyScope; expiresAt?: string },
    ): Promise<ApiKeyInfo & { secret: string }> {
      await sellerFor(principal, sellerId);
      const name = input.name.trim();
      const details = [];
      if (!name) details.push({ field: 'name', message: 'must not be blank' });
      let expiresAt: Date | null = null;
      if (input.expiresAt !== undefined) {
        expiresAt = new Date(input.expiresAt);
        const t = expiresAt.getTime();
        if (!Number.isFinite(t) || t <= now())
          details.push({ field: 'expiresAt', message: 'must be a time in the future' });
        else if (t > now() + MAX_EXPIRY_MS)
          details.push({ field: 'expiresAt', message: 'must be at most 10 years ahead' });
      }
      if (details.length) throw new DomainError('INVALID_REQUEST', 'The API key is not valid', details);
      const key = newApiKey();
      const record = {
        id: newId('apiKey'),
        sellerId,
        role: 'seller' as const,
        name,
        scope: input.scope,
        prefix: key.prefix,
        keyHash: key.hash,
        createdAt: new Date(now()),
        expiresAt,
      };
      const outcome = await sellers.createApiKey(record, MAX_ACTIVE_KEYS);
      if (outcome === 'no_seller') throw notFound('seller', sellerId);
      if (outcome === 'too_many')
        throw new DomainError(
          'CONFLICT',
          `A seller has at most ${MAX_ACTIVE_KEYS} keys that are neither revoked nor expired; revoke one first`,
        );
      return {
        id: record.id,
        sellerId,
        name,
        scope: record.scope,
        prefix: record.prefix,
        createdAt: record.createdAt,
        expiresAt,
        lastUsedAt: null,
        revokedAt: null,
        secret: key.key,
      };
    },

    async list(principal: Principal, sellerId: string): Promise<ApiKeyInfo[]> {
      await sellerFor(principal, sellerId);
      return sellers.listApiKeys(sellerId, MAX_LISTED_KEYS);
    },

    async revoke(principal: Principal, sellerId: string, keyId: string): Promise<ApiKeyInfo> {
      await sellerFor(principal, sellerId);
      const key = await sellers.revokeApiKey(sellerId, keyId);
      if (!key) throw notFound('API key', keyId);
      return key;
    },
  };
}

export type KeyService = ReturnType<typeof createKeyService>;
