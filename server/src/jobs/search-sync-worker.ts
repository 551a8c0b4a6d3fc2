import type { WorkerDefinition } from './job-system';
import type { SearchIndexRepository } from '../domain/discovery/indexing';
import type { Logger } from '../logger';
import { DEFAULT_SEARCH_SYNC_SECONDS } from '../domain/defaults';

export const SEARCH_SYNC_WORKER = 'search-sync-worker';

/**
 * Every SEARCH_SYNC_INTERVAL_SECONDS (default 30): refreshes the ranking signals (seller verification, settlement
 * success and usage over 30 days from payment attempts, uptime from probes, host ownership, self-dealing) of the search
 * documents whose inputs changed since the last pass, and of those whose rows left a time window (migration 0125:
 * triggers queue what changed, data/search-index-repository.ts recomputes it in bounded batches; no UPDATE over every
 * document), plus a rolling audit slice of SIGNAL_AUDIT documents; re-queues indexing of catalog events left unindexed
 * for over a minute (a lost or dead job), so the index converges on the catalog; then records the index lag
 * (search_index_state) that search reads, so a lag a failed or lost indexing left behind is corrected at least every
 * pass. Unchanged documents are not rewritten; the pass itself is recorded once its queue is drained, and search treats
 * a document as fresh as of the latest recorded pass.
 */
export function createSearchSyncWorker(deps: {
  index: SearchIndexRepository;
  requeue(resourceId: string): Promise<void>;
  logger: Logger;
  /** The pass's period, an Agenda interval (default DEFAULT_SEARCH_SYNC_SECONDS). */
  every?: string;
}): WorkerDefinition {
  return {
    name: SEARCH_SYNC_WORKER,
    every: deps.every ?? `${DEFAULT_SEARCH_SYNC_SECONDS} seconds`,
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
