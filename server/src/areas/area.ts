import type { Sequelize } from 'sequelize';
import type { NetworkRegistry } from '../domain/network-registry';
import type { Metrics } from '../metrics/registry';
import type { Logger } from '../logger';
import type { JobSystem, WorkerDefinition } from '../jobs/job-system';
import type { ResourceService } from '../domain/catalog/resource-service';
import type { SellerService } from '../domain/sellers/seller-service';
import type { SellerRepository } from '../domain/sellers/types';
import type { Stroops } from '../domain/amount';

/** What every area of the service is built from (see compose.ts). */
export interface AreaContext {
  db: Sequelize;
  networks: NetworkRegistry;
  /** FACILITATOR_MIN_AMOUNT, converted once: the catalog refuses prices below what the facilitator settles. */
  minimumStroops: Stroops;
  metrics: Metrics;
  logger: Logger;
  jobs: JobSystem;
  sellers: SellerService;
  sellerRepository: SellerRepository;
  resources: ResourceService;
}

/** An area is wiring: it builds its services (which the handlers call) and its background workers, with optional
 * start/stop steps. */
export interface Area {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  workers: WorkerDefinition<any>[];
  start?(): Promise<void>;
  stop?(): Promise<void>;
}
