import type { Handlers } from '../operation-types';
import type { HandlerDeps } from './deps';
import { DomainError } from '../../domain/errors';
import { rpcOrigin } from '../../ledger/rpc-health';
import type { Check } from '../../domain/operations/health';

type OperationHandlers = Pick<Handlers, 'getHealth' | 'getVersion' | 'listNetworks' | 'getMetrics'>;

export function operationHandlers({ health, version, networks, metrics }: HandlerDeps): OperationHandlers {
  return {
    async getHealth() {
      const report = await health();
      const present = ({ checkedAt, ...c }: Check) => ({ ...c, ...(checkedAt ? { checkedAt: checkedAt.toISOString() } : {}) });
      const checks = {
        database: present(report.checks.database),
        jobs: present(report.checks.jobs),
        ledger: Object.fromEntries(Object.entries(report.checks.ledger).map(([n, c]) => [n, present(c)])),
      };
      const body = { ...report, checks, affectedNetworks: report.affectedNetworks as Array<'stellar:testnet' | 'stellar:pubnet'>, time: report.time.toISOString() };
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
    async getMetrics({ principal }) {
      if (principal.role !== 'operator') throw new DomainError('FORBIDDEN', 'Metrics are for the operator key only');
      return { status: 200, body: await metrics.registry.metrics() };
    },
  };
}
