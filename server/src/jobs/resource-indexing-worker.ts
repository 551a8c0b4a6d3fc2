import type { WorkerDefinition } from './job-system';
import type { SearchIndexRepository } from '../domain/discovery/indexing';
import type { NetworkRegistry } from '../domain/network-registry';
import type { DiscoveryMetrics } from '../metrics/discovery';
import type { Logger } from '../logger';
import { buildSearchDocument, type IndexSnapshot } from '../domain/discovery/indexing';

export const RESOURCE_INDEXING_WORKER = 'resource-indexing-worker';

export interface IndexingJob extends Record<string, unknown> {
  catalogEventId?: string;
  resourceId?: string;
}

interface IndexingDeps {
  index: SearchIndexRepository;
  networks: NetworkRegistry;
  metrics: DiscoveryMetrics;
  logger: Logger;
}

/** The document builder of the indexing worker (rejections counted and logged). */
function builder(deps: IndexingDeps) {
  return (snap: IndexSnapshot) => {
    const doc = buildSearchDocument(snap, deps.networks);
    if (doc && !doc.discoverable) {
      for (const reason of new Set(doc.rejectionReasons.map((r) => r.reason)))
        deps.metrics.indexRejections.inc({ reason });
      deps.logger.warn('resource kept out of discovery', {
        resourceId: doc.resourceId,
        reasons: doc.rejectionReasons.map((r) => `${r.field}: ${r.message}`),
      });
    }
    return doc;
  };
}

/** Indexes one resource's current state (idempotent: a repeated or late call rebuilds the same document). */
async function indexOne(deps: IndexingDeps, resourceId: string): Promise<void> {
  const outcome = await deps.index.indexResource(resourceId, builder(deps));
  if (outcome === 'rejected') deps.logger.info('resource indexed as not discoverable', { resourceId });
}

/**
 * Indexes several resources in one transaction; if the batch fails, each resource is tried on its own so one bad
 * resource does not hold back the others (what still fails is left to the search-sync worker's re-queue).
 */
async function indexBatch(deps: IndexingDeps, resourceIds: string[]): Promise<void> {
  try {
    const outcomes = await deps.index.indexResources(resourceIds, builder(deps));
    for (const [resourceId, outcome] of outcomes)
      if (outcome === 'rejected') deps.logger.info('resource indexed as not discoverable', { resourceId });
    return;
  } catch (err) {
    if (resourceIds.length === 1) throw err;
    deps.logger.warn('batch indexing failed; indexing its resources one by one', {
      resources: resourceIds.length,
      error: (err as Error).message,
    });
  }
  for (const resourceId of resourceIds) {
    await indexOne(deps, resourceId).catch((err: Error) =>
      deps.logger.warn('local indexing failed; the search-sync worker re-queues it', {
        resourceId,
        error: err.message,
      }),
    );
  }
}

/**
 * Builds the search document of the resource a catalog event is about (its current state: later events of the same
 * resource are folded in) and marks the resource's catalog events indexed. Idempotent: a repeated or late job
 * rebuilds the same document. A deleted resource leaves the index.
 */
export function createResourceIndexingWorker(deps: IndexingDeps): WorkerDefinition<IndexingJob> {
  return {
    name: RESOURCE_INDEXING_WORKER,
    maxRetries: 5,
    retryDelayMs: 500,
    concurrency: 4,
    async run(data) {
      const resourceId =
        (data.catalogEventId ? await deps.index.resourceOfEvent(data.catalogEventId) : null) ?? data.resourceId ?? null;
      if (!resourceId) return; // the event and its resource are gone (hard delete): nothing left to index
      await indexOne(deps, resourceId);
    },
  };
}

/**
 * The process-local fast path of the indexing worker, used where this process runs the background jobs: a catalog
 * change wakes it at once (no wait for Agenda's poll, no job row per change), and it indexes the resources that
 * accumulated meanwhile, `concurrency` batches at a time, each batch (up to 64 resources) in one transaction that does
 * what the
 * worker does for each of them (and records the index lag once). A resource changed again while queued is indexed once
 * (its current
 * state). It is not the crash-safe path: the catalog event is written in the catalog change's own transaction
 * with `indexed_at` NULL, and the search-sync worker re-queues any event left unindexed (a crash, a failure here)
 * as a resource-indexing job.
 */
export interface LocalIndexer {
  /** Queues a resource; false when the indexer is not running (the caller enqueues a job instead). */
  wake(resourceId: string): boolean;
  start(): void;
  /** Stops taking resources and waits for the ones being indexed. */
  stop(): Promise<void>;
}

export function createLocalIndexer(
  deps: IndexingDeps & {
    concurrency?: number;
    maxQueued?: number;
    batch?: number;
    onBatch?: (outcome: { resources: number; ok: boolean; seconds: number }) => void;
  },
): LocalIndexer {
  const concurrency = deps.concurrency ?? 2;
  // Resources indexed per transaction: whatever queued meanwhile, up to this many (one commit, one lag recompute).
  const batch = deps.batch ?? 64;
  // Bounded: past this, changes are left to the job path (the caller enqueues) so memory stays flat.
  const maxQueued = deps.maxQueued ?? 10_000;
  const queued = new Set<string>();
  let running = 0;
  let started = false;
  let idle: (() => void) | null = null;

  const pump = (): void => {
    while (running < concurrency && queued.size > 0) {
      const ids: string[] = [];
      for (const id of queued) {
        ids.push(id);
        if (ids.length >= batch) break;
      }
      for (const id of ids) queued.delete(id);
      running += 1;
      const begun = process.hrtime.bigint();
      const seconds = () => Number(process.hrtime.bigint() - begun) / 1e9;
      indexBatch(deps, ids)
        .then(() => deps.onBatch?.({ resources: ids.length, ok: true, seconds: seconds() }))
        .catch((err: Error) => {
          deps.onBatch?.({ resources: ids.length, ok: false, seconds: seconds() });
          deps.logger.warn('local indexing failed; the search-sync worker re-queues it', {
            resources: ids.length,
            error: err.message,
          });
        })
        .finally(() => {
          running -= 1;
          if (started) pump();
          else if (running === 0) idle?.();
        });
    }
  };

  return {
    wake(resourceId) {
      if (!started || (queued.size >= maxQueued && !queued.has(resourceId))) return false;
      queued.add(resourceId);
      pump();
      return true;
    },
    start() {
      started = true;
    },
    async stop() {
      started = false;
      queued.clear();
      if (running === 0) return;
      await new Promise<void>((resolve) => {
        idle = resolve;
      });
    },
  };
}
