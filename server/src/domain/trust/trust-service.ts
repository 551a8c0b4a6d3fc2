import { assertActsFor, type Principal } from '../auth/principal';
import { notFound } from '../errors';
import type { Trust, TrustRepository } from './types';

export interface TrustServiceDeps {
  repo: TrustRepository;
  /** The resource's owner (null: no such resource). */
  sellerOf(resourceId: string): Promise<string | null>;
}

/** Trust reads and the seller's confirmation of a changed price or payout (issue #33). */
export function createTrustService(deps: TrustServiceDeps) {
  const empty: Trust = {
    live: null,
    checkedAt: null,
    uptime7d: null,
    latency: null,
    ownerVerified: null,
    domainVerified: false,
    priceDrift: false,
    payoutChanged: false,
    priceOutlier: false,
    selfDealing: false,
    demoted: false,
    payers30d: 0,
    calls30d: 0,
    settledByUs: false,
  };
  return {
    trustOf: (resourceIds: string[]) => deps.repo.trustOf(resourceIds),

    /** The trust block of one resource (an unprobed or unindexed one: nothing measured yet). */
    async get(resourceId: string): Promise<Trust> {
      return (await deps.repo.trustOf([resourceId])).get(resourceId) ?? empty;
    },

    /**
     * The resource's seller (its admin key: the key-scope middleware refuses payments keys) or the operator confirms
     * the
     * open drifts: the flags and the demotion end; the same observed values are not flagged again.
     */
    async confirm(
      principal: Principal,
      resourceId: string,
      kind: 'price' | 'payout' | null,
    ): Promise<{ resourceId: string; confirmed: number; trust: Trust }> {
      const sellerId = await deps.sellerOf(resourceId);
      if (!sellerId) throw notFound('resource', resourceId);
      assertActsFor(principal, sellerId);
      const confirmed = await deps.repo.confirmDrift(
        resourceId,
        principal.role === 'seller' ? principal.sellerId : 'operator',
        kind,
      );
      return { resourceId, confirmed, trust: (await deps.repo.trustOf([resourceId])).get(resourceId) ?? empty };
    },
  };
}

export type TrustService = ReturnType<typeof createTrustService>;
