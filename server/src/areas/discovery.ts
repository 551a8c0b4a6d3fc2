import type { Area, AreaContext } from './area';
import { createSearchRepository } from '../data/search-repository';
import { createCatalogWriteRepository } from '../data/catalog-write-repository';
import { createSearchIndexRepository } from '../data/search-index-repository';
import { createResourceRepository } from '../data/resource-repository';
import { createWalletStateReader } from '../ledger/wallet-state';
import {
  createDiscoveryService,
  type DiscoveryService,
  type DiscoveryServiceDeps,
} from '../domain/discovery/discovery-service';
import { issueReason } from '../domain/catalog/resource-rules';
import {
  createLocalIndexer,
  createResourceIndexingWorker,
  RESOURCE_INDEXING_WORKER,
} from '../jobs/resource-indexing-worker';
import { createSearchSyncWorker } from '../jobs/search-sync-worker';

export interface DiscoveryArea extends Area {
  service: DiscoveryService;
  /** Called after every catalog change (create, update, delete, catalog): queues search indexing. */
  onCatalogChange(resourceId: string): Promise<void>;
}

/** The discovery area: listing, ranked search, validation, cataloging and the indexing workers. */
export function createDiscoveryArea(
  ctx: AreaContext,
  opts: { trustOf?: DiscoveryServiceDeps['trustOf']; searchSyncEvery?: string } = {},
): DiscoveryArea {
  const m = ctx.metrics.discovery;
  const repo = { ...createSearchRepository(ctx.db), ...createCatalogWriteRepository(ctx.db) };
  const index = createSearchIndexRepository(ctx.db);
  const resources = createResourceRepository(ctx.db);
  const queue = (data: { catalogEventId?: string; resourceId: string }) =>
    ctx.jobs.enqueue(RESOURCE_INDEXING_WORKER, data);
  const indexing = { index, networks: ctx.networks, metrics: m, logger: ctx.logger };
  // The local indexer does the resource-indexing worker's job in process: its batches count in the worker's figures
  // (completed, failed, duration, last success), so the dashboard does not show "never / 0 completed" after indexing.
  const jm = ctx.metrics.jobs;
  const local = createLocalIndexer({
    ...indexing,
    onBatch: ({ ok, seconds }) => {
      const worker = RESOURCE_INDEXING_WORKER;
      (ok ? jm.completed : jm.failed).inc({ worker });
      jm.latency.observe({ worker }, seconds);
      if (ok) jm.lastSuccess.set({ worker }, Date.now() / 1000);
    },
  });
  /**
   * Where this process runs the jobs, a catalog change is indexed at once by the local indexer; elsewhere (an
   * API-only process), or when the local queue is full, it becomes a resource-indexing job (Agenda's PostgreSQL
   * notification wakes a worker process). Either way the catalog event, written with the change, is the record
   * the search-sync worker re-queues from if indexing is lost.
   */
  const indexSoon = async (data: { catalogEventId?: string; resourceId: string }) => {
    if (ctx.jobs.isProcessing() && local.wake(data.resourceId)) return;
    await queue(data);
  };

  const service = createDiscoveryService({
    repo,
    networks: ctx.networks,
    findSeller: (id) => ctx.sellerRepository.findById(id),
    findResource: (id) => resources.findById(id),
    findActiveEndpoint: (sellerId, url, method) => resources.findActiveEndpoint(sellerId, url, method),
    walletState: createWalletStateReader(ctx.networks),
    minimumStroops: ctx.minimumStroops,
    domainVerifiedByOther: (domain, sellerId) => ctx.sellerRepository.domainVerifiedByOther(domain, sellerId),
    queueIndexing: (catalogEventId, resourceId) => indexSoon({ catalogEventId, resourceId }),
    trustOf: opts.trustOf,
    observe: {
      validationFailed(errors) {
        for (const reason of new Set(errors.map(issueReason))) m.validationFailures.inc({ reason });
        if (errors.some((e) => e.code === 'ROUTE_TEMPLATE_INVALID')) m.routeTemplateFailures.inc();
        if (errors.some((e) => e.code === 'SELLER_DOMAIN_UNVERIFIED')) m.domainVerificationFailures.inc();
      },
      cataloged(kind) {
        m.catalogEvents.inc({ kind });
      },
      searched({ seconds, empty, partial }) {
        m.searchRequests.inc();
        m.searchLatency.observe(seconds);
        if (empty) m.emptySearchResults.inc();
        if (partial) m.partialResults.inc({ endpoint: 'search' });
      },
      listed({ partial }) {
        if (partial) m.partialResults.inc({ endpoint: 'list' });
      },
    },
  });
  m.bindSnapshot(() => index.counts());

  return {
    service,
    workers: [
      createResourceIndexingWorker(indexing),
      createSearchSyncWorker({
        index,
        requeue: (resourceId) => queue({ resourceId }),
        logger: ctx.logger,
        every: opts.searchSyncEvery,
      }),
    ],
    /** Plain resource creates, updates and deletes (resources API): the index follows them too. */
    async onCatalogChange(resourceId) {
      await index.markBehind();
      await indexSoon({ resourceId });
    },
    async start() {
      local.start();
    },
    async stop() {
      await local.stop();
    },
  };
}
