import type { components } from '../../generated/openapi';
import type { NetworkRegistry } from '../network-registry';
import type { ConformanceRun } from '../conformance/types';
import type { Check } from './health';
import { evaluateNetwork, type NetworkHealthRecord, type NetworkHealthRules } from './network-health';
import { histogramDelta, histogramQuantile, sumHistogram, type HistogramSnapshot } from './quantile';

/** One value of a metric series, as a metrics registry reports it (prom-client `get().values`). */
export interface MetricValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}
type Read = () => Promise<MetricValue[]>;

/** The process's own metrics the dashboard reads (its port onto the metrics registry). */
export interface OperationsReadings {
  apiLatency: Read;
  settleLatency: Read;
  httpRequests: Read;
  settleOutcomes: Read;
  partialResults: Read;
  jobs: Record<'queueDepth' | 'active' | 'completed' | 'failed' | 'retries' | 'lastSuccess', Read>;
}

/** What the dashboard reads from the database. */
export interface OperationsStore {
  allNetworkHealth(): Promise<NetworkHealthRecord[]>;
  settlementStats(network: string): Promise<{ settled: number; latestHashes: string[] }>;
  deadLetters(): Promise<Record<string, number>>;
  latestRuns(): Promise<ConformanceRun[]>;
}

export interface OperationsDashboardDeps {
  readings: OperationsReadings;
  store: OperationsStore;
  networks: NetworkRegistry;
  /** The search index's counts (indexed resources, active sellers, lag). */
  indexCounts(): Promise<{ resources: number; activeSellers: number; lagSeconds: number }>;
  /** The network-health monitor's view: the last record of a network, and the current checks. */
  monitor: {
    record(network: string): Pick<NetworkHealthRecord, 'rpcUp' | 'latencyMs'> | null;
    checks(): Promise<Record<string, Check>>;
  };
  rules: NetworkHealthRules;
  /** Sample interval (ms). Default 10 000 (one hour = 360 samples). */
  intervalMs?: number;
}

/** One sample of the rolling hour (the contract's OperationsDashboard `series` item). */
export type Sample = components['schemas']['OperationsDashboard']['series'][number];

const HOUR_MS = 3_600_000;
const round = (v: number | null) => (v === null ? null : Math.round(v * 100) / 100);
const msOf = (seconds: number | null) => (seconds === null ? null : seconds * 1000);
const total = (values: MetricValue[]) => values.reduce((s, v) => s + v.value, 0);

export type OperationsDashboard = ReturnType<typeof createOperationsDashboard>;

/**
 * The operator dashboard's data and /v1/stats: a rolling one-hour series sampled from this process's metrics every
 * interval (in memory; see OperationsDashboard in the spec), and hour quantiles the way Prometheus computes them.
 */
export function createOperationsDashboard(deps: OperationsDashboardDeps) {
  const { readings: r, store } = deps;
  const intervalMs = deps.intervalMs ?? 10_000;
  const samples: Sample[] = [];
  const hourAgo: Array<{ t: number; api: HistogramSnapshot; settle: HistogramSnapshot }> = [];
  let prev: Awaited<ReturnType<typeof counters>> | null = null;
  let timer: NodeJS.Timeout | null = null;
  const rpcNetworks = () => deps.networks.list().filter((n) => n.rpcUrl);

  async function counters() {
    const api = sumHistogram(await r.apiLatency(), 'api_request_duration_seconds');
    const settle = sumHistogram(await r.settleLatency(), 'facilitator_settle_duration_seconds');
    let requests = 0;
    let errors = 0;
    for (const v of await r.httpRequests()) {
      requests += v.value;
      if (Number(v.labels.status) >= 500) errors += v.value;
    }
    return { api, settle, requests, errors, t: Date.now() };
  }

  async function sample(): Promise<void> {
    const now = await counters();
    const dt = prev ? Math.max(0.001, (now.t - prev.t) / 1000) : 1;
    const dReq = prev ? now.requests - prev.requests : 0;
    const dErr = prev ? now.errors - prev.errors : 0;
    const apiWindow = histogramDelta(prev?.api ?? null, now.api);
    const rpcLatencyMs: Record<string, number | null> = {};
    for (const n of rpcNetworks()) {
      const rec = deps.monitor.record(n.network);
      rpcLatencyMs[n.network] = rec && rec.rpcUp ? round(rec.latencyMs) : null;
    }
    samples.push({
      t: Math.round(now.t / 1000),
      requestRate: round(dReq / dt) ?? 0,
      errorRate: dReq > 0 ? Math.min(1, dErr / dReq) : 0,
      p50Ms: round(msOf(histogramQuantile(0.5, apiWindow))),
      p95Ms: round(msOf(histogramQuantile(0.95, apiWindow))),
      settleP50Ms: round(msOf(histogramQuantile(0.5, histogramDelta(prev?.settle ?? null, now.settle)))),
      queueDepth: total(await r.jobs.queueDepth()),
      deadLetters: Object.values(await store.deadLetters()).reduce((s, v) => s + v, 0),
      indexLagSeconds: round((await deps.indexCounts()).lagSeconds) ?? 0,
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

  async function workers() {
    const dl = await store.deadLetters();
    const value = async (read: Read, worker: string) =>
      (await read()).find((v) => v.labels.worker === worker)?.value ?? 0;
    const names = (await r.jobs.queueDepth()).map((v) => String(v.labels.worker)).sort();
    const out = [];
    for (const w of names) {
      const last = await value(r.jobs.lastSuccess, w);
      out.push({
        worker: w,
        queueDepth: await value(r.jobs.queueDepth, w),
        active: await value(r.jobs.active, w),
        completed: await value(r.jobs.completed, w),
        failed: await value(r.jobs.failed, w),
        retries: await value(r.jobs.retries, w),
        deadLetters: dl[w] ?? 0,
        lastSuccessAt: last > 0 ? new Date(last * 1000).toISOString() : null,
      });
    }
    return out;
  }

  async function networksView() {
    const checks = await deps.monitor.checks();
    const records = new Map((await store.allNetworkHealth()).map((rec) => [rec.network, rec]));
    const now = new Date();
    return deps.networks.list().map((n) => {
      const c = n.rpcUrl
        ? (checks[n.network] ?? evaluateNetwork(records.get(n.network) ?? null, deps.rules, now))
        : null;
      return {
        network: n.network,
        evidence: deps.networks.networkEvidence(n.network),
        settlementEnabled: n.settlementEnabled,
        rpcConfigured: c !== null,
        status: c ? c.status : ('down' as const),
        reason: c ? (c.reason ?? null) : null,
        latencyMs: c?.latencyMs ?? null,
        latestLedger: c?.latestLedger ?? null,
        ledgerAgeSeconds: c?.ledgerAgeSeconds === undefined ? null : round(c.ledgerAgeSeconds),
        horizon: null,
      };
    });
  }

  return {
    sample,
    /** /v1/stats: the hour's API figures, the catalog's size, settlements per network and the latest conformance run.
     * */
    async stats() {
      const q = await hourQuantiles();
      const counts = await deps.indexCounts();
      const networks = [];
      for (const n of deps.networks.list()) {
        const s = await store.settlementStats(n.network);
        networks.push({
          network: n.network,
          evidence: deps.networks.networkEvidence(n.network),
          successfulSettlements: s.settled,
          latestTransactionHashes: s.latestHashes,
        });
      }
      const latest = (await store.latestRuns()).sort((a, b) => (a.id < b.id ? 1 : -1))[0] ?? null;
      return {
        api: { requests: q.requests, p50Ms: q.p50Ms, p95Ms: q.p95Ms },
        catalog: { indexedResources: counts.resources, activeSellers: counts.activeSellers },
        networks,
        latest,
      };
    },
    /** The operator dashboard's data (GET /v1/operations/dashboard). */
    async dashboard() {
      const q = await hourQuantiles();
      let settled = 0;
      let failed = 0;
      for (const v of await r.settleOutcomes()) {
        if (v.labels.outcome === 'success') settled += v.value;
        else failed += v.value;
      }
      const counts = await deps.indexCounts();
      const last = samples[samples.length - 1];
      return {
        samples,
        intervalSeconds: intervalMs / 1000,
        api: { requestRate: last?.requestRate ?? 0, errorRate: last?.errorRate ?? 0, p50Ms: q.p50Ms, p95Ms: q.p95Ms },
        workers: await workers(),
        settlement: { p50Ms: q.settleP50Ms, p95Ms: q.settleP95Ms, settled, failed },
        networks: await networksView(),
        searchIndex: {
          indexedResources: counts.resources,
          lagSeconds: round(counts.lagSeconds) ?? 0,
          fresh: counts.lagSeconds < 300,
          partialResults: total(await r.partialResults()),
        },
        conformance: await store.latestRuns(),
      };
    },
    /** Samples now, then every interval (the timer does not keep the process alive). */
    async start() {
      await sample().catch(() => undefined);
      timer = setInterval(() => void sample().catch(() => undefined), intervalMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}
