import type { WorkerDefinition } from './job-system';
import type { NetworkHealthMonitor } from '../domain/operations/network-health-monitor';

export const NETWORK_HEALTH_WORKER = 'network-health-worker';

/**
 * Every 10 seconds (configurable): probes the Soroban RPC of every configured network (getHealth,
 * getLatestLedger, latency, errors), writes the ledger metrics and the network's current health record, which
 * /health, the dashboard and the settle fail-fast read. A probe that finds the RPC down is a result, not a job
 * failure; only a database write that fails fails the job (and is retried).
 */
export function networkHealthWorker(deps: { monitor: NetworkHealthMonitor; every?: string }): WorkerDefinition {
  return {
    name: NETWORK_HEALTH_WORKER,
    every: deps.every ?? '10 seconds',
    concurrency: 1,
    maxRetries: 2,
    async run() {
      await deps.monitor.probeAll();
    },
  };
}
