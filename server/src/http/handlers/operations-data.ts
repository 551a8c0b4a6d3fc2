import type { Handlers } from '../operation-types';
import type { NetworkRegistry } from '../../domain/network-registry';
import type { ConformanceRunner } from '../../domain/conformance/runner';
import type { ConformanceRun, ConformanceRunStore } from '../../domain/conformance/types';
import type { Principal } from '../../domain/auth/principal';
import { DomainError } from '../../domain/errors';

type Ops = Pick<Handlers, 'getStats' | 'listConformanceRuns' | 'createConformanceRun' | 'getConformanceRun' | 'getOperationsDashboard'>;
type Network = 'stellar:testnet' | 'stellar:pubnet';
type Evidence = Parameters<NetworkRegistry['settlementEvidence']> extends [string] ? ReturnType<NetworkRegistry['settlementEvidence']> | 'testnet_verification' | 'mainnet_verification' : never;

export interface OperationsDataDeps {
  networks: NetworkRegistry;
  runner: ConformanceRunner;
  store: ConformanceRunStore;
  enqueueRuns(runIds: string[]): Promise<void>;
  stats(): Promise<{
    api: { requests: number; p50Ms: number | null; p95Ms: number | null };
    catalog: { indexedResources: number; activeSellers: number };
    networks: Array<{ network: string; evidence: string; successfulSettlements: number; latestTransactionHashes: string[] }>;
    latest: ConformanceRun | null;
  }>;
  dashboard(): Promise<{
    samples: Array<{ t: number; requestRate: number; errorRate: number; p50Ms: number | null; p95Ms: number | null; settleP50Ms: number | null; queueDepth: number; deadLetters: number; indexLagSeconds: number; rpcLatencyMs: Record<string, number | null> }>;
    intervalSeconds: number;
    api: { requestRate: number; errorRate: number; p50Ms: number | null; p95Ms: number | null };
    workers: Array<{ worker: string; queueDepth: number; active: number; completed: number; failed: number; retries: number; deadLetters: number; lastSuccessAt: string | null }>;
    settlement: { p50Ms: number | null; p95Ms: number | null; settled: number; failed: number };
    networks: Array<{ network: string; evidence: string; settlementEnabled: boolean; rpcConfigured: boolean; status: 'ok' | 'degraded' | 'down'; reason: string | null; latencyMs: number | null; latestLedger: number | null; ledgerAgeSeconds: number | null; horizon: null }>;
    searchIndex: { indexedResources: number; lagSeconds: number; fresh: boolean; partialResults: number };
    conformance: ConformanceRun[];
  }>;
  /** Health status for the dashboard's API panel. */
  health?(): Promise<{ status: 'ok' | 'degraded' | 'down'; uptimeSeconds: number }>;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function summary(r: ConformanceRun) {
  return { id: r.id, network: r.network as Network, status: r.status, evidence: r.evidence as Evidence, startedAt: iso(r.startedAt), finishedAt: iso(r.finishedAt) };
}

export function presentRun(r: ConformanceRun) {
  return {
    ...summary(r),
    trigger: r.trigger,
    createdAt: r.createdAt.toISOString(),
    checks: r.checks.map((c) => ({ name: c.name, outcome: c.outcome, reason: c.reason, ...(c.resourceId ? { resourceId: c.resourceId } : {}), ...(c.durationMs === undefined ? {} : { durationMs: c.durationMs }) })),
  };
}

function operatorOnly(principal: Principal): void {
  if (principal.role === 'public') throw new DomainError('UNAUTHORIZED', 'The operator key is required');
  if (principal.role !== 'operator') throw new DomainError('FORBIDDEN', 'This operation is for the operator key only');
}

/** Public stats, conformance runs and the dashboard data. Stats are cached for 5 seconds in this process. */
export function operationsDataHandlers(deps: OperationsDataDeps): Ops {
  let cached: { at: number; body: Awaited<ReturnType<Ops['getStats']>>['body'] } | null = null;
  const startedAt = Date.now();
  return {
    async getStats() {
      if (!cached || Date.now() - cached.at > 5000) {
        const s = await deps.stats();
        cached = {
          at: Date.now(),
          body: {
            generatedAt: new Date().toISOString(),
            uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
            api: s.api,
            catalog: s.catalog,
            networks: s.networks.map((n) => ({ ...n, network: n.network as Network, evidence: n.evidence as Evidence })),
            conformance: { latest: s.latest ? summary(s.latest) : null },
          },
        };
      }
      return { status: 200, body: cached.body, headers: { 'Cache-Control': 'public, max-age=5' } };
    },
    async listConformanceRuns({ principal, query }) {
      operatorOnly(principal);
      const limit = query.limit ?? 20;
      let before: string | undefined;
      if (query.cursor) {
        before = Buffer.from(query.cursor, 'base64url').toString('utf8');
        if (!/^cfr_[0-9A-HJKMNP-TV-Z]{26}$/.test(before)) throw new DomainError('INVALID_REQUEST', 'cursor is not valid', [{ field: 'cursor', message: 'not a conformance run cursor' }]);
      }
      const rows = await deps.store.listRuns(limit + 1, before);
      const page = rows.slice(0, limit);
      return { status: 200, body: { items: page.map(presentRun), nextCursor: rows.length > limit ? Buffer.from(page[page.length - 1].id, 'utf8').toString('base64url') : null } };
    },
    async createConformanceRun({ principal, body }) {
      operatorOnly(principal);
      const runs = await deps.runner.queue('manual', body?.network);
      if (runs.length) await deps.enqueueRuns(runs.map((r) => r.id));
      return { status: 202, body: { items: runs.map(presentRun), nextCursor: null } };
    },
    async getConformanceRun({ principal, params }) {
      operatorOnly(principal);
      const run = await deps.store.findRun(params.runId);
      if (!run) throw new DomainError('NOT_FOUND', `No conformance run with id ${params.runId}`);
      return { status: 200, body: presentRun(run) };
    },
    async getOperationsDashboard({ principal }) {
      operatorOnly(principal);
      const d = await deps.dashboard();
      const h = deps.health ? await deps.health() : { status: 'ok' as const, uptimeSeconds: Math.round((Date.now() - startedAt) / 1000) };
      return {
        status: 200,
        body: {
          generatedAt: new Date().toISOString(),
          sampleIntervalSeconds: d.intervalSeconds,
          api: { status: h.status, uptimeSeconds: h.uptimeSeconds, ...d.api },
          workers: d.workers,
          settlement: d.settlement,
          networks: d.networks.map((n) => ({ ...n, network: n.network as Network, evidence: n.evidence as Evidence, reason: n.reason as never })),
          searchIndex: d.searchIndex,
          conformance: { latest: d.conformance.map(summary) },
          series: d.samples.map((s) => ({ ...s })),
        },
      };
    },
  };
}
