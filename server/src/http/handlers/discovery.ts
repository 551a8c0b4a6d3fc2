import type { Handlers } from '../operation-types';
import type { HandlerServices } from './deps';
import { presentCatalogResult, presentDiscoveryPage, presentSearchPage } from '../presenters-discovery';

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
      return { status: 200, body: presentDiscoveryPage(await discovery.list(filters, { cursor, limit })) };
    },
    async searchResources({ query }) {
      const { q, cursor, limit, ...filters } = query;
      return { status: 200, body: presentSearchPage(await discovery.search(q, filters, { cursor, limit })) };
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
