import { normalizeAmount } from '../domain/amount';
import type { DiscoveryItem } from '../domain/discovery/types';

type Row = Record<string, unknown>;

/**
 * The catalog fields every listing row carries, read from camelCase aliases: a `resources` row (resource-repository)
 * and a search document (search-repository, bazaar-listing-repository) map them the same way.
 */
export function listingFields(row: Row) {
  return {
    id: row.id as string,
    sellerId: row.sellerId as string,
    name: row.name as string,
    description: row.description as string,
    url: row.url as string,
    routeTemplate: row.routeTemplate as string,
    network: row.network as string,
    payTo: row.payTo as string,
    assetCode: row.assetCode as string,
    assetIssuer: row.assetIssuer as string,
    amount: normalizeAmount(String(row.amount)),
  };
}

/** A search document's row as the listing item of search results and the Bazaar. */
export function toListingItem(row: Row): DiscoveryItem {
  return {
    ...listingFields(row),
    type: row.type as DiscoveryItem['type'],
    status: row.status as DiscoveryItem['status'],
    hostVerified: Boolean(row.hostVerified),
  };
}
