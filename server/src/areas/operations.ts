import type { Area, AreaContext } from './area';
import { createOperationsRepository } from '../data/operations-repository';
import { createSearchIndexRepository } from '../data/search-index-repository';
import { NetworkHealthMonitor } from '../domain/operations/network-health-monitor';
import type { Check } from '../domain/operations/health';
import { createOperationsDashboard, type OperationsDashboard } from '../domain/operations/dashboard';
import { createConformanceRunner, type ConformanceRunner, type FacilitatorPort } from '../domain/conformance/runner';
import type { ProbeFetch } from '../domain/conformance/probe-402';
import type { ConformanceRunStore, ResourceConformance } from '../domain/conformance/types';
import { DomainError } from '../domain/errors';
import { bindAvailability, probeRpc } from '../ledger/rpc-health';
import { localNetworkClient } from '../ledger/local-network-client';
import { createSafeFetcher } from '../net';
import { networkHealthWorker } from '../jobs/network-health-worker';
import { conformanceRunnerWorker, CONFORMANCE_RUNNER_WORKER } from '../jobs/conformance-runner-worker';
import { metricReadings, observeConformanceRun, observeNetworkProbe } from '../metrics/observers';

export interface OperationsOptions {
  /** Expected ledger close interval (ms): a ledger not advancing for 3 of them is stale. Default 5000 (Stellar). */
  ledgerCloseMs?: number;
  /** Agenda interval of the network-health worker. Default '10 seconds'. */
  networkHealthEvery?: string;
  /** Agenda interval of the conformance-runner worker. Default '1 hour'. */
  conformanceEvery?: string;
  /** Run the scheduled conformance suite at start too (main: yes; default no, so test services never settle unasked).
   * */
  conformanceAtStart?: boolean;
  /** Dashboard sample interval (ms). Default 10 000 (one hour = 360 samples). */
  sampleIntervalMs?: number;
  /** The probe fetcher; default the SSRF-safe fetcher reading 402 answers (tests allow loopback http). */
  probeFetch?: ProbeFetch;
  perHostIntervalMs?: number;
}

export interface OperationsArea extends Area {
  monitor: NetworkHealthMonitor;
  runner: ConformanceRunner;
  conformance: { runner: ConformanceRunner; store: ConformanceRunStore; enqueueRuns(runIds: string[]): Promise<void> };
  dashboard: OperationsDashboard;
  resourceConformance(resourceId: string): Promise<ResourceConformance>;
  ledgerChecks(): Promise<Record<string, Check>>;
  /** Takes one dashboard sample now (the timer does it every interval). */
  sample(): Promise<void>;
}

/** The operations area: network health, the conformance runner, the dashboard's sampler, and their workers. */
export function createOperationsArea(
  ctx: AreaContext,
  facilitator: FacilitatorPort,
  opts: OperationsOptions = {},
): OperationsArea {
  const repo = createOperationsRepository(ctx.db);
  const index = createSearchIndexRepository(ctx.db);
  const m = ctx.metrics;
  const rules = { ledgerCloseMs: opts.ledgerCloseMs ?? 5000 };
  const rpcNetworks = () =>
    ctx.networks.list().flatMap((n) => (n.rpcUrl ? [{ network: n.network, rpcUrl: n.rpcUrl }] : []));

  const monitor = new NetworkHealthMonitor({
    networks: rpcNetworks,
    probe: (url) => probeRpc(url),
    load: (n) => repo.networkHealth(n),
    loadAll: () => repo.allNetworkHealth(),
    save: (r) => repo.saveNetworkHealth(r),
    rules,
    observe(network, probe, check) {
      observeNetworkProbe(m, network, probe, check);
      if (!probe.up) ctx.logger.warn('network RPC down', { network, reason: 'RPC_UNREACHABLE' });
    },
    debug() {
      // Raw RPC error text may contain the RPC URL (and a provider's API key): it is not logged at info level.
    },
  });
  bindAvailability(ctx.networks, (n) => monitor.isKnownDown(n));

  const runner = createConformanceRunner({
    store: repo,
    networks: () =>
      ctx.networks.list().map((n) => ({
        network: n.network,
        local: n.local,
        rpcUrl: n.rpcUrl,
        passphrase: n.passphrase,
        assets: n.assets,
      })),
    facilitator,
    async latestLedger(network) {
      const url = ctx.networks.get(network)?.rpcUrl;
      const p = url ? await probeRpc(url) : null;
      if (!p?.up || p.latestLedger === null)
        throw new DomainError('SERVICE_UNAVAILABLE', `The ledger RPC of ${network} is unavailable`);
      return p.latestLedger;
    },
    localFunding(network) {
      const n = ctx.networks.get(network);
      return n?.local && n.rpcUrl ? localNetworkClient(n.rpcUrl) : null;
    },
    settleResource: (network, asset, amount) => repo.ensureConformanceResource(network, asset, amount),
    fetch: opts.probeFetch ?? createSafeFetcher({ readBodyOfStatuses: [402], timeoutMs: 5000 }),
    perHostIntervalMs: opts.perHostIntervalMs,
    finished(run) {
      observeConformanceRun(m, run);
      // Measured uptime feeds ranking now, not at the next search-sync pass.
      for (const c of run.checks) if (c.resourceId) void index.refreshSignals(c.resourceId).catch(() => undefined);
      if (run.status === 'failed')
        ctx.logger.warn('conformance run failed', {
          runId: run.id,
          network: run.network,
          failed: run.checks.filter((x) => x.outcome === 'failed').map((x) => x.name),
        });
    },
  });

  const dashboard = createOperationsDashboard({
    readings: metricReadings(m),
    store: repo,
    networks: ctx.networks,
    indexCounts: () => index.counts(),
    monitor,
    rules,
    intervalMs: opts.sampleIntervalMs,
  });

  return {
    monitor,
    runner,
    conformance: {
      runner,
      store: repo,
      enqueueRuns: (runIds) => ctx.jobs.enqueue(CONFORMANCE_RUNNER_WORKER, { runIds }),
    },
    dashboard,
    resourceConformance: (id) => repo.resourceConformance(id),
    workers: [
      networkHealthWorker({ monitor, every: opts.networkHealthEvery }),
      conformanceRunnerWorker({
        runner,
        store: repo,
        every: opts.conformanceEvery,
        runAtStart: opts.conformanceAtStart,
      }),
    ],
    ledgerChecks: () => monitor.checks(),
    sample: () => dashboard.sample(),
    async start() {
      m.operations.initNetworks(ctx.networks.list());
      m.facilitator.initNetworks(ctx.networks.list());
      monitor.start();
      await dashboard.start();
    },
    async stop() {
      dashboard.stop();
      monitor.stop();
    },
  };
}
