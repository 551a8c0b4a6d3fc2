import type { WorkerDefinition } from './job-system';
import type { SearchIndexRepository } from '../data/search-index-repository';
import type { NetworkRegistry } from '../ledger/network-registry';
import type { DiscoveryMetrics } from '../metrics/discovery';
import type { Logger } from '../logger';
import { buildSearchDocument } from '../domain/discovery/indexing';

export const RESOURCE_INDEXING_WORKER = 'resource-indexing-worker';

export interface IndexingJob extends Record<string, unknown> {
  catalogEventId?: string;
  resourceId?: string;
}

/**
 * Builds the search document of the resource a catalog event is about (its current state: later events of the same
 * resource are folded in) and marks the resource's catalog events indexed. Idempotent: a repeated or late job
 * rebuilds the same document. A deleted resource leaves the index.
 */
export function createResourceIndexingWorker(deps: { index: SearchIndexRepository; networks: NetworkRegistry; metrics: DiscoveryMetrics; logger: Logger }): WorkerDefinition<IndexingJob> {
  return {
    name: RESOURCE_INDEXING_WORKER,
    maxRetries: 5,
    retryDelayMs: 500,
    concurrency: 4,
    async run(data) {
      const resourceId = (data.catalogEventId ? await deps.index.resourceOfEvent(data.catalogEventId) : null) ?? data.resourceId ?? null;
      if (!resourceId) return; // the event and its resource are gone (hard delete): nothing left to index
      const outcome = await deps.index.indexResource(resourceId, (snap) => {
        const doc = buildSearchDocument(snap, deps.networks);
        if (doc && !doc.discoverable) {
          for (const reason of new Set(doc.rejectionReasons.map((r) => r.reason))) deps.metrics.indexRejections.inc({ reason });
          deps.logger.warn('resource kept out of discovery', { resourceId, reasons: doc.rejectionReasons.map((r) => `${r.field}: ${r.message}`) });
        }
        return doc;
      });
      if (outcome === 'rejected') deps.logger.info('resource indexed as not discoverable', { resourceId });
    },
  };
}
