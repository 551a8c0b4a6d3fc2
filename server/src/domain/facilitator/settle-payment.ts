import { DomainError } from '../errors';
import { newId } from '../ids';
import type { Principal } from '../auth/principal';
import { paymentHash } from './payment-hash';
import { RULES } from './rules/catalog';
import { refuse } from './rules/rule';
import { checkExactBalanceChanges, checkSimulationSucceeded } from './rules/simulation';
import type { CheckedPayment, RequiredTerms } from './rules/offline';
import { checkPayment, type CheckDeps, type PaymentPayloadInput, type PaymentRequirementsInput } from './check-payment';
import { attemptRecord, type FacilitatorEvents } from './verify-payment';
import { accountableSeller, findAccountableParty } from './catalog-terms';
import { confirmOnce as confirmSettlement, LedgerWatcher, type Fate } from './confirmation';
import { channelSelection, type SelectChannel } from './select-channel';
import { budgetExhausted, PayerBusy, payerBusy, refuseUnlessVerified, replayed } from './settle-refusals';
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
/** Tries of a settle whose payer's turn is taken (another transfer in flight, or one finished since its simulation). */
const PAYER_TURN_TRIES = 3;

/** Settle's dependencies and its parts shared by every settle of the process: the ledger watcher, selectChannel. */
interface SettleContext extends SettleDeps {
  watcher: LedgerWatcher;
  selectChannel: SelectChannel;
}

/**
 * POST /v1/settle and /x402/settle. Settle verifies on its own, against the requirements it is given (for /v1 and
 * for a cataloged URL: the resource's CURRENT version), never on the strength of an earlier verify. A stored attempt
 * is only the one-winner claim and the idempotency record. The steps, numbered in the functions below:
 *
 *  1. find the resource and the accountable seller (nothing is sponsored that no seller asked for);
 *  2. check the payment (check-payment.ts checkPayment: the offline rules, then a payment already claimed refused
 *     with no ledger call, then one simulation and its rules);
 *  3. the attempt: the one known, else recorded now;
 *  4. the fee budgets (a spent budget answers at once);
 *  5. selectChannel: a channel from the shared pool's fair queue (no place: 503 with the attempt still `verified`);
 *  6. the payer's turn (one transfer in flight per payer and asset);
 *  7. the transaction prepared on the channel with a time bound, the simulation's events checked again;
 *  8. the fee reservation;
 *  9. the compare-and-set claim;
 * 10. the pending settlement and receipt recorded, and only then
 * 11. the submission;
 * 12. the confirmation: `settled` once confirmed, SETTLEMENT_FAILED once the transaction can no longer land; 202 only
 *     when the RPC could not tell within the time bound and a grace.
 */
export function createSettlePayment(deps: SettleDeps) {
  const ctx: SettleContext = {
    ...deps,
    watcher: new LedgerWatcher((n) => deps.ledger.latestLedger(n), Math.max(1, Math.min(deps.pollMs, 50))),
    selectChannel: channelSelection(deps),
  };
  return {
    settle: (input: SettleInput) => settle(ctx, input),
    confirmOnce: (s: SettlementRecord, attempt?: AttemptRecord | null) => confirmOnce(ctx, s, attempt),
  };
}

export type SettlePayment = ReturnType<typeof createSettlePayment>;

/** Steps 1 to 3, then settleInTurn. */
async function settle(ctx: SettleContext, input: SettleInput): Promise<SettleOutcome> {
  // 1. The resource and the accountable seller (the catalog's current terms replace the caller's).
  const party = await findAccountableParty(ctx, input);
  const seen: { sellerId: string; known: AttemptRecord | null; owed: SettleOutcome | null } = {
    sellerId: '',
    known: null,
    owed: null,
  };
  // 2. The check, with settle's own steps between checkPayment's.
  const check = await checkPayment(ctx, input.paymentPayload, party.req, {
    async beforeSimulation(checked, required) {
      seen.sellerId = accountableSeller(party, input.principal);
      // A duplicate of a payment already claimed is refused before any ledger call (a storm costs no simulations).
      const known = (seen.known = await knownAttempt(ctx, input, checked, required, party.resource));
      if (known && known.status !== 'verified' && input.answerPending) {
        seen.owed = await reconcileOwed(ctx, known, checked);
        if (seen.owed) return false;
      }
      if (known) refuseUnlessVerified(known);
    },
    async afterSimulation(_checked, _required, simulation) {
      // A duplicate whose original settled meanwhile (its nonce now consumed) is a replay, not a ledger refusal.
      if (simulation.error !== null && seen.known) {
        const now = await ctx.attempts.findAttempt(seen.known.id);
        if (now) refuseUnlessVerified(now);
      }
      return party.resource !== null;
    },
    async refused(err) {
      if (seen.known && err instanceof DomainError && err.code === 'AUTH_EXPIRED')
        await ctx.attempts.expireAttempt(seen.known.id, err.message);
    },
  });
  if (!check) return seen.owed!;
  const { checked, required } = check;
  // 3. The attempt: the one this authorization has, else recorded now.
  const attempt = seen.known ?? (await recordAttempt(ctx, checked, required, party.resource, seen.sellerId));
  refuseUnlessVerified(attempt);
  if (!ctx.networks.settlementEnabled(attempt.network))
    throw new DomainError('SERVICE_UNAVAILABLE', `Settlement is not enabled on ${attempt.network}`);
  const parties = feePartiesOf(input, seen.sellerId, checked.payer);
  const claim: Claim = {
    attempt,
    checked,
    required,
    resource: party.resource,
    sellerId: seen.sellerId,
    parties,
    answerPending: input.answerPending === true,
  };
  return settleInTurn(ctx, claim, capacityParty(parties));
}

/** The attempt this authorization already has (/v1: the one named, which must hold this payload), else null. */
async function knownAttempt(
  ctx: SettleContext,
  input: SettleInput,
  checked: CheckedPayment,
  required: RequiredTerms,
  resource: ResourceTermsRef | null,
): Promise<AttemptRecord | null> {
  const hash = paymentHash(checked.entryXdr);
  if (!input.paymentAttemptId) return ctx.attempts.findByReplayKey(required.network, checked.payer, checked.nonce);
  const attempt = await ctx.attempts.findAttempt(input.paymentAttemptId);
  if (!attempt) throw new DomainError('NOT_FOUND', `No payment attempt with id ${input.paymentAttemptId}`);
  if (attempt.paymentHash !== hash) {
    const others = await ctx.attempts.findByHash(hash);
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
  ctx: SettleContext,
  checked: CheckedPayment,
  required: RequiredTerms,
  resource: ResourceTermsRef | null,
  sellerId: string,
): Promise<AttemptRecord> {
  const claimed = await ctx.attempts.insertVerifiedAttempt(
    attemptRecord(newId('payment'), checked, required, resource ?? { sellerId }, null),
  );
  if ('attempt' in claimed) return claimed.attempt;
  const held = claimed.replayOf ? await ctx.attempts.findAttempt(claimed.replayOf) : null;
  if (!held) throw new DomainError('REPLAY_DETECTED', 'This authorization was already used');
  return held;
}

/**
 * x402 (spec v2; @x402/core >= 2.24 `settleWithPendingRetry`): the same payload settled again after a
 * `settlement_pending` answer is that answer's retry. Nothing is built or submitted: the ledger is asked about the
 * transaction already submitted (up to the grace), and the first retry to see a final answer takes the owed answer
 * (in any process: the debt row is deleted once). Still undecided: `settlement_pending` again, the debt kept. Not
 * owed (never answered pending, another retry took it, another payload with the same nonce): null, so the payment
 * is refused as a duplicate as before.
 */
async function reconcileOwed(
  ctx: SettleContext,
  attempt: AttemptRecord,
  checked: CheckedPayment,
): Promise<SettleOutcome | null> {
  if (
    !ctx.owedAnswers ||
    attempt.paymentHash !== paymentHash(checked.entryXdr) ||
    !(await ctx.owedAnswers.isOwed(attempt.id))
  )
    return null;
  let settlement = await ctx.settlements.findSettlementByAttempt(attempt.id);
  const deadline = Date.now() + ctx.confirmGraceMs;
  let seen = ctx.watcher.latest(attempt.network);
  while (settlement?.status === 'pending' && Date.now() < deadline) {
    await confirmOnce(ctx, settlement, attempt).catch((): Fate => 'pending');
    settlement = await ctx.settlements.findSettlementByAttempt(attempt.id);
    if (settlement?.status !== 'pending' || Date.now() >= deadline) break;
    seen = await ctx.watcher.after(
      attempt.network,
      seen,
      Math.min(Math.max(ctx.pollMs, 1000), Math.max(1, deadline - Date.now())),
    );
  }
  const receipt = await ctx.receipts.findReceiptByAttempt(attempt.id);
  if (!settlement || !receipt) return null;
  if (settlement.status === 'pending') return { status: 'settlement_pending', settlement, receipt };
  if (!(await ctx.owedAnswers.take(attempt.id))) return null;
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
 * Who pays for what this settle spends: the accountable seller, the payer, and the caller's address, keyed or not
 * (one client with many free seller keys is still one client: its address's budget bounds them all).
 */
function feePartiesOf(input: SettleInput, sellerId: string, payer: string): FeeParties {
  return { sellerId, payer, client: `ip:${input.clientAddress ?? 'unknown'}` };
}

function capacityParty(parties: FeeParties): SettleParty {
  return { sellerId: parties.sellerId, payer: parties.payer, client: parties.client ?? 'unknown' };
}

/**
 * Steps 4 to 6. Budgets are checked before a settle queues (a spent budget answers at once: no channel, no
 * simulation); then a channel from the fair queue; then, with the channel in hand, the payer's turn (one transfer in
 * flight per payer and asset, so no settlement fails for lack of the funds of the one before it). A settle that finds
 * the payer's turn taken gives its channel back and tries again, at most PAYER_TURN_TRIES times, then answers 503.
 */
async function settleInTurn(ctx: SettleContext, c: Claim, party: SettleParty): Promise<SettleOutcome> {
  for (let tries = 1; ; tries++) {
    // 4. The fee budgets.
    const spent = await ctx.settlements.exhaustedFeeBudget(c.parties, c.attempt.network, ctx.feeBudgets);
    if (spent) throw refusedByBudget(ctx, c.attempt.network, spent);
    // 5. A channel (the fair queue gives a payer one channel at a time by default; its lease is pinned until the
    // final answer).
    const lease = await ctx.selectChannel(c.attempt, party);
    try {
      // 6. The payer's turn; settleOnChannel releases the lease (or hands it to the confirmation) whatever happens.
      return await settleOnChannel(ctx, c, lease, await payerTurn(ctx, c, lease));
    } catch (err) {
      if (!(err instanceof PayerBusy)) throw err;
      if (tries >= PAYER_TURN_TRIES) throw payerBusy();
      await sleep(Math.max(ctx.pollMs, 100));
    }
  }
}

function refusedByBudget(ctx: SettleContext, network: string, scope: FeeScope): DomainError {
  ctx.events.feeBudgetRefused?.(network, scope);
  return budgetExhausted(scope);
}

/**
 * The payer's turn, taken with a channel in hand, before the simulation: none of the payer's transfers of this asset
 * is in flight (else 503 at once: no waiting place is taken outside the fair queue), and the database time now,
 * which the claim checks no transfer of the payer finished after.
 */
async function payerTurn(ctx: SettleContext, c: Claim, lease: ChannelLease): Promise<Date> {
  const { network, payer, assetCode, assetIssuer } = c.attempt;
  const turn = await ctx.attempts.payerTurn(network, payer, assetCode, assetIssuer).catch(async (err) => {
    await lease.release().catch(() => undefined);
    throw err;
  });
  if (!turn.busy) return turn.at;
  await lease.release().catch(() => undefined);
  throw new PayerBusy();
}

/** Steps 7 to 9 with a channel: prepare (simulated again, events checked), commit the fee, claim; then submit. */
async function settleOnChannel(
  ctx: SettleContext,
  c: Claim,
  lease: ChannelLease,
  turnSince: Date,
): Promise<SettleOutcome> {
  const handover = { done: false };
  try {
    // 7. The transaction prepared on the channel.
    const prepared = await ctx.ledger.prepareSettlement(c.attempt.network, lease, c.checked.entryXdr);
    if ('error' in prepared) return await refusePrepared(ctx, c, prepared);
    checkExactBalanceChanges(prepared.simulation, {
      payer: c.checked.payer,
      payTo: c.required.payTo,
      amount: c.required.amount,
      contractId: c.required.asset.contractId,
    });
    // 8. The fee reservation.
    const budget = await ctx.settlements.reserveFees(c.parties, c.attempt.network, prepared.maxFee, ctx.feeBudgets);
    if (budget.exhausted) throw refusedByBudget(ctx, c.attempt.network, budget.exhausted);
    if (budget.globalUsed !== null) ctx.events.sponsoredToday?.(c.attempt.network, budget.globalUsed);
    // 9. The compare-and-set claim.
    const claim = await ctx.attempts.claimForSettlement(c.attempt.id, c.resource, c.sellerId, turnSince);
    if (claim !== 'claimed') {
      await ctx.settlements.releaseFees(c.parties, c.attempt.network, prepared.maxFee).catch(() => undefined);
      if (claim === 'payer_busy') throw new PayerBusy();
      throw replayed(c.attempt);
    }
    return await submitClaimed(ctx, c, prepared, lease, handover);
  } finally {
    if (!handover.done) await lease.release().catch(() => undefined);
  }
}

/** A transaction that could not be prepared: the refusal that says why. Always throws. */
async function refusePrepared(
  ctx: SettleContext,
  c: Claim,
  prepared: Extract<Awaited<ReturnType<LedgerPort['prepareSettlement']>>, { error: string }>,
): Promise<never> {
  // The authorization may have expired while this settle waited for its channel: that is AUTH_EXPIRED.
  if (prepared.simulation && c.checked.signatureExpirationLedger <= prepared.simulation.latestLedger) {
    await ctx.attempts.expireAttempt(c.attempt.id, 'the authorization expired before settlement');
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

/** Steps 10 to 12, after the claim: record before submitting (crash safety), submit once, wait for the answer. */
async function submitClaimed(
  ctx: SettleContext,
  c: Claim,
  prepared: PreparedSettlement,
  lease: ChannelLease,
  handover: { done: boolean },
): Promise<SettleOutcome> {
  let recorded = false;
  try {
    await ctx.afterClaim?.(c.attempt.id);
    // 10. The pending settlement and its receipt, recorded before anything reaches the ledger.
    const { settlement, receipt } = pendingRecords(c, prepared);
    if (!(await ctx.settlements.insertPendingSettlement(settlement, receipt, lease.token))) {
      throw new DomainError('SETTLEMENT_FAILED', 'The settlement was abandoned before submission; sign a new payment');
    }
    recorded = true;
    // 11. The submission.
    const latestAtSubmit = ctx.watcher.latest(c.attempt.network);
    const sent = await submitUntilTaken(ctx, c.attempt.network, prepared.envelopeXdr);
    if (sent.status === 'ERROR' || sent.status === 'TRY_AGAIN_LATER') {
      await ctx.settlements.finalizeFailed(settlement.id, 'SETTLEMENT_FAILED', shortReason(sent.reason));
      await ctx.settlements.settleFee(settlement.id, 0n);
      ctx.events.submissionFailed(c.attempt.network, sent.reason);
      throw new DomainError(
        'SETTLEMENT_FAILED',
        `The settlement transaction was rejected: ${shortReason(sent.reason)}`,
      );
    }
    // UNKNOWN (the RPC failed while we submitted): it may have been taken; never resubmitted, its fate is asked.
    if (sent.status === 'UNKNOWN') ctx.events.submissionFailed(c.attempt.network, 'unknown');
    await ctx.afterSubmit?.(prepared.hash);
    handover.done = true;
    // 12. The confirmation.
    const outcome = await confirmUntilFinal(ctx, settlement, c.attempt, lease, latestAtSubmit);
    // Recorded before the pending answer leaves: the retry may reach another process.
    if (outcome.status === 'settlement_pending' && c.answerPending) await ctx.owedAnswers?.owe(c.attempt.id);
    return outcome;
  } catch (err) {
    // Nothing reached the ledger before the pending settlement was recorded: the claim ends settlement_failed now
    // (and if even that write fails, the cleanup worker does it later).
    if (!recorded) {
      const reason = err instanceof DomainError ? err.message : 'the settlement was interrupted before submission';
      await ctx.attempts
        .failClaimedAttempt(c.attempt.id, 'SETTLEMENT_FAILED', shortReason(reason))
        .catch(() => undefined);
      await ctx.settlements.releaseFees(c.parties, c.attempt.network, prepared.maxFee).catch(() => undefined);
    }
    throw err;
  }
}

/** Submits; TRY_AGAIN_LATER (not taken) is sent again; a transport error is UNKNOWN (never resubmitted). */
async function submitUntilTaken(
  ctx: SettleContext,
  network: string,
  envelopeXdr: string,
): Promise<SubmitResult | { status: 'UNKNOWN' }> {
  const once = async (): Promise<SubmitResult | { status: 'UNKNOWN' }> =>
    ctx.ledger.submit(network, envelopeXdr).catch(() => ({ status: 'UNKNOWN' as const }));
  let sent = await once();
  for (let i = 0; sent.status === 'TRY_AGAIN_LATER' && i < MAX_TRY_AGAIN; i++) {
    await sleep(Math.max(ctx.pollMs, 100));
    sent = await once();
  }
  return sent;
}

function confirmOnce(ctx: SettleContext, s: SettlementRecord, attempt?: AttemptRecord | null): Promise<Fate> {
  const { attempts, settlements, ledger, networks, events } = ctx;
  return confirmSettlement({ attempts, settlements, ledger, networks, events }, s, attempt);
}

/**
 * Asks once a ledger newer than the one open at submission has closed, then once per closed ledger, until the
 * ledger's final answer or the time bound plus the grace has passed (then 202: the worker finishes it).
 */
async function confirmUntilFinal(
  ctx: SettleContext,
  s: SettlementRecord,
  attempt: AttemptRecord,
  lease: ChannelLease,
  latestAtSubmit: number,
): Promise<SettleOutcome> {
  let fate: Fate = 'pending';
  try {
    const deadline = (s.validUntil?.getTime() ?? Date.now()) + ctx.confirmGraceMs;
    let seen = latestAtSubmit;
    while (fate === 'pending') {
      seen = await ctx.watcher.after(
        attempt.network,
        seen,
        Math.min(Math.max(ctx.pollMs, 1000), Math.max(1, deadline - Date.now())),
      );
      fate = await confirmOnce(ctx, s, attempt).catch((): Fate => 'pending');
      if (Date.now() > deadline) break;
    }
  } finally {
    // With a final answer the channel was freed with it; otherwise it stays pinned until the worker records one.
    await lease.release({ freed: fate !== 'pending' }).catch(() => undefined);
  }
  const settlement = await ctx.settlements.findSettlementByAttempt(attempt.id);
  const receipt = await ctx.receipts.findReceiptByAttempt(attempt.id);
  if (!settlement || !receipt) throw new Error('settlement record vanished');
  if (settlement.status === 'failed')
    throw new DomainError(
      'SETTLEMENT_FAILED',
      `The settlement transaction failed: ${receipt.failureReason ?? 'failed on the ledger'}`,
    );
  return { status: settlement.status === 'settled' ? 'settled' : 'settlement_pending', settlement, receipt };
}

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
