/**
 * Composition root: config -> database -> ledger -> service (jobs, areas) -> http. Owns graceful shutdown: on
 * SIGTERM/SIGINT it stops accepting connections, lets in-flight requests finish, drains the background jobs, closes
 * the database and the local network, and exits 0.
 */
import cluster from 'node:cluster';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Server } from 'node:http';
import { loadConfig, ConfigError, type Config } from './config';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './data/embedded-database';
import { migrate } from './data/database';
import { NetworkRegistry } from './domain/network-registry';
import type { LocalNetwork } from '@paid-api-marketplace/local-network';
import { createService } from './compose';
import { createLogger } from './logger';
import { createDnsTxtResolver, createLocalDevDomainCheck, createSafeFetcher } from './net';
import { generateReceiptKeyPem, parsePreviousKeys, type PublicJwk } from './domain/receipts/receipt-signer';
import { clusterWanted, runClusterPrimary } from './cluster-primary';
import { detectLocalSimulators } from './ledger/simulator-detection';
import { OperatorKeyRing } from './http/operator-keys';
import {
  checkDatabase,
  checkPortFree,
  checkRpcs,
  listenError,
  StartupError,
  STARTUP_FAILURE_EXIT_CODE,
} from './startup-checks';

/** Until the configuration is read: info and above; then LOG_LEVEL. */
let logger = createLogger();

/** The operator key: from OPERATOR_API_KEY, else generated once and kept in a file only the owner can read. */
function operatorKey(config: Config): string {
  if (config.operatorApiKey) return config.operatorApiKey;
  if (fs.existsSync(config.operatorKeyFile)) return fs.readFileSync(config.operatorKeyFile, 'utf8').trim();
  fs.mkdirSync(path.dirname(config.operatorKeyFile), { recursive: true });
  const key = `mk_op_${crypto.randomBytes(32).toString('base64url')}`;
  fs.writeFileSync(config.operatorKeyFile, `${key}\n`, { mode: 0o600 });
  return key;
}

/**
 * The receipt signing key: RECEIPT_SIGNING_KEY, else the data folder's key file (generated once, mode 0600), plus
 * the retired public keys (env and file). The key is never logged: only the file path is.
 */
async function receiptSigning(config: Config): Promise<{ privateKeyPem: string; previous: PublicJwk[] }> {
  const { key, keyFile, previousKeys, previousKeysFile } = config.receiptSigning;
  let privateKeyPem = key;
  if (!privateKeyPem) {
    if (fs.existsSync(keyFile)) {
      privateKeyPem = fs.readFileSync(keyFile, 'utf8');
    } else {
      fs.mkdirSync(path.dirname(keyFile), { recursive: true });
      privateKeyPem = generateReceiptKeyPem();
      fs.writeFileSync(keyFile, privateKeyPem, { mode: 0o600 });
      logger.info('receipt signing key generated into the data folder (RECEIPT_SIGNING_KEY unset)', { file: keyFile });
    }
  }
  const previous: PublicJwk[] = [];
  if (previousKeys) previous.push(...(await parsePreviousKeys(JSON.parse(previousKeys))));
  if (fs.existsSync(previousKeysFile))
    previous.push(...(await parsePreviousKeys(JSON.parse(fs.readFileSync(previousKeysFile, 'utf8')))));
  return { privateKeyPem, previous };
}

async function preStartChecks(config: Config): Promise<void> {
  await checkPortFree(config.port, config.host);
  if (config.localNetwork.enabled && config.localNetwork.port !== 0)
    await checkPortFree(config.localNetwork.port, config.localNetwork.host, 'LOCAL_NETWORK_PORT');
  if (!config.databaseUrl && config.embeddedDatabasePort !== 0)
    await checkPortFree(config.embeddedDatabasePort, '127.0.0.1', 'EMBEDDED_POSTGRES_PORT');
  if (config.databaseUrl) await checkDatabase(config.databaseUrl);
  await checkRpcs(
    config.networks
      .filter((n) => n.rpcUrl)
      .map((n) => ({
        variable: `STELLAR_${n.network === 'stellar:pubnet' ? 'PUBNET' : 'TESTNET'}_RPC_URL`,
        rpcUrl: n.rpcUrl!,
      })),
  );
}

/** The configured networks, with testnet served by the local network at `rpcUrl` when it is on. */
function withLocalNetwork(config: Config, rpcUrl: string | null) {
  const networks = config.networks.map((n) => ({ ...n, local: false }));
  if (rpcUrl) {
    const testnet = networks.find((n) => n.network === 'stellar:testnet')!;
    testnet.rpcUrl = rpcUrl;
    testnet.local = true;
  }
  return networks;
}

/**
 * What a process owns when it runs them: the embedded PostgreSQL (DATABASE_URL unset; migrated here) and the local
 * network (LOCAL_NETWORK on). The single service process owns them, or the primary of a cluster.
 */
async function startOwned(config: Config) {
  let embedded: EmbeddedDatabase | null = null;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    logger.info('DATABASE_URL is unset: starting the embedded PostgreSQL', { dataDir: config.embeddedDatabaseDir });
    // Every service process opens its own pool (and the job system's connections): PostgreSQL's default of 100
    // connections would be short for many processes.
    const settings =
      config.webConcurrency > 1
        ? { max_connections: Math.max(100, config.webConcurrency * (config.databasePoolMax + 10) + 10) }
        : undefined;
    embedded = await startEmbeddedDatabase({
      dataDir: config.embeddedDatabaseDir,
      persistent: true,
      settings,
      port: config.embeddedDatabasePort || undefined,
    });
    databaseUrl = await embedded.urlFor('marketplace');
  }
  const applied = await migrate(databaseUrl);
  if (applied.length) logger.info('migrations applied', { applied });

  let localNetwork: LocalNetwork | null = null;
  if (config.localNetwork.enabled) {
    // The development default: the local network (its own package, local-network/) in this process. Loaded only
    // here, so a service given an RPC URL (LOCAL_NETWORK off) never loads it.
    const { startLocalNetwork } = await import('@paid-api-marketplace/local-network');
    localNetwork = await startLocalNetwork({
      host: config.localNetwork.host,
      port: config.localNetwork.port,
      ledgerCloseMs: config.localNetwork.ledgerCloseMs,
      dataFile: config.localNetwork.dataFile,
      // testnet's twin: it hosts the configured testnet assets (default Circle's testnet USDC) with their issuers.
      assets: config.networks
        .find((n) => n.network === 'stellar:testnet')!
        .assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    });
    for (const m of localNetwork.migrated)
      logger.info('local network: balances moved from an old local issuer to the hosted asset', { ...m });
    logger.info('local network started (evidence: local simulation)', {
      rpcUrl: localNetwork.rpcUrl,
      assets: localNetwork.assets,
    });
  }
  const networks = withLocalNetwork(config, localNetwork?.rpcUrl ?? null);
  const stop = async () => {
    if (localNetwork) await localNetwork.stop();
    if (embedded) await embedded.stop();
  };
  return { embedded, databaseUrl, localNetwork, networks, stop };
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  logger = createLogger({ level: config.logLevel });
  // Fail loudly before anything starts: a taken port, an unreachable DATABASE_URL or configured RPC (one line, exit 3).
  // A service process of a cluster skips this: its primary checked, and now holds the ports itself.
  if (!cluster.isWorker) await preStartChecks(config);
  // WEB_CONCURRENCY > 1: this process only supervises the service processes (cluster-primary.ts), and owns the
  // embedded database and the local network when they are used; the service processes connect to them.
  if (clusterWanted(config)) {
    const owned = await startOwned(config);
    return runClusterPrimary(config, logger, {
      databaseUrl: owned.databaseUrl,
      localNetworkRpcUrl: owned.localNetwork?.rpcUrl ?? null,
      prepare: async () => {
        operatorKey(config);
        await receiptSigning(config);
      },
      stopOwned: () => owned.stop(),
    });
  }

  // A service process of a cluster whose primary runs the local network: connect to it instead of starting one.
  const primaryRpcUrl = cluster.isWorker ? config.localNetwork.primaryRpcUrl : null;
  const { embedded, databaseUrl, localNetwork, networks } = primaryRpcUrl
    ? {
        embedded: null,
        databaseUrl: config.databaseUrl!,
        localNetwork: null,
        networks: withLocalNetwork(config, primaryRpcUrl),
      }
    : await startOwned(config);

  const operatorApiKey = operatorKey(config);
  if (!config.operatorApiKey)
    logger.info('operator API key kept in a file (OPERATOR_API_KEY unset)', { file: config.operatorKeyFile });
  // Rotation without a restart: the key file's lines are re-read on change and on SIGHUP (http/operator-keys.ts).
  const operatorKeys = config.operatorApiKey
    ? new OperatorKeyRing({ fixed: [config.operatorApiKey, config.operatorApiKeyPrevious ?? ''] })
    : new OperatorKeyRing({ file: config.operatorKeyFile }, logger).watch();
  process.on('SIGHUP', () => operatorKeys.reload());

  const registry = new NetworkRegistry(networks);
  // An external RPC that is in fact the local simulator is labelled local simulation (waits at most 5 s here; an
  // RPC that does not answer yet is asked again in the background).
  const simulators = detectLocalSimulators(registry, logger);
  await Promise.race([simulators.settled, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);

  // LOCAL_DEV_DOMAINS: *.test seller domains verify over http on 127.0.0.1 (net/local-dev-domain-check.ts).
  const localDev = config.localDevDomains.enabled
    ? createLocalDevDomainCheck({
        port: config.localDevDomains.port,
        real: { fetchText: createSafeFetcher(), resolveTxt: createDnsTxtResolver() },
      })
    : null;
  if (localDev)
    logger.warn(
      'LOCAL_DEV_DOMAINS is on: *.test seller domains are verified over http on 127.0.0.1 (local development only)',
      { port: config.localDevDomains.port },
    );
  const service = await createService({
    databaseUrl,
    environment: config.environment,
    version: config.version,
    commit: config.commit,
    networks: registry,
    operatorApiKey,
    operatorKeys: operatorKeys.keys,
    rateLimit: config.rateLimit,
    challengeLimit: config.challengeLimit,
    retention: config.retention,
    bodyLimitBytes: config.bodyLimitBytes,
    statementTimeoutMs: config.statementTimeoutMs,
    databasePoolMax: config.databasePoolMax,
    responseValidation: config.responseValidation,
    logger,
    logRequests: config.logRequests,
    serverTiming: config.serverTiming,
    mongodbUrl: config.mongodbUrl,
    runJobs: true,
    facilitator: config.facilitator,
    receiptSigning: await receiptSigning(config),
    discovery: config.discovery,
    operations: {
      networkHealthEvery: config.operations.networkHealthEvery,
      conformanceEvery: config.operations.conformanceEvery,
      conformanceAtStart: !cluster.isWorker || cluster.worker?.id === 1,
      // With the local network on, its own close interval is the one /health judges staleness by.
      ledgerCloseMs:
        (localNetwork || primaryRpcUrl) && config.localNetwork.ledgerCloseMs > 0
          ? config.localNetwork.ledgerCloseMs
          : config.operations.ledgerCloseMs,
    },
    // Liveness probes of every listing (issue #33): unpaid, bounded per host and overall.
    trust: {
      liveness: config.liveness.enabled,
      settings: {
        maxPerMinute: config.liveness.maxPerMinute,
        intervalMs: config.liveness.intervalMinutes * 60_000,
        dropAfterMs: config.liveness.dropAfterHours * 3600_000,
      },
    },
    // Test mode lets domain checks reach http:// and loopback servers; never on in production.
    domainCheck: config.domainVerificationTestMode
      ? {
          fetchText: createSafeFetcher({ allowInsecureForTests: true, allowPrivateAddressesForTests: true }),
          resolveTxt: createDnsTxtResolver(),
        }
      : localDev?.ports,
    domainUrlBase: localDev?.urlBase,
    localDevDomains: config.localDevDomains.enabled,
  });

  // Express 5 hands a listen error (EADDRINUSE: another program took the port since the check) to this callback.
  const server: Server = service.app.listen(config.port, config.host, (err?: Error) => {
    if (err) {
      process.stderr.write(`${listenError(err as NodeJS.ErrnoException, config.port, config.host).message}\n`);
      void Promise.allSettled([service.close(), localNetwork?.stop(), embedded?.stop()]).finally(() =>
        process.exit(STARTUP_FAILURE_EXIT_CODE),
      );
      return;
    }
    logger.info('listening', {
      url: `http://${config.host}:${config.port}`,
      docs: `http://${config.host}:${config.port}/docs`,
    });
  });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    const forced = setTimeout(() => {
      logger.error('shutdown timed out; exiting');
      process.exit(1);
    }, 25_000);
    forced.unref();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    simulators.stop();
    operatorKeys.close();
    await service.close();
    if (localNetwork) await localNetwork.stop();
    if (embedded) await embedded.stop();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof StartupError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(STARTUP_FAILURE_EXIT_CODE);
  }
  logger.error('failed to start', { error: (err as Error).message });
  process.exit(1);
});
