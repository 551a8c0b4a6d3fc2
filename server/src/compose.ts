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
import { createKeyService } from './domain/sellers/key-service';
import { ApiKeyCache, type OperatorKeys } from './http/authenticate';
import { listenForApiKeyChanges } from './data/api-key-changes';
import { retentionWorker } from './jobs/retention-worker';
import { createRetentionRepository } from './data/retention-repository';
import { createResourceService } from './domain/catalog/resource-service';
import { createWalletStateReader } from './ledger/wallet-state';
import { createPaymentReadService } from './domain/payments/payment-read-service';
import type { DomainCheckPorts } from './domain/sellers/domain-verification';
import { createDnsTxtResolver, createSafeFetcher } from './net';
import { healthReport, failedCheck } from './domain/operations/health';
import { createMetrics, type Metrics } from './metrics/registry';
import { NetworkRegistry } from './domain/network-registry';
import { createHandlers } from './http/handlers';
import { createSellerReceiptKeyRepository } from './data/seller-receipt-key-repository';
import { createSellerReceiptKeyService } from './domain/sellers/seller-receipt-keys';
import { createJobSystem, type JobSystem } from './jobs/job-system';
import { createDiscoveryArea } from './areas/discovery';
import { createTrustArea, type TrustArea, type TrustOptions } from './areas/trust';
import { createFacilitatorArea, type FacilitatorOptions } from './areas/facilitator';
import { createOperationsArea, type OperationsArea, type OperationsOptions } from './areas/operations';
import type { AreaContext } from './areas/area';
import { createReceiptKeyRepository } from './data/receipt-key-repository';
import { createReceiptSigner, generateReceiptKeyPem, type PublicJwk } from './domain/receipts/receipt-signer';
import { createSignedReceipts } from './domain/receipts/signed-receipts';
import { createBazaar } from './domain/discovery/bazaar';
import { createPaymentIdentifiers } from './domain/facilitator/payment-identifier';
import { createPaymentIdentifierRepository } from './data/payment-identifier-repository';
import { createObservedResourceRepository } from './data/observed-resource-repository';
import { createBazaarListingRepository } from './data/bazaar-listing-repository';

// FACILITATOR_MIN_AMOUNT's default (config.ts's, domain/defaults.ts), for callers that give no facilitator options.
import { DEFAULT_MIN_AMOUNT } from './domain/defaults';
import type { Logger } from './logger';
import { toStroops } from './domain/amount';

/** Everything the HTTP layer needs, built from configuration. main.ts and the tests both build the service here. */
export interface ServiceOptions {
  databaseUrl: string;
  environment: string;
  version: string;
  commit: string | null;
  networks: NetworkRegistry;
  operatorApiKey: string | null;
  /** The operator keys accepted now (OperatorKeyRing: rotation without restart); default [operatorApiKey]. */
  operatorKeys?: OperatorKeys;
  rateLimit: { points: number; windowSeconds: number };
  /** Sign-up challenges per hour per client address and per wallet (SIGNUP_CHALLENGES_PER_HOUR_*). */
  challengeLimit?: { perClient: number; perWallet: number };
  /** The retention worker: failed attempts kept `failedAttemptsDays` (RETENTION_FAILED_ATTEMPTS_DAYS), run `every`. */
  retention?: { failedAttemptsDays?: number; every?: string };
  bodyLimitBytes: number;
  /** statement_timeout of every database connection (default DEFAULT_STATEMENT_TIMEOUT_MS; 0 = none). */
  statementTimeoutMs?: number;
  /** Connections in the database pool (default DEFAULT_POOL_MAX). */
  databasePoolMax?: number;
  /** Admission per route class (http/admission.ts): default 30 % of the pool reserved for verify/settle. */
  admission?: { reservedForPayments?: number; maxWaiting?: number };
  responseValidation: boolean;
  logger: Logger;
  /** LOG_REQUESTS: one log line per request. */
  logRequests?: boolean;
  /** SERVER_TIMING: a Server-Timing header per response (http/server-timing.ts; measurement only). */
  serverTiming?: boolean;
  /** Domain checks: default the safe fetcher and the system DNS resolver. */
  domainCheck?: DomainCheckPorts;
  domainUrlBase?: (domain: string) => string;
  /** LOCAL_DEV_DOMAINS: parts that reach sellers (the /mcp server's paid calls) reach `*.test` names on 127.0.0.1. */
  localDevDomains?: boolean;
  mongodbUrl?: string | null;
  /** Process background jobs in this process (main: yes; tests: only those that exercise workers). */
  runJobs?: boolean;
  /** How often Agenda polls for due jobs (tests use a short interval). */
  jobPollMs?: number;
  /** Facilitator settings: channel accounts, fee limit, confirmation wait (defaults in areas/facilitator.ts). */
  facilitator?: FacilitatorOptions;
  /** Network health, conformance runner and dashboard settings (defaults in areas/operations.ts). */
  operations?: OperationsOptions;
  /** How often the search-sync worker's pass runs (SEARCH_SYNC_INTERVAL_SECONDS; default in domain/defaults.ts). */
  discovery?: { searchSyncEvery?: string };
  /** Liveness probes and trust signals (issue #33; defaults in areas/trust.ts). */
  trust?: TrustOptions;
  /** The receipt signing key (Ed25519 PKCS#8 PEM) and retired public keys; default a key made for this process. */
  receiptSigning?: { privateKeyPem: string; previous?: PublicJwk[] };
}

export interface Service {
  app: Express;
  db: Sequelize;
  metrics: Metrics;
  jobs: JobSystem;
  operations: OperationsArea;
  trust: TrustArea;
  close(): Promise<void>;
}

export function loadBundledSpec(): AppSpec {
  const file = path.resolve(__dirname, '../../openapi/dist/openapi.json');
  return JSON.parse(fs.readFileSync(file, 'utf8')) as AppSpec;
}
type AppSpec = Parameters<typeof createApp>[0]['spec'];

export async function createService(opts: ServiceOptions): Promise<Service> {
  const db = createSequelize(opts.databaseUrl, {
    statementTimeoutMs: opts.statementTimeoutMs,
    poolMax: opts.databasePoolMax,
  });
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
  const keys = createKeyService({ sellers: sellerRepo });
  // Revocations made by any process clear this process's key cache (PostgreSQL LISTEN/NOTIFY).
  const apiKeyCache = new ApiKeyCache();
  const keyChanges = await listenForApiKeyChanges(opts.databaseUrl, apiKeyCache, opts.logger);
  const jobs = await createJobSystem({
    databaseUrl: opts.databaseUrl,
    mongodbUrl: opts.mongodbUrl ?? null,
    db,
    metrics: metrics.jobs,
    logger: opts.logger,
    processEvery: opts.jobPollMs,
  });
  // Bound once the discovery area exists: catalog changes queue search indexing.
  let onCatalogChange: (resourceId: string) => Promise<void> = async () => undefined;
  const resources = createResourceService({
    resources: createResourceRepository(db),
    findSeller: (id) => sellerRepo.findById(id),
    networks: opts.networks,
    onCatalogChange: (id) => onCatalogChange(id),
    minimumStroops: toStroops(opts.facilitator?.minAmount ?? DEFAULT_MIN_AMOUNT),
    walletState: createWalletStateReader(opts.networks),
  });
  const ctx: AreaContext = {
    db,
    networks: opts.networks,
    minimumStroops: toStroops(opts.facilitator?.minAmount ?? DEFAULT_MIN_AMOUNT),
    metrics,
    logger: opts.logger,
    jobs,
    sellers,
    sellerRepository: sellerRepo,
    resources,
  };
  const trust = createTrustArea(ctx, opts.trust);
  const discovery = createDiscoveryArea(ctx, {
    trustOf: (ids) => trust.service.trustOf(ids),
    searchSyncEvery: opts.discovery?.searchSyncEvery,
  });
  onCatalogChange = (id) => discovery.onCatalogChange(id);
  // The ledger pace verify converts maxTimeoutSeconds with: configured, else the close interval the operations area
  // judges the network by (the local network's own interval when it runs embedded), else the spec's 5 s.
  const ledgerSeconds =
    opts.facilitator?.ledgerSeconds ??
    (opts.operations?.ledgerCloseMs ? opts.operations.ledgerCloseMs / 1000 : undefined);
  const facilitator = createFacilitatorArea(ctx, { ...opts.facilitator, ledgerSeconds });
  const operations = createOperationsArea(ctx, facilitator.service, opts.operations);
  const areas = [discovery, facilitator, operations, trust];
  for (const area of areas) for (const worker of area.workers) jobs.define(worker);
  jobs.define(
    retentionWorker({
      store: createRetentionRepository(db),
      metrics: metrics.abuse,
      logger: opts.logger,
      ...opts.retention,
    }),
  );
  const payments = createPaymentReadService({
    payments: createPaymentReadRepository(),
    sellerExists: async (id) => (await sellerRepo.findById(id)) !== null,
  });

  const receiptSigner = await createReceiptSigner(opts.receiptSigning ?? { privateKeyPem: generateReceiptKeyPem() });
  const receiptKeys = createReceiptKeyRepository(db);
  // Every process publishes its current public key, so the key set of any process verifies every process's receipts.
  await receiptKeys.publish(receiptSigner.jwks().keys[0]);
  const signedReceipts = createSignedReceipts({
    signer: receiptSigner,
    sharedKeys: () => receiptKeys.list(),
    partiesOf: (id) => facilitator.partiesOf(id),
    feesOf: (id) => facilitator.feesOf(id),
    assetContract: (network, code, issuer) => opts.networks.asset(network, code, issuer)?.contractId ?? null,
    resourceUrlOf: async (id) => (await resources.get(id).catch(() => null))?.url ?? null,
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
            void err; // raw text can hold the connection string: only the fixed reason is shown
            return failedCheck('down', 'DATABASE_UNREACHABLE', Date.now() - t);
          }
        },
        jobs: opts.runJobs
          ? () => jobs.health()
          : async () => ({ status: 'ok', message: 'this process does not run background jobs' }),
        // From the current health record the network-health worker writes (no RPC call per /health request).
        ledger: () => operations.ledgerChecks(),
      },
      startedAt,
    );

  const handlers = createHandlers({
    sellers,
    keys,
    sellerReceiptKeys: createSellerReceiptKeyService({
      repository: createSellerReceiptKeyRepository(db),
      assertSellerExists: async (id) => void (await sellers.get(id)),
    }),
    resources,
    resourceConformance: operations.resourceConformance,
    trust: trust.service,
    payments,
    discovery: discovery.service,
    bazaar: createBazaar({
      repo: createObservedResourceRepository(db),
      catalog: createBazaarListingRepository(db),
      search: discovery.service.search,
      trustOf: (ids) => trust.service.trustOf(ids),
      networks: opts.networks,
      localDevDomains: opts.localDevDomains,
      onError: (err) => opts.logger.warn('bazaar observation failed', { error: String(err) }),
    }),
    facilitator: facilitator.service,
    facilitatorAddresses: facilitator.facilitatorAddresses,
    paymentIdentifiers: createPaymentIdentifiers({ store: createPaymentIdentifierRepository(db) }),
    receipts: signedReceipts,
    conformance: operations.conformance,
    dashboard: operations.dashboard,
    networks: opts.networks,
    metrics,
    health,
    version: {
      version: opts.version,
      commit: opts.commit,
      contractVersion: String((spec.info as { version: string }).version),
    },
  });

  const app = createApp({
    spec,
    handlers,
    db,
    sellers: sellerRepo,
    metrics,
    logger: opts.logger,
    operatorApiKey: opts.operatorApiKey,
    operatorKeys: opts.operatorKeys,
    apiKeyCache,
    rateLimit: opts.rateLimit,
    challengeLimit: opts.challengeLimit,
    bodyLimitBytes: opts.bodyLimitBytes,
    databasePoolMax: opts.databasePoolMax,
    admission: opts.admission,
    responseValidation: opts.responseValidation,
    logRequests: opts.logRequests,
    serverTiming: opts.serverTiming,
    localDevDomains: opts.localDevDomains,
  });
  for (const area of areas) await area.start?.();
  if (opts.runJobs) await jobs.start();
  return {
    app,
    db,
    metrics,
    jobs,
    operations,
    trust,
    async close() {
      await jobs.stop();
      for (const area of [...areas].reverse()) await area.stop?.();
      await keyChanges.close();
      await db.close();
    },
  };
}
