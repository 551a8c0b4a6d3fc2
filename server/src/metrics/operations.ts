import client from 'prom-client';

/**
 * Operations metrics (network health, conformance runs, settlement switches), on the one registry. Every series
 * carries `network` where it applies (and `environment`, the registry's default label). Series are created at zero
 * for every configured network at start (`initNetworks`), so rates and alerts have something to read before the
 * first event.
 */
export interface OperationsMetrics {
  ledgerAge: client.Gauge<'network'>;
  ledgerStale: client.Gauge<'network'>;
  horizonUp: client.Gauge<'network'>;
  settlementEnabled: client.Gauge<'network'>;
  conformanceRuns: client.Counter<'network' | 'status'>;
  conformanceLastPassed: client.Gauge<'network'>;
  conformanceLastRun: client.Gauge<'network'>;
  resourceProbes: client.Counter<'network' | 'outcome'>;
  contractErrors: client.Counter<'network' | 'code'>;
  initNetworks(networks: Array<{ network: string; settlementEnabled: boolean; rpcUrl?: string | null }>): void;
}

export function defineOperationsMetrics(registry: client.Registry): OperationsMetrics {
  const registers = [registry];
  const gauge = <L extends string>(name: string, help: string, labelNames: L[]) =>
    new client.Gauge<L>({ name, help, labelNames, registers });
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
    new client.Counter<L>({ name, help, labelNames, registers });
  const m = {
    ledgerAge: gauge(
      'ledger_latest_ledger_age_seconds',
      'Seconds since the observed ledger sequence last advanced (at the last network-health probe)',
      ['network'],
    ),
    ledgerStale: gauge('ledger_stale', '1 when the ledger has not advanced for three close intervals, else 0', [
      'network',
    ]),
    horizonUp: gauge(
      'ledger_horizon_up',
      '1 when the configured Horizon answers, else 0 (only networks with a Horizon server; none is configured today)',
      ['network'],
    ),
    settlementEnabled: gauge(
      'facilitator_settlement_enabled',
      '1 when settle submits transactions on the network, else 0',
      ['network'],
    ),
    conformanceRuns: counter('conformance_runs_total', 'Finished conformance runs by status (passed, failed)', [
      'network',
      'status',
    ]),
    conformanceLastPassed: gauge(
      'conformance_last_run_passed',
      '1 when the latest conformance run of the network passed, 0 when it failed',
      ['network'],
    ),
    conformanceLastRun: gauge(
      'conformance_last_run_timestamp_seconds',
      'Unix time the latest conformance run of the network finished',
      ['network'],
    ),
    resourceProbes: counter(
      'conformance_resource_probes_total',
      'Probes of cataloged http resources (unpaid request must answer 402 with the cataloged terms), by outcome',
      ['network', 'outcome'],
    ),
    contractErrors: counter(
      'contract_errors_total',
      'Errors of the upto session contract by code (the upto scheme is disabled: stays absent until it is integrated)',
      ['network', 'code'],
    ),
    initNetworks(networks: Array<{ network: string; settlementEnabled: boolean; rpcUrl?: string | null }>) {
      for (const n of networks) {
        m.settlementEnabled.set({ network: n.network }, n.settlementEnabled ? 1 : 0);
        if (n.rpcUrl) m.ledgerStale.set({ network: n.network }, 0);
        for (const status of ['passed', 'failed']) m.conformanceRuns.inc({ network: n.network, status }, 0);
        for (const outcome of ['passed', 'failed']) m.resourceProbes.inc({ network: n.network, outcome }, 0);
      }
    },
  };
  return m;
}
