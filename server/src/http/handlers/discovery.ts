import type { Handlers } from '../operation-types';
import type { HandlerServices } from './deps';
import { presentCatalogResult, presentDiscoveryPage, presentSearchPage } from '../presenters-discovery';
import { toStroops } from '../../domain/amount';
import type { DiscoveryFilters } from '../../domain/discovery/types';

type DiscoveryHandlers = Pick<
  Handlers,
  'listDiscoveryResources' | 'searchResources' | 'validateResource' | 'catalogResource'
>;

/** The Discovery tag: listing, ranked search, validation and cataloging; typed request -> one use case -> status +
 * body. */
export function discoveryHandlers({ discovery }: HandlerServices): DiscoveryHandlers {
  return {
    async listDiscoveryResources({ query }) {
      const { cursor, limit, ...filters } = query;
      return { status: 200, body: presentDiscoveryPage(await discovery.list(withPrices(filters), { cursor, limit })) };
    },
    async searchResources({ query }) {
      const { q, cursor, limit, ...filters } = query;
      return {
        status: 200,
        body: presentSearchPage(await discovery.search(q, withPrices(filters), { cursor, limit })),
      };
    },
    async validateResource({ principal, body }) {
      return { status: 200, body: await discovery.validate(principal, body) };
    },
    async catalogResource({ principal, body }) {
      const outcome = await discovery.catalog(principal, body);
      return { status: outcome.created ? 201 : 200, body: presentCatalogResult(outcome) };
    },
  };
}

/**
 * The query's price filters as Stroops: the discovery edge's one conversion (the contract's Amount pattern was
 * checked by the request validator, or by the MCP tool's input schema).
 */
function withPrices<T extends { minPrice?: string; maxPrice?: string }>(
  query: T,
): Omit<T, 'minPrice' | 'maxPrice'> & Pick<DiscoveryFilters, 'minPrice' | 'maxPrice'> {
  const { minPrice, maxPrice, ...rest } = query;
  return {
    ...rest,
    ...(minPrice !== undefined && { minPrice: toStroops(minPrice) }),
    ...(maxPrice !== undefined && { maxPrice: toStroops(maxPrice) }),
  };
}
