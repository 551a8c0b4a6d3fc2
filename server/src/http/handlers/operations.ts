import type { Handlers } from '../operation-types';
import type { HandlerServices } from './deps';
import { DomainError } from '../../domain/errors';
import { rpcOrigin, type NetworkRegistry } from '../../domain/network-registry';
import type { Check } from '../../domain/operations/health';
import type { ConformanceRun } from '../../domain/conformance/types';

type OperationHandlers = Pick<
  Handlers,
  | 'getHealth'
  | 'getVersion'
  | 'listNetworks'
  | 'getMetrics'
  | 'getStats'
  | 'listConformanceRuns'
  | 'createConformanceRun'
  | 'getConformanceRun'
  | 'getOperationsDashboard'
  | 'listSellerFees'
>;
type Network = 'stellar:testnet' | 'stellar:pubnet';
type Evidence =
  Parameters<NetworkRegistry['settlementEvidence']> extends [string]
    ? ReturnType<NetworkRegistry['settlementEvidence']> | 'testnet_verification' | 'mainnet_verification'
    : never;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function summary(r: ConformanceRun) {
  return {
    id: r.id,
    network: r.network as Network,
    status: r.status,
    evidence: r.evidence as Evidence,
    startedAt: iso(r.startedAt),
    finishedAt: iso(r.finishedAt),
  };
}

function presentRun(r: ConformanceRun) {
  return {
    ...summary(r),
    trigger: r.trigger,
    createdAt: r.createdAt.toISOString(),
    checks: r.checks.map((c) => ({
      name: c.name,
      outcome: c.outcome,
      reason: c.reason,
      ...(c.resourceId ? { resourceId: c.resourceId } : {}),
      ...(c.durationMs === undefined ? {} : { durationMs: c.durationMs }),
    })),
  };
}

/**
 * The Operations tag: health, version, networks, metrics, public stats (cached 5 s in this process), conformance
 * runs, the dashboard's data and the sellers' network fees.
 */
export function operationHandlers({
  health,
  version,
  networks,
  metrics,
  dashboard,
  conformance,
  facilitator,
}: HandlerServices): OperationHandlers {
  let cached: { at: number; body: Awaited<ReturnType<OperationHandlers['getStats']>>['body'] } | null = null;
  const startedAt = Date.now();
  return {
    async getHealth() {
      const report = await health();
      const present = ({ checkedAt, ...c }: Check) => ({
        ...c,
        ...(checkedAt ? { checkedAt: checkedAt.toISOString() } : {}),
      });
      const checks = {
        database: present(report.checks.database),
        jobs: present(report.checks.jobs),
        ledger: Object.fromEntries(Object.entries(report.checks.ledger).map(([n, c]) => [n, present(c)])),
      };
      const body = {
        ...report,
        checks,
        affectedNetworks: report.affectedNetworks as Array<'stellar:testnet' | 'stellar:pubnet'>,
        time: report.time.toISOString(),
      };
      return report.status === 'down' ? { status: 503, body } : { status: 200, body };
    },
    async getVersion() {
      return { status: 200, body: { ...version, node: process.version } };
    },
    async listNetworks() {
      return {
        status: 200,
        body: {
          items: networks.list().map((n) => ({
            network: n.network,
            passphrase: n.passphrase,
            evidence: networks.networkEvidence(n.network),
            rpcUrl: rpcOrigin(n.rpcUrl),
            settlementEnabled: n.settlementEnabled,
            assets: n.assets,
          })),
          nextCursor: null,
        },
      };
    },
    async getMetrics() {
      return { status: 200, body: await metrics.registry.metrics() };
    },
    async getStats() {
      if (!cached || Date.now() - cached.at > 5000) {
        const s = await dashboard.stats();
        cached = {
          at: Date.now(),
          body: {
            generatedAt: new Date().toISOString(),
            uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
            api: s.api,
            catalog: s.catalog,
            networks: s.networks.map((n) => ({
              ...n,
              network: n.network as Network,
              evidence: n.evidence as Evidence,
            })),
            conformance: { latest: s.latest ? summary(s.latest) : null },
          },
        };
      }
      return { status: 200, body: cached.body, headers: { 'Cache-Control': 'public, max-age=5' } };
    },
    async listConformanceRuns({ query }) {
      const limit = query.limit ?? 20;
      let before: string | undefined;
      if (query.cursor) {
        before = Buffer.from(query.cursor, 'base64url').toString('utf8');
        if (!/^cfr_[0-9A-HJKMNP-TV-Z]{26}$/.test(before))
          throw new DomainError('INVALID_REQUEST', 'cursor is not valid', [
            { field: 'cursor', message: 'not a conformance run cursor' },
          ]);
      }
      const rows = await conformance.store.listRuns(limit + 1, before);
      const page = rows.slice(0, limit);
      return {
        status: 200,
        body: {
          items: page.map(presentRun),
          nextCursor: rows.length > limit ? Buffer.from(page[page.length - 1].id, 'utf8').toString('base64url') : null,
        },
      };
    },
    async createConformanceRun({ body }) {
      const runs = await conformance.runner.queue('manual', body?.network);
      if (runs.length) await conformance.enqueueRuns(runs.map((r) => r.id));
      return { status: 202, body: { items: runs.map(presentRun), nextCursor: null } };
    },
    async getConformanceRun({ params }) {
      const run = await conformance.store.findRun(params.runId);
      if (!run) throw new DomainError('NOT_FOUND', `No conformance run with id ${params.runId}`);
      return { status: 200, body: presentRun(run) };
    },
    async getOperationsDashboard() {
      const d = await dashboard.dashboard();
      const h = await health();
      return {
        status: 200,
        body: {
          generatedAt: new Date().toISOString(),
          sampleIntervalSeconds: d.intervalSeconds,
          api: { status: h.status, uptimeSeconds: h.uptimeSeconds, ...d.api },
          workers: d.workers,
          settlement: d.settlement,
          networks: d.networks.map((n) => ({
            ...n,
            network: n.network as Network,
            evidence: n.evidence as Evidence,
            reason: n.reason as never,
          })),
          searchIndex: d.searchIndex,
          conformance: { latest: d.conformance.map(summary) },
          series: d.samples.map((s) => ({ ...s })),
        },
      };
    },
    async listSellerFees({ query }) {
      const report = await facilitator.sellerFees(query.day);
      return {
        status: 200,
        body: { ...report, items: report.items.map((i) => ({ ...i, network: i.network as Network })) },
      };
    },
  };
}
