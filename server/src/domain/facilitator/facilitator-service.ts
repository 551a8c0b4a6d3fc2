import type { FeeScope } from './types';
import { DomainError, type ErrorCode } from '../errors';
import { isOperatorOrSeller, type Principal } from '../auth/principal';
import { createVerifyPayment, type PaymentInput, type NetworkLookup } from './verify-payment';
import { createSettlePayment, type SettleDeps, type SettleInput, type SettleOutcome } from './settle-payment';
import type { AttemptRecord, CachedTerms, ReceiptRecord, ReceiptRepository, SettlementRecord } from './types';
import { withSharedSimulations } from './check-payment';

export interface FacilitatorObserver {
  request(operation: string, network: string): void;
  outcome(operation: 'verify' | 'settle', network: string, outcome: 'success' | 'failure', seconds: number): void;
  failed(operation: 'verify' | 'settle', network: string, code: ErrorCode): void;
  submissionFailed(network: string, reason: string): void;
  confirmed(network: string, delaySeconds: number): void;
  feeCharged(network: string, stroops: bigint): void;
  feeBudgetRefused?(network: string, scope: FeeScope): void;
  sponsoredToday?(network: string, stroops: bigint): void;
}

export interface FacilitatorServiceDeps extends Omit<SettleDeps, 'events' | 'receipts'> {
  receipts: Pick<ReceiptRepository, 'findReceipt' | 'findReceiptByAttempt'>;
  /** The process's catalog terms by resource id, for /v1 verify (VerifyDeps.cachedTerms). */
  cachedTerms?: CachedTerms;
  networks: SettleDeps['networks'] &
    NetworkLookup & { list(): Array<{ network: string; assets: Array<{ code: string; issuer: string }> }> };
  observer: FacilitatorObserver;
}

/** The facilitator's use cases: supported, verify, settle and the payment/settlement/receipt reads. */
export function createFacilitatorService(deps: FacilitatorServiceDeps) {
  const events = {
    failed: deps.observer.failed,
    submissionFailed: deps.observer.submissionFailed,
    confirmed: deps.observer.confirmed,
    feeCharged: deps.observer.feeCharged,
    feeBudgetRefused: deps.observer.feeBudgetRefused,
    sponsoredToday: deps.observer.sponsoredToday,
  };
  const ledger = withSharedSimulations(deps.ledger);
  const verifyPayment = createVerifyPayment({
    attempts: deps.attempts,
    resources: deps.resources,
    cachedTerms: deps.cachedTerms,
    sellers: deps.sellers,
    ledger,
    networks: deps.networks,
    policy: deps.policy,
    events,
  });
  const settlePayment = createSettlePayment({ ...deps, ledger, events });

  async function timed<T>(operation: 'verify' | 'settle', network: string, work: () => Promise<T>): Promise<T> {
    deps.observer.request(operation, network);
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    try {
      const out = await work();
      deps.observer.outcome(operation, network, 'success', seconds());
      return out;
    } catch (err) {
      deps.observer.outcome(operation, network, 'failure', seconds());
      if (operation === 'settle' && err instanceof DomainError) deps.observer.failed('settle', network, err.code);
      throw err;
    }
  }

  return {
    supported() {
      deps.observer.request('supported', 'all');
      return {
        schemes: deps.networks.list().map((n) => ({
          name: 'exact' as const,
          network: n.network,
          assets: n.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
        })),
        extensions: { bazaar: true, upto: false },
      };
    },

    verify(input: PaymentInput): Promise<AttemptRecord> {
      return timed('verify', input.paymentPayload.network, () => verifyPayment.verify(input));
    },

    /** /x402/verify: the same checks as verify, nothing recorded. */
    check(input: PaymentInput): Promise<{ payer: string }> {
      return timed('verify', input.paymentPayload.network, () => verifyPayment.check(input));
    },

    settle(input: SettleInput): Promise<SettleOutcome> {
      return timed('settle', input.paymentPayload.network, () => settlePayment.settle(input));
    },

    confirmOnce: settlePayment.confirmOnce,

    /** The seconds per ledger verify converts a requirement's maxTimeoutSeconds with (its expiry-window rule). */
    ledgerSeconds: (network: string): number => deps.policy.ledgerSeconds(network),

    ...paymentReads(deps),
  };
}

/** The payment, settlement and receipt reads, and the operator's fee report. */
function paymentReads(deps: FacilitatorServiceDeps) {
  return {
    async payment(
      principal: Principal,
      id: string,
    ): Promise<{ attempt: AttemptRecord; settlement: SettlementRecord | null; receipt: ReceiptRecord | null }> {
      if (principal.role === 'public') throw new DomainError('UNAUTHORIZED', 'An API key is required');
      const attempt = await deps.attempts.findAttempt(id);
      if (!attempt) throw new DomainError('NOT_FOUND', `No payment attempt with id ${id}`);
      if (!isOperatorOrSeller(principal, attempt.sellerId))
        throw new DomainError('FORBIDDEN', 'This API key may read only its own payments');
      deps.observer.request('getPayment', attempt.network);
      return {
        attempt,
        settlement: await deps.settlements.findSettlementByAttempt(id),
        receipt: await deps.receipts.findReceiptByAttempt(id),
      };
    },

    /** Network fees per accountable seller for one UTC day (default today): operator-only (http/access-policy.ts). */
    async sellerFees(day?: string) {
      const date = day ?? new Date().toISOString().slice(0, 10);
      const report = await deps.settlements.sellerFees(date);
      return { day: date, items: report.items, settlementsNeedingReconciliation: report.needingReconciliation };
    },

    async settlement(hash: string): Promise<SettlementRecord> {
      const s = await deps.settlements.findSettlementByHash(hash);
      if (!s) throw new DomainError('NOT_FOUND', `No settlement with transaction hash ${hash}`);
      deps.observer.request('getSettlement', s.network);
      return s;
    },

    async receipt(id: string): Promise<ReceiptRecord> {
      const r = await deps.receipts.findReceipt(id);
      if (!r) throw new DomainError('NOT_FOUND', `No receipt with id ${id}`);
      deps.observer.request('getReceipt', r.network);
      return r;
    },
  };
}

export type FacilitatorService = ReturnType<typeof createFacilitatorService>;
