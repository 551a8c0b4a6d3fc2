/**
 * The public reads both SDK clients offer (one source, copied into the seller SDK by scripts/generate.mjs):
 * discovery, resources, a seller's listing, settlements, receipts and networks, each with its page iterator. Typed
 * by the package's own generated contract (`../generated/openapi.js`: the buyer bundle here, the seller bundle in
 * the seller's copy; both hold these operations).
 */
import type { Client } from 'openapi-fetch';
import type { components, operations, paths } from '../generated/openapi.js';
import { paginate, type PageIterable } from './pagination.js';

type Schemas = components['schemas'];
/** The query parameters of an operation. */
export type Query<Op extends keyof operations> = operations[Op]['parameters'] extends { query?: infer Q }
  ? NonNullable<Q>
  : never;
/** Query parameters without the cursor (the iterators page for you). */
export type NoCursor<Q> = Omit<Q, 'cursor'>;

/** Unwraps an openapi-fetch result: errors were already thrown as ApiError by the transport. */
export async function data<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const r = await p;
  return r.data as T;
}

export function discoveryReads(raw: Client<paths>) {
  const discovery = {
    /** One page of discoverable resources (newest first). */
    list: (query: Query<'listDiscoveryResources'> = {}): Promise<Schemas['DiscoveryPage']> =>
      data(raw.GET('/v1/discovery/resources', { params: { query } })),
    /** One page of resources ranked for `q`. */
    search: (query: Query<'searchResources'>): Promise<Schemas['SearchPage']> =>
      data(raw.GET('/v1/discovery/search', { params: { query } })),
    /** Every discoverable resource matching the filters, page by page: `for await (const r of
     * client.discovery.iterate({...}))`. */
    iterate: (query: NoCursor<Query<'listDiscoveryResources'>> = {}): PageIterable<Schemas['DiscoveryResource']> =>
      paginate((cursor) => discovery.list({ ...query, cursor })),
    /** Every search result, in rank order, page by page. */
    iterateSearch: (query: NoCursor<Query<'searchResources'>>): PageIterable<Schemas['DiscoveryResource']> =>
      paginate((cursor) => discovery.search({ ...query, cursor })),
  };
  return discovery;
}

export function resourceReads(raw: Client<paths>) {
  const resources = {
    get: (id: string): Promise<Schemas['ResourceDetail']> =>
      data(raw.GET('/v1/resources/{id}', { params: { path: { id } } })),
    list: (query: Query<'listResources'> = {}): Promise<Schemas['ResourceList']> =>
      data(raw.GET('/v1/resources', { params: { query } })),
    iterate: (query: NoCursor<Query<'listResources'>> = {}): PageIterable<Schemas['Resource']> =>
      paginate((cursor) => resources.list({ ...query, cursor })),
    versions: (id: string, query: Query<'listResourceVersions'> = {}): Promise<Schemas['ResourceVersionList']> =>
      data(raw.GET('/v1/resources/{id}/versions', { params: { path: { id }, query } })),
    iterateVersions: (
      id: string,
      query: NoCursor<Query<'listResourceVersions'>> = {},
    ): PageIterable<Schemas['ResourceVersion']> => paginate((cursor) => resources.versions(id, { ...query, cursor })),
  };
  return resources;
}

/** A seller's public profile and its listed resources. */
export function sellerReads(raw: Client<paths>) {
  const sellers = {
    get: (sellerId: string): Promise<Schemas['Seller']> =>
      data(raw.GET('/v1/sellers/{sellerId}', { params: { path: { sellerId } } })),
    resources: (sellerId: string, query: Query<'listSellerResources'> = {}): Promise<Schemas['ResourceList']> =>
      data(raw.GET('/v1/sellers/{sellerId}/resources', { params: { path: { sellerId }, query } })),
    iterateResources: (
      sellerId: string,
      query: NoCursor<Query<'listSellerResources'>> = {},
    ): PageIterable<Schemas['Resource']> => paginate((cursor) => sellers.resources(sellerId, { ...query, cursor })),
    /** The keys this seller signs its own receipts with (a JWK Set for verifySellerReceipt). */
    receiptKeys: (sellerId: string): Promise<Schemas['SellerReceiptKeys']> =>
      data(raw.GET('/v1/sellers/{sellerId}/receipt-keys', { params: { path: { sellerId } } })),
  };
  return sellers;
}

/** Settlements, receipts and networks: one read each. */
export function ledgerRecordReads(raw: Client<paths>) {
  return {
    settlements: {
      get: (transactionHash: string): Promise<Schemas['Settlement']> =>
        data(raw.GET('/v1/settlements/{transactionHash}', { params: { path: { transactionHash } } })),
    },
    receipts: {
      get: (receiptId: string): Promise<Schemas['Receipt']> =>
        data(raw.GET('/v1/receipts/{receiptId}', { params: { path: { receiptId } } })),
    },
    networks: {
      list: (): Promise<Schemas['NetworkList']> => data(raw.GET('/v1/networks')),
    },
  };
}
