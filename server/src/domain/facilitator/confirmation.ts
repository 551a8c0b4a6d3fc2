import type { ErrorCode } from '../errors';
import type {
  AttemptRecord,
  AttemptRepository,
  EvidenceLabel,
  LedgerPort,
  SettlementRecord,
  SettlementRepository,
} from './types';

/**
 * Learning a submitted settlement's fate from the ledger, never by resubmitting. A final answer is recorded only on
 * evidence: SUCCESS or FAILED from the ledger, or NOT_FOUND after a ledger closed past the transaction's time bound
 * (it can never be included then). A transaction whose window the RPC's history no longer covers is marked for
 * reconciliation instead: never failed without evidence.
 */

export interface ConfirmationDeps {
  attempts: Pick<AttemptRepository, 'findAttempt'>;
  settlements: Pick<SettlementRepository, 'settleFee' | 'finalizeFailed' | 'finalizeSettled' | 'markReconciliation'>;
  ledger: LedgerPort;
  networks: { settlementEvidence(network: string): EvidenceLabel };
  events: {
    submissionFailed(network: string, reason: string): void;
    confirmed(network: string, delaySeconds: number): void;
    /** Fees the ledger charged for one final settlement (metrics). */
    feeCharged?(network: string, stroops: bigint): void;
  };
}

async function charge(
  deps: ConfirmationDeps,
  s: SettlementRecord,
  fee: bigint,
  chargeTo: 'seller' | 'payer' = 'seller',
): Promise<void> {
  await deps.settlements.settleFee(s.id, fee, chargeTo);
  if (fee > 0n) deps.events.feeCharged?.(s.network, fee);
}

export type Fate = 'settled' | 'failed' | 'pending' | 'reconcile';

const shortReason = (s: string) => s.replace(/\s+/g, ' ').slice(0, 300);

async function failed(
  deps: ConfirmationDeps,
  s: SettlementRecord,
  code: ErrorCode,
  reason: string,
  metricReason: string,
  fee: bigint,
): Promise<Fate> {
  if (await deps.settlements.finalizeFailed(s.id, code, shortReason(reason))) {
    deps.events.submissionFailed(s.network, metricReason);
    await charge(deps, s, fee, code === PAYER_FAILURE ? 'payer' : 'seller');
  }
  return 'failed';
}

/**
 * The code a transaction that failed ON the ledger is recorded with. The transfer was simulated successfully just
 * before submission and a payer has one transfer in flight at a time (settle-payment.ts), so a host function that
 * traps at apply time failed because something the payer controls changed in between (its funds moved, its signers
 * or trustline changed): the payer's failure (INSUFFICIENT_BALANCE), charged to the payer's fee budget and never
 * counted against the payee's success rate or ranking. Any other ledger failure stays SETTLEMENT_FAILED.
 */
const PAYER_FAILURE: ErrorCode = 'INSUFFICIENT_BALANCE';
export function ledgerFailureCode(reason: string): ErrorCode {
  return /invokeHostFunctionTrapped/.test(reason) ? PAYER_FAILURE : 'SETTLEMENT_FAILED';
}

/** NOT_FOUND: final only once no later ledger can include the transaction. */
async function notFound(
  deps: ConfirmationDeps,
  s: SettlementRecord,
  state: Awaited<ReturnType<LedgerPort['transaction']>>,
  attempt?: AttemptRecord | null,
): Promise<Fate> {
  if (state.status !== 'NOT_FOUND') return 'pending';
  if (s.validUntil) {
    const closedPast =
      state.latestLedgerCloseTime !== undefined && state.latestLedgerCloseTime.getTime() > s.validUntil.getTime();
    if (!closedPast) return 'pending';
    // The RPC forgot the ledgers where it could have landed. Evidence left: the channel's sequence number (the
    // channel carries no other transaction while this one is pinned). Below the transaction's: never applied, and
    // past its time bound never will be. At or above it: applied with an outcome nobody can read here: reconcile.
    if (state.oldestLedgerCloseTime !== undefined && state.oldestLedgerCloseTime.getTime() > s.createdAt.getTime()) {
      const sequence =
        s.channelAccount && s.txSequence ? await deps.ledger.accountSequence(s.network, s.channelAccount) : null;
      if (sequence !== null && sequence < BigInt(s.txSequence!)) {
        return failed(
          deps,
          s,
          'SETTLEMENT_FAILED',
          'the transaction was not included before its time bound (its channel never reached its sequence)',
          'not_found_after_time_bound',
          0n,
        );
      }
      await deps.settlements.markReconciliation(s.id);
      deps.events.submissionFailed(s.network, 'reconciliation_required');
      return 'reconcile';
    }
    return failed(
      deps,
      s,
      'SETTLEMENT_FAILED',
      'the transaction was not included before its time bound',
      'not_found_after_time_bound',
      0n,
    );
  }
  // Settlements recorded before time bounds were stored: only the authorization's expiry makes them final.
  const a = attempt ?? (await deps.attempts.findAttempt(s.paymentAttemptId));
  const latest = state.latestLedger ?? (await deps.ledger.latestLedger(s.network));
  if (a && latest > a.expiresAtLedger)
    return failed(
      deps,
      s,
      'SETTLEMENT_FAILED',
      'transaction not found on the ledger after the authorization expired',
      'not_found_after_expiry',
      0n,
    );
  return 'pending';
}

/** Asks the ledger once about a pending settlement and records a final answer when there is one. */
export async function confirmOnce(
  deps: ConfirmationDeps,
  s: SettlementRecord,
  attempt?: AttemptRecord | null,
): Promise<Fate> {
  const state = await deps.ledger.transaction(s.network, s.transactionHash);
  if (state.status === 'SUCCESS') {
    if (
      await deps.settlements.finalizeSettled(
        s.id,
        state.ledger,
        state.closedAt,
        deps.networks.settlementEvidence(s.network),
      )
    ) {
      deps.events.confirmed(s.network, (Date.now() - s.createdAt.getTime()) / 1000);
      await charge(deps, s, state.feeCharged ?? s.maxFee ?? 0n);
    }
    return 'settled';
  }
  if (state.status === 'FAILED')
    return failed(
      deps,
      s,
      ledgerFailureCode(state.reason),
      state.reason,
      state.reason,
      state.feeCharged ?? s.maxFee ?? 0n,
    );
  return notFound(deps, s, state, attempt);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One poll of the latest ledger per network for every settle of this process waiting for confirmation: a pending
 * transaction is asked about once per closed ledger, not on every poll of every settle.
 */
export class LedgerWatcher {
  private readonly watched = new Map<
    string,
    { latest: number; polling: boolean; waiters: Set<{ after: number; done(latest: number): void }> }
  >();

  constructor(
    private readonly latestLedger: (network: string) => Promise<number>,
    private readonly watchMs: number,
  ) {}

  latest(network: string): number {
    return this.watched.get(network)?.latest ?? 0;
  }

  /** Resolves with the latest ledger once it is past `after`, or after `maxWaitMs` whatever happened. */
  after(network: string, after: number, maxWaitMs: number): Promise<number> {
    let w = this.watched.get(network);
    if (!w) this.watched.set(network, (w = { latest: 0, polling: false, waiters: new Set() }));
    const watch = w;
    if (watch.latest > after) return Promise.resolve(watch.latest);
    return new Promise<number>((resolve) => {
      const waiter = {
        after,
        done(latest: number) {
          clearTimeout(timer);
          watch.waiters.delete(waiter);
          resolve(latest);
        },
      };
      const timer = setTimeout(() => waiter.done(watch.latest), maxWaitMs);
      watch.waiters.add(waiter);
      if (!watch.polling) void this.poll(network, watch);
    });
  }

  private async poll(
    network: string,
    watch: { latest: number; polling: boolean; waiters: Set<{ after: number; done(latest: number): void }> },
  ): Promise<void> {
    watch.polling = true;
    while (watch.waiters.size > 0) {
      try {
        const latest = await this.latestLedger(network);
        if (latest > watch.latest) watch.latest = latest;
        for (const x of [...watch.waiters]) if (watch.latest > x.after) x.done(watch.latest);
      } catch {
        // RPC hiccup: ask again; each waiter is released by its own bound anyway
      }
      if (watch.waiters.size > 0) await sleep(this.watchMs);
    }
    watch.polling = false;
  }
}
