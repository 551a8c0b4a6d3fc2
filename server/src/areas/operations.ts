import type { Area, AreaContext } from './area';
import type { Handlers } from '../http/operation-types';
import { createOperationsRepository } from '../data/operations-repository';
import { createSearchIndexRepository } from '../data/search-index-repository';
import { NetworkHealthMonitor } from '../domain/operations/network-health-monitor';
import { evaluateNetwork } from '../domain/operations/network-health';
import type { Check } from '../domain/operations/health';
import { histogramDelta, histogramQuantile, sumHistogram, type HistogramSnapshot } from '../domain/operations/quantile';
import { createConformanceRunner, type FacilitatorPort } from '../domain/conformance/runner';
import type { ProbeFetch } from '../domain/conformance/probe-402';
import type { ConformanceRun } from '../domain/conformance/types';
import { bindAvailability, probeRpc } from '../ledger/rpc-health';
import { createSafeFetcher } from '../net';
import { networkHealthWorker } from '../jobs/network-health-worker';
import { conformanceRunnerWorker, CONFORMANCE_RUNNER_WORKER } from '../jobs/conformance-runner-worker';
import { operationsDataHandlers } from '../http/handlers/operations-data';
import { DomainError } from '../domain/errors';

export type OperationsOperation = 'getStats' | 'listConformanceRuns' | 'createConformanceRun' | 'getConformanceRun' | 'getOperationsDashboard';

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
  /** The service health (for the dashboard's API status); compose binds it. */
  health?: () => Promise<{ status: 'ok' | 'degraded' | 'down'; uptimeSeconds: number }>;
}

interface Sample {
  t: number;
  requestRate: number;
  errorRate: number;
  p50Ms: number | null;
  p95Ms: number | null;
  settleP50Ms: number | null;
  queueDepth: number;
  deadLetters: number;
  indexLagSeconds: number;
  rpcLatencyMs: Record<string, number | null>;
}

const HOUR_MS = 3_600_000;
const round = (v: number | null) => (v === null ? null : Math.round(v * 100) / 100);

export interface OperationsArea extends Area<OperationsOperation> {
  monitor: NetworkHealthMonitor;
  ledgerChecks(): Promise<Record<string, Check>>;
  /** Adds the per-resource conformance state to GET /v1/resources/{id}. */
  decorateResourceRead(getResource: Handlers['getResource']): Handlers['getResource'];
  /** Takes one dashboard sample now (the timer does it every interval). */
  sample(): Promise<void>;
  runner: ReturnType<typeof createConformanceRunner>;
}

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

  const fetcher: ProbeFetch = opts.probeFetch ?? createSafeFetcher({ readBodyOfStatuses: [402], timeoutMs: 5000 });
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
      if (!n?.local || !n.rpcUrl) return null;
      const base = n.rpcUrl.replace(/\/rpc\/?$/, '');
      const ok = async (res: Response, what: string) => {
        if (!res.ok) throw new Error(`${what} answered ${res.status}`);
      };
      return {
        fund: async (address) => ok(await fetch(`${base}/friendbot?addr=${encodeURIComponent(address)}`), 'friendbot'),
        faucet: async (address, asset, amount) =>
          ok(await fetch(`${base}/faucet`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ address, asset, amount }) }), 'faucet'),
      };
    },
    settleResource: (network, asset, amount) => repo.ensureConformanceResource(network, asset, amount),
    fetch: fetcher,
    perHostIntervalMs: opts.perHostIntervalMs,
    finished(run: ConformanceRun) {
      m.operations.conformanceRuns.inc({ network: run.network, status: run.status });
      m.operations.conformanceLastPassed.set({ network: run.network }, run.status === 'passed' ? 1 : 0);
      m.operations.conformanceLastRun.set({ network: run.network }, (run.finishedAt ?? new Date()).getTime() / 1000);
      for (const c of run.checks.filter((x) => x.name === 'probe_402')) m.operations.resourceProbes.inc({ network: run.network, outcome: c.outcome === 'passed' ? 'passed' : 'failed' });
      // Measured uptime feeds ranking now, not at the next search-sync pass.
      for (const c of run.checks) if (c.resourceId) void index.refreshSignals(c.resourceId).catch(() => undefined);
      if (run.status === 'failed') ctx.logger.warn('conformance run failed', { runId: run.id, network: run.network, failed: run.checks.filter((x) => x.outcome === 'failed').map((x) => x.name) });
    },
  });

  // Rolling one-hour series, in this process's memory (see OperationsDashboard in the spec).
  const samples: Sample[] = [];
  const intervalMs = opts.sampleIntervalMs ?? 10_000;
  let prev: { api: HistogramSnapshot; settle: HistogramSnapshot; requests: number; errors: number; t: number } | null = null;
  const hourAgo: Array<{ t: number; api: HistogramSnapshot; settle: HistogramSnapshot }> = [];
  let timer: NodeJS.Timeout | null = null;

  async function counters() {
    const api = sumHistogram((await m.httpLatency.get()).values, 'api_request_duration_seconds');
    const settle = sumHistogram((await m.facilitator.settleLatency.get()).values, 'facilitator_settle_duration_seconds');
    let requests = 0;
    let errors = 0;
    for (const v of (await m.httpRequests.get()).values) {
      requests += v.value;
      if (Number(v.labels.status) >= 500) errors += v.value;
    }
    return { api, settle, requests, errors, t: Date.now() };
  }

  async function sample(): Promise<void> {
    const now = await counters();
    const dl = await repo.deadLetters();
    const queue = (await m.jobs.queueDepth.get()).values.reduce((s, v) => s + v.value, 0);
    const lag = (await index.counts()).lagSeconds;
    const dt = prev ? Math.max(0.001, (now.t - prev.t) / 1000) : 1;
    const dReq = prev ? now.requests - prev.requests : 0;
    const dErr = prev ? now.errors - prev.errors : 0;
    const apiWindow = histogramDelta(prev?.api ?? null, now.api);
    const settleWindow = histogramDelta(prev?.settle ?? null, now.settle);
    const rpcLatencyMs: Record<string, number | null> = {};
    for (const n of rpcNetworks()) {
      const r = monitor.record(n.network);
      rpcLatencyMs[n.network] = r && r.rpcUp ? round(r.latencyMs) : null;
    }
    samples.push({
      t: Math.round(now.t / 1000),
      requestRate: round(dReq / dt) ?? 0,
      errorRate: dReq > 0 ? Math.min(1, dErr / dReq) : 0,
      p50Ms: round(msOf(histogramQuantile(0.5, apiWindow))),
      p95Ms: round(msOf(histogramQuantile(0.95, apiWindow))),
      settleP50Ms: round(msOf(histogramQuantile(0.5, settleWindow))),
      queueDepth: queue,
      deadLetters: Object.values(dl).reduce((s, v) => s + v, 0),
      indexLagSeconds: round(lag) ?? 0,
      rpcLatencyMs,
    });
    while (samples.length > 0 && samples[0].t * 1000 < now.t - HOUR_MS) samples.shift();
    hourAgo.push({ t: now.t, api: now.api, settle: now.settle });
    while (hourAgo.length > 1 && hourAgo[1].t < now.t - HOUR_MS) hourAgo.shift();
    prev = now;
  }

  /** Latency quantiles over the last hour (or since start, when younger). */
  async function hourQuantiles() {
    const now = await counters();
    const base = hourAgo.find((h) => h.t >= now.t - HOUR_MS) ?? null;
    const api = histogramDelta(base?.api ?? null, now.api);
    const settle = histogramDelta(base?.settle ?? null, now.settle);
    return {
      requests: api.count,
      p50Ms: round(msOf(histogramQuantile(0.5, api))),
      p95Ms: round(msOf(histogramQuantile(0.95, api))),
      settleP50Ms: round(msOf(histogramQuantile(0.5, settle))),
      settleP95Ms: round(msOf(histogramQuantile(0.95, settle))),
    };
  }

  const handlers = operationsDataHandlers({
    networks: ctx.networks,
    runner,
    store: repo,
    enqueueRuns: (runIds) => ctx.jobs.enqueue(CONFORMANCE_RUNNER_WORKER, { runIds }),
    health: opts.health,
    stats: async () => {
      const q = await hourQuantiles();
      const counts = await index.counts();
      const networks = [];
      for (const n of ctx.networks.list()) {
        const s = await repo.settlementStats(n.network);
        networks.push({ network: n.network, evidence: ctx.networks.networkEvidence(n.network), successfulSettlements: s.settled, latestTransactionHashes: s.latestHashes });
      }
      const latest = (await repo.latestRuns()).sort((a, b) => (a.id < b.id ? 1 : -1))[0] ?? null;
      return { api: { requests: q.requests, p50Ms: q.p50Ms, p95Ms: q.p95Ms }, catalog: { indexedResources: counts.resources, activeSellers: counts.activeSellers }, networks, latest };
    },
    dashboard: async () => {
      const q = await hourQuantiles();
      const checks = await monitor.checks();
      const records = new Map((await repo.allNetworkHealth()).map((r) => [r.network, r]));
      const dl = await repo.deadLetters();
      const value = async (g: { get(): Promise<{ values: Array<{ value: number; labels: Record<string, string | number> }> }> }, worker: string) =>
        (await g.get()).values.find((v) => v.labels.worker === worker)?.value ?? 0;
      const workerNames = (await m.jobs.queueDepth.get()).values.map((v) => String(v.labels.worker)).sort();
      const workers = [];
      for (const w of workerNames) {
        const last = await value(m.jobs.lastSuccess, w);
        workers.push({
          worker: w,
          queueDepth: await value(m.jobs.queueDepth, w),
          active: await value(m.jobs.active, w),
          completed: await value(m.jobs.completed, w),
          failed: await value(m.jobs.failed, w),
          retries: await value(m.jobs.retries, w),
          deadLetters: dl[w] ?? 0,
          lastSuccessAt: last > 0 ? new Date(last * 1000).toISOString() : null,
        });
      }
      let settled = 0;
      let failed = 0;
      for (const v of (await m.facilitator.settleOutcomes.get()).values) {
        if (v.labels.outcome === 'success') settled += v.value;
        else failed += v.value;
      }
      const counts = await index.counts();
      let partial = 0;
      for (const v of (await m.discovery.partialResults.get()).values) partial += v.value;
      const last = samples[samples.length - 1];
      const now = new Date();
      return {
        samples,
        intervalSeconds: intervalMs / 1000,
        api: { requestRate: last?.requestRate ?? 0, errorRate: last?.errorRate ?? 0, p50Ms: q.p50Ms, p95Ms: q.p95Ms },
        workers,
        settlement: { p50Ms: q.settleP50Ms, p95Ms: q.settleP95Ms, settled, failed },
        networks: ctx.networks.list().map((n) => {
          const c = n.rpcUrl ? (checks[n.network] ?? evaluateNetwork(records.get(n.network) ?? null, rules, now)) : null;
          return {
            network: n.network,
            evidence: ctx.networks.networkEvidence(n.network),
            settlementEnabled: n.settlementEnabled,
            rpcConfigured: c !== null,
            status: c ? c.status : ('down' as const),
            reason: c ? (c.reason ?? null) : null,
            latencyMs: c?.latencyMs ?? null,
            latestLedger: c?.latestLedger ?? null,
            ledgerAgeSeconds: c?.ledgerAgeSeconds === undefined ? null : round(c.ledgerAgeSeconds),
            horizon: null,
          };
        }),
        searchIndex: { indexedResources: counts.resources, lagSeconds: round(counts.lagSeconds) ?? 0, fresh: counts.lagSeconds < 300, partialResults: partial },
        conformance: await repo.latestRuns(),
      };
    },
  });

  return {
    monitor,
    runner,
    handlers,
    workers: [
      networkHealthWorker({ monitor, every: opts.networkHealthEvery }),
      conformanceRunnerWorker({ runner, store: repo, every: opts.conformanceEvery, runAtStart: opts.conformanceAtStart }),
    ],
    ledgerChecks: () => monitor.checks(),
    decorateResourceRead(getResource) {
      return async (c) => {
        const out = await getResource(c);
        if (out.status === 200) {
          const rc = await repo.resourceConformance(c.params.id);
          (out.body as Record<string, unknown>).conformance = { ...rc, checkedAt: rc.checkedAt ? rc.checkedAt.toISOString() : null, uptime: rc.uptime === null ? null : Math.round(rc.uptime * 1000) / 1000 };
        }
        return out;
      };
    },
    sample,
    async start() {
      m.operations.initNetworks(ctx.networks.list());
      // Facilitator series the alert rules divide by exist at zero per network from the start.
      for (const n of ctx.networks.list()) {
        const network = n.network;
        const f = m.facilitator;
        for (const outcome of ['success', 'failure']) {
          f.verifyOutcomes.inc({ network, outcome }, 0);
          f.settleOutcomes.inc({ network, outcome }, 0);
        }
        for (const operation of ['verify', 'settle']) {
          f.replayDetected.inc({ network, operation }, 0);
          f.authExpired.inc({ network, operation }, 0);
        }
        for (const c of [f.amountMismatch, f.assetMismatch, f.recipientMismatch, f.trustlineFailures]) c.inc({ network }, 0);
      }
      for (const n of rpcNetworks()) {
        m.facilitator.rpcUp.set({ network: n.network }, 0);
        m.facilitator.latestLedger.set({ network: n.network }, 0);
        for (const method of ['getHealth', 'getLatestLedger']) {
          m.facilitator.rpcErrors.inc({ network: n.network, method }, 0);
          m.facilitator.rpcRequests.inc({ network: n.network, method }, 0);
        }
        m.operations.ledgerStale.set({ network: n.network }, 0);
      }
      monitor.start();
      await sample().catch(() => undefined);
      timer = setInterval(() => void sample().catch(() => undefined), intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      monitor.stop();
    },
  };
}

function msOf(seconds: number | null): number | null {
  return seconds === null ? null : seconds * 1000;
}
