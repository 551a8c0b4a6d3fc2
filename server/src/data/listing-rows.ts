import { stroopsColumn } from './amount-column';
import type { DiscoveryItem } from '../domain/discovery/types';

type Row = Record<string, unknown>;

/**
 * A listing's payment terms (network, payee, asset, amount in Stroops), read from camelCase aliases of any catalog row
 * (the amount column, NUMERIC or its text, converted once by stroopsColumn).
 */
export function paymentTermFields(row: Row) {
  return {
    network: row.network as string,
    payTo: row.payTo as string,
    assetCode: row.assetCode as string,
    assetIssuer: row.assetIssuer as string,
    amount: stroopsColumn(row.amount),
  };
}

/** What a listing says it is and where it answers, read from camelCase aliases of any catalog row. */
export function describedFields(row: Row) {
  return {
    name: row.name as string,
    description: row.description as string,
    url: row.url as string,
    routeTemplate: row.routeTemplate as string,
  };
}

/**
 * The catalog fields every listing row carries, read from camelCase aliases: a `resources` row (resource-repository)
 * and a search document (search-repository, bazaar-listing-repository) map them the same way.
 */
export function listingFields(row: Row) {
  return {
    id: row.id as string,
    sellerId: row.sellerId as string,
    ...describedFields(row),
    ...paymentTermFields(row),
  };
}

/**
 * A search document's row as the listing item of search results and the Bazaar. Built by adding to the new object
 * rather than spreading it into another literal: on Node 20 a spread followed by more properties (`{ ...x, y }`)
 * costs several microseconds per object, which made the rows-to-items step of a search page a visible share of the
 * service's CPU (issue #31, search; scripts/bench/PROFILE.md "Search (session 9)"). Same fields, same order.
 */
export function toListingItem(row: Row): DiscoveryItem {
  return Object.assign(listingFields(row), {
    type: row.type as DiscoveryItem['type'],
    status: row.status as DiscoveryItem['status'],
    hostVerified: Boolean(row.hostVerified),
  });
}
