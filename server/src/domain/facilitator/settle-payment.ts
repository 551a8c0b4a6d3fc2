import { DomainError } from '../errors';
import { newId } from '../ids';
import type { Principal } from '../auth/principal';
import { paymentHash } from './payment-hash';
import { RULES } from './rules/catalog';
import { refuse } from './rules/rule';
import { checkExactBalanceChanges, checkSimulationSucceeded } from './rules/simulation';
import type { CheckedPayment, RequiredTerms } from './rules/offline';
import {
  checkPaymentOffline,
  checkSimulated,
  effectiveMaxTimeout,
  resolveRequired,
  simulationSource,
  type CheckDeps,
  type PaymentPayloadInput,
  type PaymentRequirementsInput,
} from './check-payment';
import { attemptRecord, type FacilitatorEvents } from './verify-payment';
import { accountableSeller, resolveCatalogTerms } from './catalog-terms';
import { confirmOnce as confirmSettlement, LedgerWatcher, type Fate } from './confirmation';
import type { FeeBudgets, FeeParties, FeeScope, SettleParty } from './types';
import type {
  AttemptRecord,
  AttemptRepository,
  ChannelLeaser,
  ChannelLease,
  EvidenceLabel,
  LedgerPort,
  PreparedSettlement,
  ReceiptRecord,
  ReceiptRepository,
  ResourceTermsRef,
  ResourceTermsRepository,
  SettlementRecord,
  SettlementRepository,
  SubmitResult,
} from './types';
import type { SellerRepository } from '../sellers/types';

export interface SettleDeps extends CheckDeps {
  attempts: AttemptRepository;
  settlements: SettlementRepository;
  receipts: Pick<ReceiptRepository, 'findReceiptByAttempt'>;
  ledger: LedgerPort;
  channels: ChannelLeaser;
  networks: CheckDeps['networks'] & {
    settlementEvidence(network: string): EvidenceLabel;
    settlementEnabled(network: string): boolean;
  };
  /** The current terms of a cataloged resource (by id, or by URL for the seller paid); null when unknown. */
  resources: Pick<ResourceTermsRepository, 'resourceRef' | 'findResourceByUrl'>;
  sellers: Pick<SellerRepository, 'sellerIdByWallet'>;
  events: FacilitatorEvents & {
    submissionFailed(network: string, reason: string): void;
    confirmed(network: string, delaySeconds: number): void;
    feeCharged?(network: string, stroops: bigint): void;
    /** A fee budget refused a settle (scope: seller, payer, client, global). */
    feeBudgetRefused?(network: string, scope: FeeScope): void;
    /** Today's sponsored fees on the network (committed + spent), after a reservation. */
    sponsoredToday?(network: string, stroops: bigint): void;
  };
  /** Daily network-fee budgets per seller, payer, anonymous client address and in all (stroops; null: unlimited). */
  feeBudgets: FeeBudgets;
  /** How long a settle waits for the payer's previous settlement to reach its final answer (one transfer in flight per
   * payer). */
  payerTurnWaitMs?: number;
  /** How long past the transaction's time bound settle keeps asking for its fate before answering 202. */
  confirmGraceMs: number;
  pollMs: number;
  /** x402 settles answered `settlement_pending`, owing the same payload's retry its final answer (absent: /v1 only). */
  owedAnswers?: OwedSettleAnswers;
  /** Test seam: runs right after the claim (attempt settlement_pending, channel leased, no settlement row yet). */
  afterClaim?(attemptId: string): void | Promise<void>;
  /** Test seam: runs right after the transaction was accepted by the RPC; throwing here simulates a crash. */
  afterSubmit?(hash: string): void | Promise<void>;
}

export interface SettleInput {
  paymentPayload: PaymentPayloadInput;
  /** The x402 face's requirements; /v1 derives them from the resource's current version. */
  paymentRequirements?: PaymentRequirementsInput;
  resourceId?: string | null;
  /** /v1: the verified attempt this payload belongs to. */
  paymentAttemptId?: string;
  /** Who asks: settling for a URL that is not cataloged needs the key of the seller it pays. */
  principal?: Principal;
  /** The caller's address (HTTP: req.ip): anonymous callers' fee budget and capacity are charged to it. */
  clientAddress?: string;
  /**
   * x402 (spec v2, @x402/core >= 2.24): a `settlement_pending` answer owes the same payload's next settle (the stock
   * server's one automatic retry) the final answer, reconciled from the transaction already submitted.
   */
  answerPending?: boolean;
}

/**
 * Settles answered `settlement_pending` on the x402 face, each owing one final answer (data/owed-answer-repository.ts).
 * `take` removes the debt and answers true for exactly one caller across every process.
 */
export interface OwedSettleAnswers {
  owe(attemptId: string): Promise<void>;
  isOwed(attemptId: string): Promise<boolean>;
  take(attemptId: string): Promise<boolean>;
}

export interface SettleOutcome {
  status: 'settled' | 'settlement_pending';
  settlement: SettlementRecord;
  receipt: ReceiptRecord;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const shortReason = (s: string) => s.replace(/\s+/g, ' ').slice(0, 300);
/** Submission attempts answered TRY_AGAIN_LATER (the RPC did not take the envelope) before giving up. */
const MAX_TRY_AGAIN = 10;

function replayed(attempt: AttemptRecord): DomainError {
  return new DomainError(
    'REPLAY_DETECTED',
    `This payment was already claimed for settlement (payment attempt ${attempt.id}); one signed payment settles once`,
    [{ field: 'paymentAttemptId', message: attempt.id }],
  );
}

/** Only a `verified` attempt can be settled; every other state has its own refusal. */
function refuseUnlessVerified(attempt: AttemptRecord): void {
  switch (attempt.status) {
    case 'verified':
      return;
    case 'settled':
    case 'settlement_pending':
    case 'replayed':
      throw replayed(attempt);
    case 'settlement_failed':
      throw new DomainError('SETTLEMENT_FAILED', `The settlement failed: ${attempt.failureReason ?? 'unknown reason'}`);
    case 'expired':
      throw new DomainError('AUTH_EXPIRED', 'The authorization expired before settlement');
    default:
      throw new DomainError('PAYMENT_REQUIRED', 'This payment attempt was never verified');
  }
}

/**
 * Who pays for what this settle spends: the accountable seller, the payer, and the caller's address, keyed or not
 * (one client with many free seller keys is still one client: its address's budget bounds them all).
 */
function feePartiesOf(input: SettleInput, sellerId: string, payer: string): FeeParties {
  return { sellerId, payer, client: `ip:${input.clientAddress ?? 'unknown'}` };
}

function capacityParty(parties: FeeParties): SettleParty {
  return { sellerId: parties.sellerId, payer: parties.payer, client: parties.client ?? 'unknown' };
}

const BUDGET_WORDS: Record<FeeScope, string> = {
  seller: "The seller's network-fee budget for today is spent",
  payer: "This payer's network-fee budget for today is spent",
  client: "This client address's network-fee budget for today is spent (every seller key used from it counts together)",
  global: "The facilitator's network-fee budget for today is spent",
};

function budgetExhausted(scope: FeeScope): DomainError {
  const now = new Date();
  const retryAfter = Math.ceil(
    (Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000,
  );
  return new DomainError(
    'FEE_BUDGET_EXHAUSTED',
    `${BUDGET_WORDS[scope]}; nothing was submitted`,
    [{ code: RULES.feeBudget.id, field: scope, message: `daily ${scope} fee budget` }],
    {
      'Retry-After': String(retryAfter),
    },
  );
}

/** Thrown inside a channel's cycle when the payer's other settlement holds the payer's turn: settle tries again, then
 * 503. */
class PayerBusy extends Error {}
/** Tries of a settle whose payer's turn is taken (another transfer in flight, or one finished since its simulation). */
const PAYER_TURN_TRIES = 3;

function payerBusy(): DomainError {
  return new DomainError(
    'SERVICE_UNAVAILABLE',
    'This payer has another settlement in flight on this asset; the payment was not used: retry the same ' +
      'settle shortly',
    [{ code: RULES.payerTurn.id, message: 'one transfer in flight per payer and asset' }],
    { 'Retry-After': '5' },
  );
}

/**
 * POST /v1/settle and /x402/settle. Settle verifies on its own, against the requirements it is given (for /v1 and
 * for a cataloged URL: the resource's CURRENT version), never on the strength of an earlier verify: the offline rules
 * and a simulation (check-payment.ts). A stored attempt is only the one-winner claim and the idempotency record.
 * Then: the accountable seller (nothing is sponsored that no seller asked for), the fee budgets, a channel from the
 * shared pool's fair queue (no place: 503 with the attempt still `verified`), the payer's turn, the transaction
 * prepared with a time bound and the simulation's events checked again, the fee reservation, the compare-and-set
 * claim, the pending settlement recorded, and only then the submission. The answer is final: `settled` once confirmed,
 * SETTLEMENT_FAILED once the transaction
 * can no longer land; 202 only when the RPC could not tell within the time bound and a grace.
 */
export function createSettlePayment(deps: SettleDeps) {
  const watcher = new LedgerWatcher((n) => deps.ledger.latestLedger(n), Math.max(1, Math.min(deps.pollMs, 50)));
  const waiting = createChannelWaiting(deps);

  function requirementsOf(input: SettleInput) {
    return resolveCatalogTerms(deps, {
      resourceId: input.resourceId,
      requirements: input.paymentRequirements,
      networkKnown: (n) => deps.networks.get(n) !== undefined,
      principal: input.principal,
    });
  }

  /** The attempt this authorization already has (/v1: the one named, which must hold this payload), else null. */
  async function knownAttempt(
    input: SettleInput,
    checked: CheckedPayment,
    required: RequiredTerms,
    resource: ResourceTermsRef | null,
  ): Promise<AttemptRecord | null> {
    const hash = paymentHash(checked.entryXdr);
    if (!input.paymentAttemptId) return deps.attempts.findByReplayKey(required.network, checked.payer, checked.nonce);
    const attempt = await deps.attempts.findAttempt(input.paymentAttemptId);
    if (!attempt) throw new DomainError('NOT_FOUND', `No payment attempt with id ${input.paymentAttemptId}`);
    if (attempt.paymentHash !== hash) {
      const others = await deps.attempts.findByHash(hash);
      if (others.some((o) => o.status !== 'verification_failed' && o.status !== 'created'))
        throw new DomainError('REPLAY_DETECTED', 'This authorization belongs to another payment attempt');
      throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The payload is not the one verified for this payment attempt');
    }
    if (attempt.resourceId && resource && attempt.resourceId !== resource.id)
      throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The payment attempt was verified for another resource');
    return attempt;
  }

  /** A settle without a prior verify records the verified attempt now (the unique replay index picks one). */
  async function recordAttempt(
    checked: CheckedPayment,
    required: RequiredTerms,
    resource: ResourceTermsRef | null,
    sellerId: string,
  ): Promise<AttemptRecord> {
    const claimed = await deps.attempts.insertVerifiedAttempt(
      attemptRecord(newId('payment'), checked, required, resource ?? { sellerId }, null),
    );
    if ('attempt' in claimed) return claimed.attempt;
    const held = claimed.replayOf ? await deps.attempts.findAttempt(claimed.replayOf) : null;
    if (!held) throw new DomainError('REPLAY_DETECTED', 'This authorization was already used');
    return held;
  }

  async function settle(input: SettleInput): Promise<SettleOutcome> {
    const { req, resource } = await requirementsOf(input);
    const required = resolveRequired(deps.networks, req);
    const checked = checkPaymentOffline(deps, input.paymentPayload, required);
    const sellerId = await accountableSeller(deps, resource, required.payTo, input.principal);
    // A duplicate of a payment already claimed is refused before any ledger call (a storm costs no simulations).
    const known = await knownAttempt(input, checked, required, resource);
    if (known && known.status !== 'verified' && input.answerPending) {
      const owed = await reconcileOwed(known, checked);
      if (owed) return owed;
    }
    if (known) refuseUnlessVerified(known);
    const simulation = await deps.ledger.simulate(
      required.network,
      checked.hostFunction,
      [checked.entry],
      simulationSource(deps, required.network, checked),
    );
    // A duplicate whose original settled meanwhile (its nonce now consumed) is a replay, not a ledger refusal.
    if (simulation.error !== null && known) {
      const now = await deps.attempts.findAttempt(known.id);
      if (now) refuseUnlessVerified(now);
    }
    try {
      checkSimulated(deps, checked, required, simulation, effectiveMaxTimeout(req, resource !== null));
    } catch (err) {
      if (known && err instanceof DomainError && err.code === 'AUTH_EXPIRED')
        await deps.attempts.expireAttempt(known.id, err.message);
      throw err;
    }
    const attempt = known ?? (await recordAttempt(checked, required, resource, sellerId));
    refuseUnlessVerified(attempt);
    if (!deps.networks.settlementEnabled(attempt.network))
      throw new DomainError('SERVICE_UNAVAILABLE', `Settlement is not enabled on ${attempt.network}`);
    const parties = feePartiesOf(input, sellerId, checked.payer);
    return settleInTurn(
      { attempt, checked, required, resource, sellerId, parties, answerPending: input.answerPending === true },
      capacityParty(parties),
    );
  }

  /**
   * x402 (spec v2; @x402/core >= 2.24 `settleWithPendingRetry`): the same payload settled again after a
   * `settlement_pending` answer is that answer's retry. Nothing is built or submitted: the ledger is asked about the
   * transaction already submitted (up to the grace), and the first retry to see a final answer takes the owed answer
   * (in any process: the debt row is deleted once). Still undecided: `settlement_pending` again, the debt kept. Not
   * owed (never answered pending, another retry took it, another payload with the same nonce): null, so the payment
   * is refused as a duplicate as before.
   */
  async function reconcileOwed(attempt: AttemptRecord, checked: CheckedPayment): Promise<SettleOutcome | null> {
    if (
      !deps.owedAnswers ||
      attempt.paymentHash !== paymentHash(checked.entryXdr) ||
      !(await deps.owedAnswers.isOwed(attempt.id))
    )
      return null;
    let settlement = await deps.settlements.findSettlementByAttempt(attempt.id);
    const deadline = Date.now() + deps.confirmGraceMs;
    let seen = watcher.latest(attempt.network);
    while (settlement?.status === 'pending' && Date.now() < deadline) {
      await confirmOnce(settlement, attempt).catch((): Fate => 'pending');
      settlement = await deps.settlements.findSettlementByAttempt(attempt.id);
      if (settlement?.status !== 'pending' || Date.now() >= deadline) break;
      seen = await watcher.after(
        attempt.network,
        seen,
        Math.min(Math.max(deps.pollMs, 1000), Math.max(1, deadline - Date.now())),
      );
    }
    const receipt = await deps.receipts.findReceiptByAttempt(attempt.id);
    if (!settlement || !receipt) return null;
    if (settlement.status === 'pending') return { status: 'settlement_pending', settlement, receipt };
    if (!(await deps.owedAnswers.take(attempt.id))) return null;
    if (settlement.status === 'failed')
      throw new DomainError(
        'SETTLEMENT_FAILED',
        `The settlement transaction failed: ${receipt.failureReason ?? 'failed on the ledger'}`,
      );
    return { status: 'settled', settlement, receipt };
  }

  interface Claim {
    attempt: AttemptRecord;
    checked: CheckedPayment;
    required: RequiredTerms;
    resource: ResourceTermsRef | null;
    sellerId: string;
    /** Who this settlement's fee is charged to (seller, payer, anonymous client address). */
    parties: FeeParties;
    /** x402: a `settlement_pending` answer owes the retry its final answer (SettleInput.answerPending). */
    answerPending: boolean;
  }

  /**
   * Budgets are checked before a settle queues (a spent budget answers at once: no channel, no simulation); then a
   * channel from the fair queue; then, with the channel in hand, the payer's turn (one transfer in flight per payer
   * and asset, so no settlement fails for lack of the funds of the one before it). A settle that finds the payer's
   * turn taken gives its channel back and tries again, at most PAYER_TURN_TRIES times, then answers 503.
   */
  async function settleInTurn(c: Claim, party: SettleParty): Promise<SettleOutcome> {
    for (let tries = 1; ; tries++) {
      const spent = await deps.settlements.exhaustedFeeBudget(c.parties, c.attempt.network, deps.feeBudgets);
      if (spent) throw refusedByBudget(c.attempt.network, spent);
      // The fair queue gives a payer one channel at a time by default (its lease is pinned until the final answer).
      const lease = await waiting.acquire(c.attempt, party);
      try {
        // settleOnChannel releases the lease (or hands it to the confirmation) whatever happens inside it.
        return await settleOnChannel(c, lease, await payerTurn(c, lease));
      } catch (err) {
        if (!(err instanceof PayerBusy)) throw err;
        if (tries >= PAYER_TURN_TRIES) throw payerBusy();
        await sleep(Math.max(deps.pollMs, 100));
      }
    }
  }

  function refusedByBudget(network: string, scope: FeeScope): DomainError {
    deps.events.feeBudgetRefused?.(network, scope);
    return budgetExhausted(scope);
  }

  /**
   * The payer's turn, taken with a channel in hand, before the simulation: none of the payer's transfers of this asset
   * is in flight (else 503 at once: no waiting place is taken outside the fair queue), and the database time now,
   * which the claim checks no transfer of the payer finished after.
   */
  async function payerTurn(c: Claim, lease: ChannelLease): Promise<Date> {
    const { network, payer, assetCode, assetIssuer } = c.attempt;
    const turn = await deps.attempts.payerTurn(network, payer, assetCode, assetIssuer).catch(async (err) => {
      await lease.release().catch(() => undefined);
      throw err;
    });
    if (!turn.busy) return turn.at;
    await lease.release().catch(() => undefined);
    throw new PayerBusy();
  }

  /** With a channel: prepare (simulated again, events checked), commit the fee, claim, record, submit, confirm. */
  async function settleOnChannel(c: Claim, lease: ChannelLease, turnSince: Date): Promise<SettleOutcome> {
    const handover = { done: false };
    try {
      const prepared = await deps.ledger.prepareSettlement(c.attempt.network, lease, c.checked.entryXdr);
      if ('error' in prepared) {
        // The authorization may have expired while this settle waited for its channel: that is AUTH_EXPIRED.
        if (prepared.simulation && c.checked.signatureExpirationLedger <= prepared.simulation.latestLedger) {
          await deps.attempts.expireAttempt(c.attempt.id, 'the authorization expired before settlement');
          throw refuse(
            RULES.notExpired,
            `The authorization expired at ledger ${c.checked.signatureExpirationLedger} (latest ledger ` +
              `${prepared.simulation.latestLedger})`,
          );
        }
        if (prepared.simulation)
          checkSimulationSucceeded(prepared.simulation, {
            payer: c.checked.payer,
            payTo: c.required.payTo,
            assetCode: c.required.asset.code,
          });
        throw new DomainError(
          'SETTLEMENT_FAILED',
          `The settlement transaction could not be built: ${shortReason(prepared.error)}`,
        );
      }
      checkExactBalanceChanges(prepared.simulation, {
        payer: c.checked.payer,
        payTo: c.required.payTo,
        amount: c.required.amount,
        contractId: c.required.asset.contractId,
      });
      const budget = await deps.settlements.reserveFees(c.parties, c.attempt.network, prepared.maxFee, deps.feeBudgets);
      if (budget.exhausted) throw refusedByBudget(c.attempt.network, budget.exhausted);
      if (budget.globalUsed !== null) deps.events.sponsoredToday?.(c.attempt.network, budget.globalUsed);
      const claim = await deps.attempts.claimForSettlement(c.attempt.id, c.resource, c.sellerId, turnSince);
      if (claim !== 'claimed') {
        await deps.settlements.releaseFees(c.parties, c.attempt.network, prepared.maxFee).catch(() => undefined);
        if (claim === 'payer_busy') throw new PayerBusy();
        throw replayed(c.attempt);
      }
      return await submitClaimed(c, prepared, lease, handover);
    } finally {
      if (!handover.done) await lease.release().catch(() => undefined);
    }
  }

  function pendingRecords(
    c: Claim,
    prepared: PreparedSettlement,
  ): { settlement: SettlementRecord; receipt: ReceiptRecord } {
    const unconfirmed = {
      paymentAttemptId: c.attempt.id,
      transactionHash: prepared.hash,
      ledger: null,
      network: c.attempt.network,
      amount: c.attempt.amount,
      assetCode: c.attempt.assetCode,
      assetIssuer: c.attempt.assetIssuer,
      status: 'pending' as const,
      evidence: 'pending_settlement' as const,
      settledAt: null,
      createdAt: new Date(),
    };
    const settlement: SettlementRecord = {
      ...unconfirmed,
      id: newId('settlement'),
      channelAccount: prepared.channel,
      validUntil: prepared.validUntil,
      txSequence: prepared.sequence,
      sellerId: c.sellerId,
      maxFee: prepared.maxFee,
      feePayer: c.parties.payer,
      feeClient: c.parties.client,
      ...feeEvidence(prepared),
    };
    // The receipt pins the resource version whose terms this payment was checked against (none for an uncataloged URL).
    const receipt: ReceiptRecord = {
      ...unconfirmed,
      id: newId('receipt'),
      settlementId: settlement.id,
      resourceId: c.resource?.id ?? null,
      sellerId: c.resource?.sellerId ?? c.sellerId,
      versionId: c.resource?.versionId ?? null,
      failureCode: null,
      failureReason: null,
    };
    return { settlement, receipt };
  }

  /** After the claim: record before submitting (crash safety), submit once, then wait for the final answer. */
  async function submitClaimed(
    c: Claim,
    prepared: PreparedSettlement,
    lease: ChannelLease,
    handover: { done: boolean },
  ): Promise<SettleOutcome> {
    let recorded = false;
    try {
      await deps.afterClaim?.(c.attempt.id);
      const { settlement, receipt } = pendingRecords(c, prepared);
      if (!(await deps.settlements.insertPendingSettlement(settlement, receipt, lease.token))) {
        throw new DomainError(
          'SETTLEMENT_FAILED',
          'The settlement was abandoned before submission; sign a new payment',
        );
      }
      recorded = true;
      const latestAtSubmit = watcher.latest(c.attempt.network);
      const sent = await submitUntilTaken(c.attempt.network, prepared.envelopeXdr);
      if (sent.status === 'ERROR' || sent.status === 'TRY_AGAIN_LATER') {
        await deps.settlements.finalizeFailed(settlement.id, 'SETTLEMENT_FAILED', shortReason(sent.reason));
        await deps.settlements.settleFee(settlement.id, 0n);
        deps.events.submissionFailed(c.attempt.network, sent.reason);
        throw new DomainError(
          'SETTLEMENT_FAILED',
          `The settlement transaction was rejected: ${shortReason(sent.reason)}`,
        );
      }
      // UNKNOWN (the RPC failed while we submitted): it may have been taken; never resubmitted, its fate is asked.
      if (sent.status === 'UNKNOWN') deps.events.submissionFailed(c.attempt.network, 'unknown');
      await deps.afterSubmit?.(prepared.hash);
      handover.done = true;
      const outcome = await confirmUntilFinal(settlement, c.attempt, lease, latestAtSubmit);
      // Recorded before the pending answer leaves: the retry may reach another process.
      if (outcome.status === 'settlement_pending' && c.answerPending) await deps.owedAnswers?.owe(c.attempt.id);
      return outcome;
    } catch (err) {
      // Nothing reached the ledger before the pending settlement was recorded: the claim ends settlement_failed now
      // (and if even that write fails, the cleanup worker does it later).
      if (!recorded) {
        const reason = err instanceof DomainError ? err.message : 'the settlement was interrupted before submission';
        await deps.attempts
          .failClaimedAttempt(c.attempt.id, 'SETTLEMENT_FAILED', shortReason(reason))
          .catch(() => undefined);
        await deps.settlements.releaseFees(c.parties, c.attempt.network, prepared.maxFee).catch(() => undefined);
      }
      throw err;
    }
  }

  /** Submits; TRY_AGAIN_LATER (not taken) is sent again; a transport error is UNKNOWN (never resubmitted). */
  async function submitUntilTaken(network: string, envelopeXdr: string): Promise<SubmitResult | { status: 'UNKNOWN' }> {
    const once = async (): Promise<SubmitResult | { status: 'UNKNOWN' }> =>
      deps.ledger.submit(network, envelopeXdr).catch(() => ({ status: 'UNKNOWN' as const }));
    let sent = await once();
    for (let i = 0; sent.status === 'TRY_AGAIN_LATER' && i < MAX_TRY_AGAIN; i++) {
      await sleep(Math.max(deps.pollMs, 100));
      sent = await once();
    }
    return sent;
  }

  function confirmOnce(s: SettlementRecord, attempt?: AttemptRecord | null): Promise<Fate> {
    return confirmSettlement(
      {
        attempts: deps.attempts,
        settlements: deps.settlements,
        ledger: deps.ledger,
        networks: deps.networks,
        events: deps.events,
      },
      s,
      attempt,
    );
  }

  /**
   * Asks once a ledger newer than the one open at submission has closed, then once per closed ledger, until the
   * ledger's final answer or the time bound plus the grace has passed (then 202: the worker finishes it).
   */
  async function confirmUntilFinal(
    s: SettlementRecord,
    attempt: AttemptRecord,
    lease: ChannelLease,
    latestAtSubmit: number,
  ): Promise<SettleOutcome> {
    let fate: Fate = 'pending';
    try {
      const deadline = (s.validUntil?.getTime() ?? Date.now()) + deps.confirmGraceMs;
      let seen = latestAtSubmit;
      while (fate === 'pending') {
        seen = await watcher.after(
          attempt.network,
          seen,
          Math.min(Math.max(deps.pollMs, 1000), Math.max(1, deadline - Date.now())),
        );
        fate = await confirmOnce(s, attempt).catch((): Fate => 'pending');
        if (Date.now() > deadline) break;
      }
    } finally {
      // With a final answer the channel was freed with it; otherwise it stays pinned until the worker records one.
      await lease.release({ freed: fate !== 'pending' }).catch(() => undefined);
    }
    const settlement = await deps.settlements.findSettlementByAttempt(attempt.id);
    const receipt = await deps.receipts.findReceiptByAttempt(attempt.id);
    if (!settlement || !receipt) throw new Error('settlement record vanished');
    if (settlement.status === 'failed')
      throw new DomainError(
        'SETTLEMENT_FAILED',
        `The settlement transaction failed: ${receipt.failureReason ?? 'failed on the ledger'}`,
      );
    return { status: settlement.status === 'settled' ? 'settled' : 'settlement_pending', settlement, receipt };
  }

  return { settle, confirmOnce };
}

/**
 * Settles of this process waiting for a channel. A waiting settle re-reads its attempt only to stop when a duplicate
 * claimed it, spaced by the number of distinct attempts waiting (every 200 ms for a storm of duplicates of one
 * payment, about ten reads per 200 ms in all when many different payments wait); reads of one attempt are shared.
 */
function createChannelWaiting(deps: Pick<SettleDeps, 'channels' | 'attempts'>) {
  const waitingAttempts = new Map<string, number>();
  const reading = new Map<string, Promise<AttemptRecord | null>>();
  const checkEveryMs = () => 200 * Math.max(1, waitingAttempts.size / 10);
  function currentAttempt(id: string): Promise<AttemptRecord | null> {
    let p = reading.get(id);
    if (!p) {
      p = deps.attempts.findAttempt(id).finally(() => reading.delete(id));
      reading.set(id, p);
    }
    return p;
  }
  return {
    async acquire(attempt: AttemptRecord, party: SettleParty): Promise<ChannelLease> {
      let lastRead = Date.now();
      waitingAttempts.set(attempt.id, (waitingAttempts.get(attempt.id) ?? 0) + 1);
      try {
        return await deps.channels.acquire(attempt.network, {
          party,
          attemptId: attempt.id,
          whileWaiting: async () => {
            if (Date.now() - lastRead < checkEveryMs()) return;
            lastRead = Date.now();
            const now = await currentAttempt(attempt.id);
            if (now) refuseUnlessVerified(now);
          },
        });
      } finally {
        const left = (waitingAttempts.get(attempt.id) ?? 1) - 1;
        if (left > 0) waitingAttempts.set(attempt.id, left);
        else waitingAttempts.delete(attempt.id);
      }
    },
  };
}

export type SettlePayment = ReturnType<typeof createSettlePayment>;

/** The fees a prepared settlement bids, as the settlement records them (evidence, and part of its attestation). */
function feeEvidence(
  prepared: PreparedSettlement,
): Pick<SettlementRecord, 'inclusionFee' | 'resourceFee' | 'feePercentile'> {
  if (!prepared.fees) return {};
  return {
    inclusionFee: prepared.fees.inclusion,
    resourceFee: prepared.fees.resource,
    feePercentile: prepared.fees.percentile,
  };
}
