import type { Area, AreaContext } from './area';
import { DomainError } from '../domain/errors';

export type DiscoveryOperation = 'listDiscoveryResources' | 'searchResources' | 'validateResource' | 'catalogResource';

export interface DiscoveryArea extends Area<DiscoveryOperation> {
  /** Called after every catalog change (create, update, delete, catalog): queues search indexing. */
  onCatalogChange(resourceId: string): Promise<void>;
}

const notBuilt = async (): Promise<never> => {
  throw new DomainError('SERVICE_UNAVAILABLE', 'Discovery is not available in this version of the service yet');
};

/** The discovery area: listing, ranked search, validation, cataloging and the indexing workers. */
export function createDiscoveryArea(_ctx: AreaContext): DiscoveryArea {
  return {
    handlers: { listDiscoveryResources: notBuilt, searchResources: notBuilt, validateResource: notBuilt, catalogResource: notBuilt },
    workers: [],
    async onCatalogChange() {},
  };
}
