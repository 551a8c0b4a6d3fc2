import fs from 'node:fs';
import path from 'node:path';
import type { Express } from 'express';
import type { Sequelize } from 'sequelize';
import { createApp } from './app';
import { createSequelize } from './data/database';
import { defineModels } from './data/models';
import { createSellerRepository } from './data/seller-repository';
import { createResourceRepository } from './data/resource-repository';
import { createPaymentReadRepository } from './data/payment-read-repository';
import { createSellerService } from './domain/sellers/seller-service';
import { createResourceService } from './domain/catalog/resource-service';
import { createPaymentReadService } from './domain/payments/payment-read-service';
import type { DomainCheckPorts } from './domain/sellers/domain-verification';
import { createDnsTxtResolver, createSafeFetcher } from './domain/sellers/domain-verification';
import { healthReport, type Check } from './domain/operations/health';
import { createMetrics, type Metrics } from './metrics/registry';
import { NetworkRegistry } from './ledger/network-registry';
import { checkRpc } from './ledger/rpc-health';
import { createHandlers } from './http/handlers';
import type { Logger } from './logger';

/** Everything the HTTP layer needs, built from configuration. main.ts and the tests both build the service here. */
export interface ServiceOptions {
  databaseUrl: string;
  environment: string;
  version: string;
  commit: string | null;
  networks: NetworkRegistry;
  operatorApiKey: string | null;
  rateLimit: { points: number; windowSeconds: number };
  bodyLimitBytes: number;
  responseValidation: boolean;
  logger: Logger;
  /** Domain checks: default the safe fetcher and the system DNS resolver. */
  domainCheck?: DomainCheckPorts;
  domainUrlBase?: (domain: string) => string;
  jobsHealth?: () => Promise<Check>;
}

export interface Service {
  app: Express;
  db: Sequelize;
  metrics: Metrics;
  close(): Promise<void>;
}

export function loadBundledSpec(): AppSpec {
  const file = path.resolve(__dirname, '../../openapi/dist/openapi.json');
  return JSON.parse(fs.readFileSync(file, 'utf8')) as AppSpec;
}
type AppSpec = Parameters<typeof createApp>[0]['spec'];

export function createService(opts: ServiceOptions): Service {
  const db = createSequelize(opts.databaseUrl);
  defineModels(db);
  const metrics = createMetrics(opts.environment);
  const spec = loadBundledSpec();
  const startedAt = Date.now();

  const sellerRepo = createSellerRepository(db);
  const sellers = createSellerService({
    sellers: sellerRepo,
    domainCheck: opts.domainCheck ?? { fetchText: createSafeFetcher(), resolveTxt: createDnsTxtResolver() },
    domainUrlBase: opts.domainUrlBase,
  });
  const resources = createResourceService({
    resources: createResourceRepository(db),
    findSeller: (id) => sellerRepo.findById(id),
    networks: opts.networks,
  });
  const payments = createPaymentReadService({
    payments: createPaymentReadRepository(),
    sellerExists: async (id) => (await sellerRepo.findById(id)) !== null,
  });

  const health = () =>
    healthReport(
      {
        async database() {
          const t = Date.now();
          try {
            await db.query('SELECT 1');
            return { status: 'ok', latencyMs: Date.now() - t };
          } catch (err) {
            return { status: 'down', latencyMs: Date.now() - t, message: `database unreachable: ${(err as Error).message}`.slice(0, 200) };
          }
        },
        jobs: opts.jobsHealth ?? (async () => ({ status: 'ok', message: 'no background jobs registered in this process' })),
        async ledger() {
          const out: Record<string, Check> = {};
          for (const n of opts.networks.list()) {
            if (n.rpcUrl) {
              const { latestLedger: _l, ...check } = await checkRpc(n.rpcUrl);
              out[n.network] = check;
            }
          }
          return out;
        },
      },
      startedAt,
    );

  const handlers = createHandlers({
    sellers,
    resources,
    payments,
    networks: opts.networks,
    metrics,
    health,
    version: { version: opts.version, commit: opts.commit, contractVersion: String((spec.info as { version: string }).version) },
  });

  const app = createApp({
    spec,
    handlers,
    db,
    sellers: sellerRepo,
    metrics,
    logger: opts.logger,
    operatorApiKey: opts.operatorApiKey,
    rateLimit: opts.rateLimit,
    bodyLimitBytes: opts.bodyLimitBytes,
    responseValidation: opts.responseValidation,
  });
  return {
    app,
    db,
    metrics,
    async close() {
      await db.close();
    },
  };
}
