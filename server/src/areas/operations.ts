import type { Area, AreaContext } from './area';
import { createOperationsRepository } from '../data/operations-repository';
import { createSearchIndexRepository } from '../data/search-index-repository';
import { NetworkHealthMonitor } from '../domain/operations/network-health-monitor';
import type { Check } from '../domain/operations/health';
import { createOperationsDashboard, type OperationsDashboard, type OperationsReadings } from '../domain/operations/dashboard';
import { createConformanceRunner, type ConformanceRunner, type FacilitatorPort } from '../domain/conformance/runner';
import type { ProbeFetch } from '../domain/conformance/probe-402';
import type { ConformanceRunStore, ResourceConformance } from '../domain/conformance/types';
import { DomainError } from '../domain/errors';
import { bindAvailability, probeRpc } from '../ledger/rpc-health';
import { localNetworkClient } from '../ledger/local-network-client';
import { createSafeFetcher } from '../net';
import { networkHealthWorker } from '../jobs/network-health-worker';
import { conformanceRunnerWorker, CONFORMANCE_RUNNER_WORKER } from '../jobs/conformance-runner-worker';
import type { Metrics } from '../metrics/registry';

export interface OperationsOptions {
  /** Expected ledger close interval (ms): a ledger not advancing for 3 of them is stale. Default 5000 (Stellar). */
  ledgerCloseMs?: number;
  /** Agenda interval of the network-health worker. Default '10 seconds'. */
  networkHealthEvery?: string;
  /** Agenda interval of the conformance-runner worker. Default '1 hour'. */
  conformanceEvery?: string;
  /** Run the scheduled conformance suite at start too (main: yes; default no, so test services never settle unasked). */
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

/** The dashboard's port onto this process's metrics registry. */
function readingsOf(m: Metrics): OperationsReadings {
  const read = (metric: { get(): Promise<{ values: OperationsReadingsValue[] }> }) => async () => (await metric.get()).values;
  return {
    apiLatency: read(m.httpLatency),
    settleLatency: read(m.facilitator.settleLatency),
    httpRequests: read(m.httpRequests),
    settleOutcomes: read(m.facilitator.settleOutcomes),
    partialResults: read(m.discovery.partialResults),
    jobs: { queueDepth: read(m.jobs.queueDepth), active: read(m.jobs.active), completed: read(m.jobs.completed), failed: read(m.jobs.failed), retries: read(m.jobs.retries), lastSuccess: read(m.jobs.lastSuccess) },
  };
}
type OperationsReadingsValue = Awaited<ReturnType<OperationsReadings['apiLatency']>>[number];

/** The operations area: network health, the conformance runner, the dashboard's sampler, and their workers. */
export function createOperationsArea(ctx: AreaContext, facilitator: FacilitatorPort, opts: OperationsOptions = {}): OperationsArea {
  const repo = createOperationsRepository(ctx.db);
  const index = createSearchIndexRepository(ctx.db);
  const m = ctx.metrics;
  const rules = { ledgerCloseMs: opts.ledgerCloseMs ?? 5000 };
  const rpcNetworks = () => ctx.networks.list().flatMap((n) => (n.rpcUrl ? [{ network: n.network, rpcUrl: n.rpcUrl }] : []));

  const monitor = new NetworkHealthMonitor({
    networks: rpcNetworks,
    probe: (url) => probeRpc(url),
    load: (n) => repo.networkHealth(n),
    loadAll: () => repo.allNetworkHealth(),
    save: (r) => repo.saveNetworkHealth(r),
    rules,
    observe(network, probe, check) {
      const f = m.facilitator;
      for (const method of ['getHealth', 'getLatestLedger']) f.rpcRequests.inc({ network, method });
      if (probe.errors > 0) f.rpcErrors.inc({ network, method: 'getHealth' }, probe.errors);
      f.rpcLatency.observe({ network, method: 'getHealth' }, probe.latencyMs / 1000);
      f.rpcUp.set({ network }, probe.up ? 1 : 0);
      if (probe.latestLedger !== null) f.latestLedger.set({ network }, probe.latestLedger);
      if (check.ledgerAgeSeconds !== undefined) m.operations.ledgerAge.set({ network }, check.ledgerAgeSeconds);
      m.operations.ledgerStale.set({ network }, check.reason === 'LEDGER_STALE' ? 1 : 0);
      if (!probe.up) ctx.logger.warn('network RPC down', { network, reason: 'RPC_UNREACHABLE' });
    },
    debug() {
      // Raw RPC error text may contain the RPC URL (and a provider's API key): it is not logged at info level.
    },
  });
  bindAvailability(ctx.networks, (n) => monitor.isKnownDown(n));

  const runner = createConformanceRunner({
    store: repo,
    networks: () => ctx.networks.list().map((n) => ({ network: n.network, local: n.local, rpcUrl: n.rpcUrl, passphrase: n.passphrase, assets: n.assets })),
    facilitator,
    async latestLedger(network) {
      const url = ctx.networks.get(network)?.rpcUrl;
      const p = url ? await probeRpc(url) : null;
      if (!p?.up || p.latestLedger === null) throw new DomainError('SERVICE_UNAVAILABLE', `The ledger RPC of ${network} is unavailable`);
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
      m.operations.conformanceRuns.inc({ network: run.network, status: run.status });
      m.operations.conformanceLastPassed.set({ network: run.network }, run.status === 'passed' ? 1 : 0);
      m.operations.conformanceLastRun.set({ network: run.network }, (run.finishedAt ?? new Date()).getTime() / 1000);
      for (const c of run.checks.filter((x) => x.name === 'probe_402')) m.operations.resourceProbes.inc({ network: run.network, outcome: c.outcome === 'passed' ? 'passed' : 'failed' });
      // Measured uptime feeds ranking now, not at the next search-sync pass.
      for (const c of run.checks) if (c.resourceId) void index.refreshSignals(c.resourceId).catch(() => undefined);
      if (run.status === 'failed') ctx.logger.warn('conformance run failed', { runId: run.id, network: run.network, failed: run.checks.filter((x) => x.outcome === 'failed').map((x) => x.name) });
    },
  });

  const dashboard = createOperationsDashboard({
    readings: readingsOf(m),
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
    conformance: { runner, store: repo, enqueueRuns: (runIds) => ctx.jobs.enqueue(CONFORMANCE_RUNNER_WORKER, { runIds }) },
    dashboard,
    resourceConformance: (id) => repo.resourceConformance(id),
    workers: [
      networkHealthWorker({ monitor, every: opts.networkHealthEvery }),
      conformanceRunnerWorker({ runner, store: repo, every: opts.conformanceEvery, runAtStart: opts.conformanceAtStart }),
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
