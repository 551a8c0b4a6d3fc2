import type { ListedTerms } from './resource-rules';
import type { Page } from '../pagination';

/** A listed resource: its terms carry the amount in Stroops (the data layer converts its NUMERIC column once). */
export interface Resource extends ListedTerms {
  id: string;
  sellerId: string;
  versionId: string;
  version: number;
  status: 'active' | 'deleted';
  createdAt: Date;
  updatedAt: Date;
}

export interface ResourceVersion extends Omit<ListedTerms, 'type'> {
  id: string;
  resourceId: string;
  version: number;
  sellerDomain: string;
  createdAt: Date;
}

export interface ResourceFilters {
  sellerId?: string;
  status?: 'active' | 'deleted';
  network?: string;
  asset?: string;
  type?: 'http' | 'mcp';
}

export interface SettlementStats {
  settledCount: number;
  lastSettledAt: Date | null;
  successRate: number | null;
}

export type CatalogEventKind = 'created' | 'updated' | 'deleted' | 'cataloged';

export interface ResourceRepository {
  insert(resource: Resource, version: ResourceVersion, event: { id: string; kind: CatalogEventKind }): Promise<void>;
  findById(id: string): Promise<Resource | null>;
  list(filters: ResourceFilters, afterId: string | null, limit: number): Promise<Page<Resource>>;
  versions(resourceId: string, afterId: string | null, limit: number): Promise<Page<ResourceVersion>>;
  /**
   * Stores `next` as a new version if the resource is still at `expectedVersion` (compare-and-set); false when
   * another writer got there first.
   */
  saveNewVersion(
    next: Resource,
    version: ResourceVersion,
    expectedVersion: number,
    event: { id: string; kind: CatalogEventKind },
  ): Promise<boolean>;
  /** Hard-deletes a resource that has no payment attempts or receipts; 'has_payments' otherwise (nothing changed). */
  deleteIfUnpaid(id: string): Promise<'deleted' | 'has_payments'>;
  softDelete(id: string, event: { id: string; kind: CatalogEventKind }): Promise<void>;
  settlementStats(resourceId: string): Promise<SettlementStats>;
  /** The id of the seller's active http resource with this URL and method (see endpoint.ts), if any. */
  findActiveEndpoint(sellerId: string, url: string, method: string): Promise<string | null>;
}
