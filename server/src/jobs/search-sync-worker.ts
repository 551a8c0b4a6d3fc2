import type { WorkerDefinition } from './job-system';
import type { SearchIndexRepository } from '../domain/discovery/indexing';
import type { Logger } from '../logger';

export const SEARCH_SYNC_WORKER = 'search-sync-worker';

/**
 * Every 30 seconds: refreshes the ranking signals of the search documents whose signals changed (seller verification,
 * settlement
 * success over the last 30 days from payment attempts; uptime from the conformance runner's 402 probes, null and
 * neutral until the first probe
 * has run) and re-queues indexing of catalog events left unindexed for over a minute (a lost or dead job), so the
 * index converges on the catalog; then records the index lag (search_index_state) that search reads, so a lag a
 * failed or lost indexing left behind is corrected at least every pass. Unchanged documents are not rewritten (no table
 * churn every 30 s); the pass
 * itself is recorded, and search treats a document as fresh as of the latest pass.
 */
export function createSearchSyncWorker(deps: {
  index: SearchIndexRepository;
  requeue(resourceId: string): Promise<void>;
  logger: Logger;
}): WorkerDefinition {
  return {
    name: SEARCH_SYNC_WORKER,
    every: '30 seconds',
    maxRetries: 3,
    concurrency: 1,
    async run() {
      const refreshed = await deps.index.refreshSignals();
      const stale = await deps.index.staleResources(60, 500);
      for (const resourceId of stale) await deps.requeue(resourceId);
      if (stale.length) deps.logger.warn('re-queued indexing of stale catalog events', { resources: stale.length });
      await deps.index.recordLag();
      // Document frequencies of the vocabulary (IDF weights, rare-term budget): recounted every 10 minutes.
      await deps.index.refreshVocabulary(600);
      // Observed Bazaar resources without a payment for 30 days.
      await deps.index.purgeObserved();
      void refreshed;
    },
  };
}
