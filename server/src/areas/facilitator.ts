import type { Area, AreaContext } from './area';
import { createFacilitatorService, type FacilitatorService } from '../domain/facilitator/facilitator-service';
import { createAttemptRepository } from '../data/attempt-repository';
import { createSettlementRepository } from '../data/settlement-repository';
import { createReceiptRepository } from '../data/receipt-repository';
import { createChannelLeaseRepository } from '../data/channel-lease-repository';
import { createOwedAnswerRepository } from '../data/owed-answer-repository';
import { cachedResourceTerms, createResourceTermsRepository } from '../data/resource-repository';
import { SorobanLedger } from '../ledger/soroban-ledger';
import { ChannelAccountPool, setUpChannels } from '../ledger/channel-accounts';
import { settlementConfirmationWorker } from '../jobs/settlement-confirmation-worker';
import { receiptFinalizerWorker } from '../jobs/receipt-finalizer-worker';
import { stalePaymentCleanupWorker } from '../jobs/stale-payment-cleanup-worker';
import { Keypair } from '@stellar/stellar-sdk';
import { toStroops } from '../domain/amount';
import { DEFAULT_FEE_BUDGETS } from '../domain/facilitator/fee-budgets';
import {
  DEFAULT_ABANDONED_CLAIM_SECONDS,
  DEFAULT_CHANNEL_ACCOUNTS,
  DEFAULT_CHANNEL_LEASE_SECONDS,
  DEFAULT_CONFIRM_GRACE_MS,
  DEFAULT_MAX_FEE_STROOPS,
  DEFAULT_MIN_AMOUNT,
  DEFAULT_TX_TIMEOUT_SECONDS,
} from '../domain/defaults';
import type { FeeBudgets, FeeScope } from '../domain/facilitator/types';
import type { FeePercentile } from '../domain/facilitator/settlement-fees';

export interface FacilitatorOptions {
  /** Channel accounts per network on the local network (created and funded by friendbot at start). */
  channelAccounts?: number;
  /** Channel secrets per network for real networks: the same list for every process (leases are shared in the
   * database). */
  channelSecrets?: Partial<Record<string, string[]>>;
  /** Local network: the seed channel keypairs derive from (every process sharing a database must use the same). */
  channelSeed?: string;
  /** Local network: the file holding that seed (created on first start; DATA_DIR/channel-seed in main). Else random per
   * process. */
  channelSeedFile?: string;
  /** Expiry of a channel lease without a pinned transaction (renewed while held). Default: domain/defaults.ts. */
  channelLeaseSeconds?: number;
  /** How long settle waits for a free channel before SERVICE_UNAVAILABLE. Default 30 s. */
  channelAcquireTimeoutMs?: number;
  /** Channels of a network one seller / payer / client may hold at once, across processes. Default: half the pool, at
   * least 1. */
  channelsPerSeller?: number | null;
  channelsPerPayer?: number | null;
  channelsPerClient?: number | null;
  /** Settles of one seller / payer / client that may wait for a channel in one process (beyond: 503 at once). Default 4
   * each. */
  settleQueuePerSeller?: number;
  settleQueuePerPayer?: number;
  settleQueuePerClient?: number;
  /** Settles that may wait for a channel of a network in one process, in all. Default 64. */
  settleQueueTotal?: number;
  /** A claim for settlement left without a settlement row for this long is failed by the cleanup worker. */
  abandonedClaimSeconds?: number;
  /** STALE_PAYMENT_CLEANUP_INTERVAL_SECONDS: the cleanup worker's period (default: domain/defaults.ts). */
  staleCleanupEvery?: string;
  /** FACILITATOR_MAX_FEE_STROOPS: highest total fee of a settlement transaction, stroops. Default: domain/defaults.ts.
   * */
  maxFeeStroops?: number;
  /** FACILITATOR_MAX_INCLUSION_FEE_STROOPS (default 10,000) and FACILITATOR_MAX_RESOURCE_FEE_STROOPS (default 500,000).
   * */
  maxInclusionFeeStroops?: number;
  maxResourceFeeStroops?: number;
  /** FACILITATOR_INCLUSION_FEE_PERCENTILE: the getFeeStats Soroban inclusion fee percentile bid. Default p90. */
  inclusionFeePercentile?: FeePercentile;
  /** FACILITATOR_FEE_STATS_TTL_MS: how long one getFeeStats answer serves every settlement of a network. Default 5000.
   * */
  feeStatsTtlMs?: number;
  /** FACILITATOR_FEE_ACCOUNT_SECRET: the account that pays every settlement's fee through a fee-bump (unset: the
   * channels pay). */
  feeAccountSecret?: string | null;
  /** FACILITATOR_MIN_AMOUNT: smallest amount settled (decimal). Default: domain/defaults.ts. */
  minAmount?: string;
  /** Daily fee budgets per seller, payer, anonymous client address and in all (stroops; null: unlimited). Defaults:
   * config.ts DEFAULT_FEE_BUDGETS. */
  feeBudgets?: Partial<Record<FeeScope, number | null>>;
  /** SETTLEMENT_TX_TIMEOUT_SECONDS: a settlement transaction's time bound. Default: domain/defaults.ts. */
  txTimeoutSeconds?: number;
  /** SETTLEMENT_CONFIRM_GRACE_MS: how long past the time bound settle keeps asking for the transaction's fate before
   * answering 202. Default: domain/defaults.ts. */
  confirmGraceMs?: number;
  /** RPC_TIMEOUT_MS: the deadline of one Soroban RPC call. Default: domain/defaults.ts. */
  rpcTimeoutMs?: number;
  /** The network's estimated seconds per ledger (the local network's close interval, else LEDGER_CLOSE_MS). Default 5.
   * */
  ledgerSeconds?: number;
  /** Ledger poll interval while confirming. Default 250 ms. */
  pollMs?: number;
  /** Pending settlements older than this are checked by the confirmation worker. Default 30 s. */
  confirmationWorkerAgeSeconds?: number;
  /** Test seam: runs right after submission; throwing simulates a crash between submit and record. */
  afterSubmit?(hash: string): void | Promise<void>;
  /** Test seam: runs right after the claim (its channel already leased); throwing simulates a failure in that window.
   * */
  afterClaim?(attemptId: string): void | Promise<void>;
}

export interface FacilitatorArea extends Area {
  service: FacilitatorService;
  channels: ChannelAccountPool;
  /** The facilitator's own addresses on a network (channels and the fee account): /x402/supported's signers. */
  facilitatorAddresses(network: string): ReadonlySet<string>;
  /** The payer and payTo of a payment attempt (what an attestation names); null when unknown. */
  partiesOf(paymentAttemptId: string): Promise<{ payer: string; payTo: string } | null>;
  /** The fees the settlement of a payment attempt bid (evidence for its attestation); null when not recorded. */
  feesOf(paymentAttemptId: string): Promise<{ inclusion: string; resource: string; percentile: string } | null>;
}

/** The facilitator and payments area: supported, verify, settle, payment reads and the settlement workers. */
export function createFacilitatorArea(ctx: AreaContext, opts: FacilitatorOptions = {}): FacilitatorArea {
  const m = ctx.metrics.facilitator;
  const attempts = createAttemptRepository(ctx.db);
  const settlements = createSettlementRepository(ctx.db);
  const receipts = createReceiptRepository(ctx.db);
  const resourceTerms = createResourceTermsRepository(ctx.db);
  const feeAccount = opts.feeAccountSecret ? Keypair.fromSecret(opts.feeAccountSecret) : null;
  const ledger = new SorobanLedger(ctx.networks, m, {
    maxFeeStroops: opts.maxFeeStroops ?? DEFAULT_MAX_FEE_STROOPS,
    maxInclusionFeeStroops: opts.maxInclusionFeeStroops,
    maxResourceFeeStroops: opts.maxResourceFeeStroops,
    inclusionFeePercentile: opts.inclusionFeePercentile,
    feeStatsTtlMs: opts.feeStatsTtlMs,
    txTimeoutSeconds: opts.txTimeoutSeconds ?? DEFAULT_TX_TIMEOUT_SECONDS,
    rpcTimeoutMs: opts.rpcTimeoutMs,
    feeAccount,
  });
  const channels = new ChannelAccountPool(createChannelLeaseRepository(ctx.db), m, {
    leaseSeconds: opts.channelLeaseSeconds ?? DEFAULT_CHANNEL_LEASE_SECONDS,
    acquireTimeoutMs: opts.channelAcquireTimeoutMs ?? 30_000,
    channelsPerSeller: opts.channelsPerSeller,
    channelsPerPayer: opts.channelsPerPayer,
    channelsPerClient: opts.channelsPerClient,
    queuePerSeller: opts.settleQueuePerSeller,
    queuePerPayer: opts.settleQueuePerPayer,
    queuePerClient: opts.settleQueuePerClient,
    queueTotal: opts.settleQueueTotal,
  });
  // Metric labels carry only configured networks: anything a caller sends is counted as 'unsupported'.
  const label = (network: string) => (ctx.networks.get(network) ? network : 'unsupported');

  const networks = {
    get: (n: string) => ctx.networks.get(n),
    asset: (n: string, code: string, issuer: string) => ctx.networks.asset(n, code, issuer),
    list: () => ctx.networks.list(),
    settlementEvidence: (n: string) => ctx.networks.settlementEvidence(n),
    settlementEnabled: (n: string) => ctx.networks.get(n)?.settlementEnabled ?? false,
  };

  const facilitatorAddresses = (network: string): ReadonlySet<string> =>
    new Set([...channels.addresses(network), ...(feeAccount ? [feeAccount.publicKey()] : [])]);
  const service = createFacilitatorService({
    attempts,
    settlements,
    receipts,
    resources: resourceTerms,
    cachedTerms: cachedResourceTerms(resourceTerms),
    sellers: ctx.sellerRepository,
    ledger,
    channels,
    networks,
    policy: {
      facilitatorAddresses,
      minimumStroops: toStroops(opts.minAmount ?? DEFAULT_MIN_AMOUNT),
      ledgerSeconds: () => opts.ledgerSeconds ?? 5,
    },
    feeBudgets: feeBudgetsOf(opts.feeBudgets),
    owedAnswers: createOwedAnswerRepository(ctx.db),
    confirmGraceMs: opts.confirmGraceMs ?? DEFAULT_CONFIRM_GRACE_MS,
    pollMs: opts.pollMs ?? 250,
    afterSubmit: opts.afterSubmit,
    afterClaim: opts.afterClaim,
    observer: {
      request: (operation, network) =>
        m.requests.inc({ operation, network: network === 'all' ? network : label(network) }),
      outcome(operation, rawNetwork, outcome, seconds) {
        const network = label(rawNetwork);
        ctx.logger.debug('facilitator outcome', {
          operation,
          network,
          outcome,
          durationMs: Math.round(seconds * 1000),
        });
        (operation === 'verify' ? m.verifyOutcomes : m.settleOutcomes).inc({ network, outcome });
        (operation === 'verify' ? m.verifyLatency : m.settleLatency).observe({ network, outcome }, seconds);
      },
      failed(operation, rawNetwork, code) {
        const network = label(rawNetwork);
        ctx.logger.debug('facilitator refusal', { operation, network, code });
        m.failures.inc({ operation, network, code });
        if (code === 'REPLAY_DETECTED') m.replayDetected.inc({ operation, network });
        if (code === 'AUTH_EXPIRED') m.authExpired.inc({ operation, network });
        if (code === 'AMOUNT_MISMATCH') m.amountMismatch.inc({ network });
        if (code === 'ASSET_MISMATCH') m.assetMismatch.inc({ network });
        if (code === 'RECIPIENT_MISMATCH') m.recipientMismatch.inc({ network });
        if (code === 'TRUSTLINE_REQUIRED') m.trustlineFailures.inc({ network });
      },
      submissionFailed(network, reason) {
        const short = reason.split(':')[0].slice(0, 40);
        ctx.logger.debug('facilitator submission failed', { network: label(network), reason: short });
        m.submissionFailures.inc({ network: label(network), reason: short });
      },
      feeCharged(network, stroops) {
        m.feesCharged.inc({ network: label(network) }, Number(stroops));
      },
      feeBudgetRefused(network, scope) {
        m.feeBudgetRefusals.inc({ network: label(network), scope });
      },
      sponsoredToday(network, stroops) {
        m.sponsoredToday.set({ network: label(network) }, Number(stroops));
      },
      confirmed(network, delay) {
        ctx.logger.debug('facilitator settlement confirmed', { network: label(network), delaySeconds: delay });
        m.confirmationDelay.observe({ network: label(network) }, delay);
      },
    },
  });

  const settlementNetworks = () =>
    ctx.networks
      .list()
      .filter((n) => n.rpcUrl)
      .map((n) => n.network);
  const globalCap = feeBudgetsOf(opts.feeBudgets).global;
  for (const network of settlementNetworks())
    m.sponsoredCap.set({ network }, globalCap === null ? 0 : Number(globalCap));

  return {
    service,
    channels,
    facilitatorAddresses,
    async partiesOf(id) {
      const a = await attempts.findAttempt(id);
      return a ? { payer: a.payer, payTo: a.payTo } : null;
    },
    async feesOf(id) {
      const s = await settlements.findSettlementByAttempt(id);
      if (!s || s.inclusionFee == null || s.resourceFee == null || !s.feePercentile) return null;
      return { inclusion: s.inclusionFee.toString(), resource: s.resourceFee.toString(), percentile: s.feePercentile };
    },
    workers: [
      settlementConfirmationWorker({
        settlements,
        confirmOnce: (s) => service.confirmOnce(s),
        logger: ctx.logger,
        olderThanSeconds: opts.confirmationWorkerAgeSeconds ?? 30,
      }),
      receiptFinalizerWorker({
        receipts,
        versionAtSettlement: (resourceId, at) => resourceTerms.versionAt(resourceId, at),
      }),
      stalePaymentCleanupWorker({
        attempts,
        ledger,
        networks: settlementNetworks,
        logger: ctx.logger,
        abandonedClaimSeconds: opts.abandonedClaimSeconds ?? DEFAULT_ABANDONED_CLAIM_SECONDS,
        every: opts.staleCleanupEvery,
      }),
    ],
    async start() {
      await setUpChannels(channels, ctx.networks, {
        channelAccounts: opts.channelAccounts ?? DEFAULT_CHANNEL_ACCOUNTS,
        channelSecrets: opts.channelSecrets ?? {},
        channelSeed: opts.channelSeed,
        channelSeedFile: opts.channelSeedFile,
      });
      for (const n of ctx.networks.list()) {
        if (channels.size(n.network) > 0)
          ctx.logger.info('facilitator channel accounts ready', {
            network: n.network,
            count: channels.size(n.network),
          });
      }
    },
  };
}

/** The configured budgets as stroops (a scope not given takes its default; null stays unlimited). */
function feeBudgetsOf(given: Partial<Record<FeeScope, number | null>> = {}): FeeBudgets {
  const pick = (k: FeeScope): bigint | null => {
    const v = k in given ? given[k] : DEFAULT_FEE_BUDGETS[k];
    return v === null || v === undefined ? null : BigInt(v);
  };
  return { seller: pick('seller'), payer: pick('payer'), client: pick('client'), global: pick('global') };
}
