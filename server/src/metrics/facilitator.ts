import client from 'prom-client';

/**
 * Facilitator and ledger metrics. Every series carries `network` (and `environment`, the registry's default
 * label), so testnet and mainnet figures never mix. Success rate = outcome="success" / all outcomes.
 */
export interface FacilitatorMetrics {
  requests: client.Counter<'network' | 'operation'>;
  verifyOutcomes: client.Counter<'network' | 'outcome'>;
  settleOutcomes: client.Counter<'network' | 'outcome'>;
  failures: client.Counter<'network' | 'operation' | 'code'>;
  replayDetected: client.Counter<'network' | 'operation'>;
  authExpired: client.Counter<'network' | 'operation'>;
  amountMismatch: client.Counter<'network'>;
  assetMismatch: client.Counter<'network'>;
  recipientMismatch: client.Counter<'network'>;
  trustlineFailures: client.Counter<'network'>;
  verifyLatency: client.Histogram<'network' | 'outcome'>;
  settleLatency: client.Histogram<'network' | 'outcome'>;
  rpcRequests: client.Counter<'network' | 'method'>;
  rpcErrors: client.Counter<'network' | 'method'>;
  rpcLatency: client.Histogram<'network' | 'method'>;
  rpcUp: client.Gauge<'network'>;
  latestLedger: client.Gauge<'network'>;
  submissionFailures: client.Counter<'network' | 'reason'>;
  /** Network fees the ledger charged for settlements (stroops); per seller: GET /v1/operations/seller-fees. */
  feesCharged: client.Counter<'network'>;
  feeBudgetRefusals: client.Counter<'network' | 'scope'>;
  sponsoredToday: client.Gauge<'network'>;
  sponsoredCap: client.Gauge<'network'>;
  confirmationDelay: client.Histogram<'network'>;
  channelsBusy: client.Gauge<'network'>;
  channelsTotal: client.Gauge<'network'>;
  /**
   * Every series the alert rules divide by, at zero per configured network from the start (outcomes, replays,
   * expiries, mismatches), and the RPC series of each network with an RPC URL.
   */
  initNetworks(networks: Array<{ network: string; rpcUrl: string | null }>): void;
}

const LATENCY = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function defineFacilitatorMetrics(registry: client.Registry): FacilitatorMetrics {
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
    new client.Counter<L>({ name, help, labelNames, registers });
  const m: Omit<FacilitatorMetrics, 'initNetworks'> = {
    requests: counter(
      'facilitator_requests_total',
      'Facilitator requests by operation (verify, settle, supported, reads)',
      ['network', 'operation'],
    ),
    verifyOutcomes: counter('facilitator_verify_total', 'Verify outcomes (success rate = success / total)', [
      'network',
      'outcome',
    ]),
    settleOutcomes: counter(
      'facilitator_settle_total',
      'Settle outcomes (success rate = success / total; pending counts as success)',
      ['network', 'outcome'],
    ),
    failures: counter('facilitator_failures_total', 'Facilitator failures by operation and error code', [
      'network',
      'operation',
      'code',
    ]),
    replayDetected: counter('facilitator_replay_detected_total', 'Replayed authorizations rejected', [
      'network',
      'operation',
    ]),
    authExpired: counter('facilitator_auth_expired_total', 'Expired authorizations rejected', ['network', 'operation']),
    amountMismatch: counter(
      'facilitator_amount_mismatch_total',
      'Payments whose amount differed from the requirements',
      ['network'],
    ),
    assetMismatch: counter('facilitator_asset_mismatch_total', 'Payments whose asset differed from the requirements', [
      'network',
    ]),
    recipientMismatch: counter('facilitator_recipient_mismatch_total', 'Payments whose recipient differed from payTo', [
      'network',
    ]),
    trustlineFailures: counter('ledger_trustline_failures_total', 'Payments rejected because a trustline is missing', [
      'network',
    ]),
    verifyLatency: new client.Histogram({
      name: 'facilitator_verify_duration_seconds',
      help: 'Verify latency',
      labelNames: ['network', 'outcome'],
      buckets: LATENCY,
      registers,
    }),
    settleLatency: new client.Histogram({
      name: 'facilitator_settle_duration_seconds',
      help: 'Settle latency (until confirmed or answered pending)',
      labelNames: ['network', 'outcome'],
      buckets: LATENCY,
      registers,
    }),
    rpcRequests: counter('ledger_rpc_requests_total', 'Soroban RPC calls by method', ['network', 'method']),
    rpcErrors: counter('ledger_rpc_errors_total', 'Soroban RPC calls that failed (transport or RPC error)', [
      'network',
      'method',
    ]),
    rpcLatency: new client.Histogram({
      name: 'ledger_rpc_latency_seconds',
      help: 'Soroban RPC latency by method',
      labelNames: ['network', 'method'],
      buckets: LATENCY,
      registers,
    }),
    rpcUp: new client.Gauge({
      name: 'ledger_rpc_up',
      help: '1 when the last RPC call to the network succeeded, else 0',
      labelNames: ['network'],
      registers,
    }),
    latestLedger: new client.Gauge({
      name: 'ledger_latest_observed',
      help: 'Latest ledger sequence observed on the network',
      labelNames: ['network'],
      registers,
    }),
    submissionFailures: counter(
      'ledger_settlement_submission_failures_total',
      'Settlement transactions rejected at submission or failed on the ledger',
      ['network', 'reason'],
    ),
    feesCharged: counter(
      'facilitator_fees_charged_stroops_total',
      'Network fees the ledger charged for settlement transactions, stroops',
      ['network'],
    ),
    feeBudgetRefusals: counter(
      'facilitator_fee_budget_refusals_total',
      'Settles refused because a daily fee budget was spent, by budget (seller, payer, client, global)',
      ['network', 'scope'],
    ),
    sponsoredToday: new client.Gauge({
      name: 'facilitator_sponsored_fees_today_stroops',
      help:
        "Network fees committed or spent today (UTC) on the network, all sellers together, as of this process's " +
        'last settle',
      labelNames: ['network'],
      registers,
    }),
    sponsoredCap: new client.Gauge({
      name: 'facilitator_sponsored_fee_cap_stroops',
      help: 'FACILITATOR_DAILY_FEE_CAP_STROOPS (0: unlimited)',
      labelNames: ['network'],
      registers,
    }),
    confirmationDelay: new client.Histogram({
      name: 'ledger_settlement_confirmation_delay_seconds',
      help: 'Time from settlement submission to the recorded confirmation',
      labelNames: ['network'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers,
    }),
    channelsBusy: new client.Gauge({
      name: 'facilitator_channel_accounts_busy',
      help: 'Channel accounts with a transaction in flight',
      labelNames: ['network'],
      registers,
    }),
    channelsTotal: new client.Gauge({
      name: 'facilitator_channel_accounts',
      help: 'Channel accounts in the pool',
      labelNames: ['network'],
      registers,
    }),
  };
  return {
    ...m,
    initNetworks(networks) {
      for (const { network, rpcUrl } of networks) {
        for (const outcome of ['success', 'failure']) {
          m.verifyOutcomes.inc({ network, outcome }, 0);
          m.settleOutcomes.inc({ network, outcome }, 0);
        }
        for (const operation of ['verify', 'settle']) {
          m.replayDetected.inc({ network, operation }, 0);
          m.authExpired.inc({ network, operation }, 0);
        }
        for (const c of [m.amountMismatch, m.assetMismatch, m.recipientMismatch, m.trustlineFailures])
          c.inc({ network }, 0);
        for (const scope of ['seller', 'payer', 'client', 'global']) m.feeBudgetRefusals.inc({ network, scope }, 0);
        if (!rpcUrl) continue;
        m.rpcUp.set({ network }, 0);
        m.latestLedger.set({ network }, 0);
        for (const method of ['getHealth', 'getLatestLedger']) {
          m.rpcErrors.inc({ network, method }, 0);
          m.rpcRequests.inc({ network, method }, 0);
        }
      }
    },
  };
}
