import type { Resource, ResourceVersion } from '../catalog/types';
import type { Seller } from '../sellers/types';
import type { Trust } from '../trust/types';
import type { Stroops } from '../amount';

/**
 * Filters shared by the listing and search. Prices are Stroops (the API's decimal `minPrice`/`maxPrice` converted once
 * by the handler), compared exactly (NUMERIC) in SQL.
 */
export interface DiscoveryFilters {
  network?: string;
  asset?: string;
  type?: 'http' | 'mcp';
  sellerId?: string;
  minPrice?: Stroops;
  maxPrice?: Stroops;
  extension?: 'bazaar' | 'mcp';
  /** Issue #33: only listings whose measured 7-day uptime is at least this (0..1); unmeasured ones are left out. */
  minUptime?: number;
  /** Issue #33: only listings whose live 402 pays the listed payTo and whose host the seller proved. */
  verifiedOnly?: boolean;
  /** Issue #33: only listings whose last liveness probe answered a valid payment requirement. */
  liveOnly?: boolean;
}

/**
 * A listing item: the contract's resource fields without schemas, extensions and timestamps, and whether its host is
 * proven (its seller verified the domain that most specifically covers the URL's host; migration 0050).
 */
export type DiscoveryItem = Pick<
  Resource,
  | 'id'
  | 'sellerId'
  | 'type'
  | 'name'
  | 'description'
  | 'url'
  | 'routeTemplate'
  | 'network'
  | 'payTo'
  | 'assetCode'
  | 'assetIssuer'
  | 'amount'
  | 'status'
> & { hostVerified: boolean; trust?: Trust };

export interface RankedItem extends DiscoveryItem {
  /** The score as PostgreSQL prints it (float8 text round-trips exactly), kept for the cursor. */
  score: string;
  /** Whether this result's ranking signals were refreshed recently. */
  signalsFresh: boolean;
  /** How the common concepts were combined for this page ('or': the AND found nothing); carried in the cursor. */
  mode?: 'and' | 'or';
}

/** Where a search page continues: after this (score, id), in this mode. */
export interface SearchAfter {
  score: string;
  id: string;
  mode?: 'and' | 'or';
}

/**
 * How far the index is behind the catalog, as the workers last recorded it (search_index_state): cataloging marks
 * the index behind, the indexing worker recomputes it after every batch, the search-sync worker on every pass.
 */
export interface IndexLag {
  /** Some catalog event is not yet reflected in the index. */
  pending: boolean;
  /** Seconds since the oldest unindexed catalog event (0 when the index is up to date). */
  lagSeconds: number;
}

export interface SearchOptions {
  /** Weight of text relevance (RANKING_WEIGHTS.text); the query-independent part is the stored base_score. */
  textWeight: number;
  /** How many postings of each common query term, the best by rank, are read as candidates (the bound on all pages). */
  candidates: number;
  signalsMaxAgeSeconds: number;
  /** Document-frequency budget of the rare concepts read in full (default RARE_BUDGET). */
  rareBudget?: number;
}

export interface RankingWeights {
  text: number;
  /** Trigram similarity of the name to the query's words. */
  nameSimilarity: number;
  /** Usage: payers weighted by what they paid at the cataloged price, 30 days (ln scale, capped at 1). */
  usage: number;
  metadataQuality: number;
  schemaCompleteness: number;
  sellerVerified: number;
  uptime: number;
  settlementSuccess: number;
  type: number;
  network: number;
  asset: number;
  price: number;
  /** Issue #33: added (negative) to a listing that is dead, drifted or priced as a decoy (migration 0110). */
  demotion: number;
}

/** Text weight of a query concept by the best field of the document it matches (ranking.ts FIELD_WEIGHTS). */
export interface FieldWeights {
  /** The name (tsvector weight A). */
  name: number;
  /** Tags and the MCP tool name (B). */
  tags: number;
  /** The description (C). */
  description: number;
  /** Schema text, route literals, URL host and path (D). */
  schema: number;
  /** An alternative of several words that match, but not all in one field. */
  acrossFields: number;
}

export interface CatalogWrite {
  mode: 'create' | 'update' | 'unchanged';
  resource: Resource;
  /** The new version (create, update); null when unchanged. */
  version: ResourceVersion | null;
  /** For update: compare-and-set on the resource's version. */
  expectedVersion: number | null;
  event: { id: string; versionId: string };
  declaration: { payTo: string | null; trusted: boolean };
  /** Re-checked under a lock in the same transaction: no other active resource offers this tool on this URL. */
  mcpTool: { url: string; toolName: string } | null;
}

export type CatalogWriteOutcome =
  { status: 'ok' } | { status: 'version_conflict' } | { status: 'mcp_conflict'; resourceId: string };

/** The discovery index's reads: listing and search (data/search-repository.ts). */
export interface DiscoverySearchRepository {
  list(filters: DiscoveryFilters, afterId: string | null, limit: number): Promise<DiscoveryItem[]>;
  search(
    q: string,
    filters: DiscoveryFilters,
    after: SearchAfter | null,
    limit: number,
    options: SearchOptions,
  ): Promise<SearchAnswer>;
  indexLag(): Promise<IndexLag>;
}

/** A page of ranked results; `lag`, when the search statement read it too (one statement per search), else absent. */
export type SearchAnswer = RankedItem[] & { lag?: IndexLag };

/** The catalog write and the facts its rules read (data/catalog-write-repository.ts). */
export interface CatalogWriteRepository {
  walletOwner(address: string): Promise<string | null>;
  mcpToolOwner(
    url: string,
    toolName: string,
    excludeResourceId: string | null,
  ): Promise<{ resourceId: string; sellerId: string } | null>;
  declaration(resourceId: string): Promise<{ payTo: string | null; trusted: boolean } | null>;
  catalog(write: CatalogWrite): Promise<CatalogWriteOutcome>;
  /**
   * The seller, who owns the payTo wallet, whether another seller verified the seller's domain and which seller proved
   * the URL's host (the most specific verified domain covering it), in one read.
   */
  catalogFacts?(
    sellerId: string,
    payTo: string,
    url: string,
  ): Promise<{
    seller: Seller | null;
    payToOwner: string | null;
    domainVerifiedByOther: boolean;
    hostOwner?: string | null;
  }>;
}

/** What the discovery service reads and writes: search and the catalog write. */
export type DiscoveryRepository = DiscoverySearchRepository & CatalogWriteRepository;
