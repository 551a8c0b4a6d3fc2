import type { Metrics } from './registry';

/** What one network-health probe measured (domain/operations/network-health-monitor.ts) and what it concluded. */
interface ProbeFigures {
  up: boolean;
  errors: number;
  latencyMs: number;
  latestLedger: number | null;
}
interface ProbeCheck {
  ledgerAgeSeconds?: number;
  reason?: string;
}

/** Records a network-health probe: RPC requests, errors, latency, up, latest ledger, ledger age and staleness. */
export function observeNetworkProbe(m: Metrics, network: string, probe: ProbeFigures, check: ProbeCheck): void {
  const f = m.facilitator;
  for (const method of ['getHealth', 'getLatestLedger']) f.rpcRequests.inc({ network, method });
  if (probe.errors > 0) f.rpcErrors.inc({ network, method: 'getHealth' }, probe.errors);
  f.rpcLatency.observe({ network, method: 'getHealth' }, probe.latencyMs / 1000);
  f.rpcUp.set({ network }, probe.up ? 1 : 0);
  if (probe.latestLedger !== null) f.latestLedger.set({ network }, probe.latestLedger);
  if (check.ledgerAgeSeconds !== undefined) m.operations.ledgerAge.set({ network }, check.ledgerAgeSeconds);
  m.operations.ledgerStale.set({ network }, check.reason === 'LEDGER_STALE' ? 1 : 0);
}

/** What a finished conformance run reports (domain/conformance/types.ts ConformanceRun). */
interface RunFigures {
  network: string;
  status: string;
  finishedAt: Date | null;
  checks: Array<{ name: string; outcome: string }>;
}

/** Records a finished conformance run: runs by status, last passed, last run time, resource probes by outcome. */
export function observeConformanceRun(m: Metrics, run: RunFigures): void {
  const o = m.operations;
  o.conformanceRuns.inc({ network: run.network, status: run.status });
  o.conformanceLastPassed.set({ network: run.network }, run.status === 'passed' ? 1 : 0);
  o.conformanceLastRun.set({ network: run.network }, (run.finishedAt ?? new Date()).getTime() / 1000);
  for (const c of run.checks.filter((x) => x.name === 'probe_402'))
    o.resourceProbes.inc({ network: run.network, outcome: c.outcome === 'passed' ? 'passed' : 'failed' });
}

type Values = Array<{ value: number; labels: Record<string, string | number>; metricName?: string }>;
type Read = () => Promise<Values>;

/** The series the operator dashboard reads (domain/operations/dashboard.ts OperationsReadings), read from this
 * registry. */
export function metricReadings(m: Metrics): {
  apiLatency: Read;
  settleLatency: Read;
  httpRequests: Read;
  settleOutcomes: Read;
  partialResults: Read;
  jobs: Record<'queueDepth' | 'active' | 'completed' | 'failed' | 'retries' | 'lastSuccess', Read>;
} {
  const read =
    (metric: { get(): Promise<{ values: Values }> }): Read =>
    async () =>
      (await metric.get()).values;
  const j = m.jobs;
  return {
    apiLatency: read(m.httpLatency),
    settleLatency: read(m.facilitator.settleLatency),
    httpRequests: read(m.httpRequests),
    settleOutcomes: read(m.facilitator.settleOutcomes),
    partialResults: read(m.discovery.partialResults),
    jobs: {
      queueDepth: read(j.queueDepth),
      active: read(j.active),
      completed: read(j.completed),
      failed: read(j.failed),
      retries: read(j.retries),
      lastSuccess: read(j.lastSuccess),
    },
  };
}
