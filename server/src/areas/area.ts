import type { Sequelize } from 'sequelize';
import type { Handlers } from '../http/operation-types';
import type { NetworkRegistry } from '../domain/network-registry';
import type { Metrics } from '../metrics/registry';
import type { Logger } from '../logger';
import type { JobSystem, WorkerDefinition } from '../jobs/job-system';
import type { ResourceService } from '../domain/catalog/resource-service';
import type { SellerService } from '../domain/sellers/seller-service';
import type { SellerRepository } from '../domain/sellers/types';

/** What every area of the service is built from (see compose.ts). */
export interface AreaContext {
  db: Sequelize;
  networks: NetworkRegistry;
  metrics: Metrics;
  logger: Logger;
  jobs: JobSystem;
  sellers: SellerService;
  sellerRepository: SellerRepository;
  resources: ResourceService;
}

/** An area contributes handlers for its operations, its background workers, and optional start/stop steps. */
export interface Area<K extends keyof Handlers> {
  handlers: Pick<Handlers, K>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  workers: WorkerDefinition<any>[];
  start?(): Promise<void>;
  stop?(): Promise<void>;
}
