import { DomainError } from '../errors';
import { newId } from '../ids';
import { toStroops } from '../amount';
import { parseAuthorization, verifyAuthorizationSignature } from './authorization';
import { paymentHash } from './payment-hash';
import { checkNotExpired, type FacilitatorEvents, type NetworkLookup, type PaymentPayloadInput } from './verify-payment';
import type {
  AttemptRecord,
  ChannelLeaser,
  ChannelLease,
  EvidenceLabel,
  LedgerPort,
  PaymentRepository,
  PreparedSettlement,
  ReceiptRecord,
  ResourceTermsRef,
  SettlementRecord,
  SubmitResult,
} from './types';

export interface SettleDeps {
  repo: PaymentRepository;
  ledger: LedgerPort;
  channels: ChannelLeaser;
  networks: NetworkLookup & { settlementEvidence(network: string): EvidenceLabel; settlementEnabled(network: string): boolean };
  resourceById(id: string): Promise<ResourceTermsRef | null>;
  events: FacilitatorEvents & {
    submissionFailed(network: string, reason: string): void;
    confirmed(network: string, delaySeconds: number): void;
  };
  /** How long settle waits for confirmation before answering 202 settlement_pending. */
  confirmWaitMs: number;
  /** How long the in-process confirmation keeps polling (holding the channel) before leaving it to the worker. */
  confirmTimeoutMs: number;
  pollMs: number;
  /**
   * Test seam: runs right after the claim (attempt settlement_pending, its channel leased, no settlement row yet);
   * throwing here simulates an error or a crash in that window.
   */
  afterClaim?(attemptId: string): void | Promise<void>;
  /** Test seam: runs right after the transaction was accepted by the RPC; throwing here simulates a crash. */
  afterSubmit?(hash: string): void | Promise<void>;
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
  return new DomainError('REPLAY_DETECTED', `This payment was already claimed for settlement (payment attempt ${attempt.id}); one signed payment settles once`, [
    { field: 'paymentAttemptId', message: attempt.id },
  ]);
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
 * POST /v1/settle. Re-verifies the payload against the stored attempt and the resource version it pays for, leases a
 * channel from the shared pool, then claims the attempt with a compare-and-set (verified -> settlement_pending: one
 * winner across all processes; every other caller, concurrent or later, gets REPLAY_DETECTED) while the transaction
 * is prepared (read-only), writes the pending settlement (hash known before submission, the channel pinned to it) and
 * only then submits. The confirmation asks about the transaction once per closed ledger (one latest-ledger poll per
 * process and network for all pending settles), so the channel is freed as soon as its ledger is known.
 *
 * The channel comes before the claim so that "no channel free" (every channel busy, or held by a process that died:
 * its unpinned leases expire after the pool's lease time) answers 503 SERVICE_UNAVAILABLE with Retry-After while
 * the attempt is still `verified`: the buyer's signed payment is not used up and the same settle can be retried.
 * A settle waiting for a channel re-reads the attempt between tries and stops as soon as another settle claimed it
 * (REPLAY_DETECTED), so duplicates never queue for channels; a lease whose claim is lost is released at once.
 *
 * Every state an attempt can be left in has an owner: a claim that never got its settlement row is failed by the
 * stale-payment cleanup worker (nothing was submitted); a pending settlement is finished by the confirmation worker,
 * which asks the ledger and never resubmits.
 */
export function createSettlePayment(deps: SettleDeps) {
  /**
   * One poll of the latest ledger per network for every settle of this process waiting for confirmation: a pending
   * transaction is asked about (getTransaction) once per closed ledger, not on every poll of every settle. Polled
   * every `min(pollMs, 50)` ms while anyone waits; a waiter is also released after `maxWaitMs` whatever happened.
   */
  const watchMs = Math.max(1, Math.min(deps.pollMs, 50));
  const watched = new Map<string, { latest: number; polling: boolean; waiters: Set<{ after: number; done(latest: number): void }> }>();
  function ledgerAfter(network: string, after: number, maxWaitMs: number): Promise<number> {
    let w = watched.get(network);
    if (!w) watched.set(network, (w = { latest: 0, polling: false, waiters: new Set() }));
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
      if (watch.polling) return;
      watch.polling = true;
      void (async () => {
        while (watch.waiters.size > 0) {
          try {
            const latest = await deps.ledger.latestLedger(network);
            if (latest > watch.latest) watch.latest = latest;
            for (const x of [...watch.waiters]) if (watch.latest > x.after) x.done(watch.latest);
          } catch {
            // RPC hiccup: ask again; each waiter is released by its own bound anyway
          }
          if (watch.waiters.size > 0) await sleep(watchMs);
        }
        watch.polling = false;
      })();
    });
  }

  /**
   * Attempts of this process's settles waiting for a channel (with how many settles each). A waiting settle re-reads its
   * attempt only to stop when a duplicate claimed it, so the reads are spaced by the number of distinct attempts
   * waiting: every 200 ms for a storm of duplicates of one payment, about ten reads per 200 ms in all when many
   * different payments wait (they must not take the connection pool from the settles that hold channels).
   */
  const waitingAttempts = new Map<string, number>();
  const checkEveryMs = () => 200 * Math.max(1, waitingAttempts.size / 10);

  /** The attempt as stored now; concurrent reads of one attempt in this process share one query. */
  const reading = new Map<string, Promise<AttemptRecord | null>>();
  function currentAttempt(id: string): Promise<AttemptRecord | null> {
    let p = reading.get(id);
    if (!p) {
      p = deps.repo.findAttempt(id).finally(() => reading.delete(id));
      reading.set(id, p);
    }
    return p;
  }

  async function outcomeOf(attemptId: string): Promise<SettleOutcome | null> {
    const settlement = await deps.repo.findSettlementByAttempt(attemptId);
    if (!settlement) return null;
    const receipt = await deps.repo.findReceiptByAttempt(attemptId);
    if (!receipt) return null;
    if (settlement.status === 'failed') throw new DomainError('SETTLEMENT_FAILED', `The settlement transaction failed: ${receipt.failureReason ?? 'failed on the ledger'}`);
    return { status: settlement.status === 'settled' ? 'settled' : 'settlement_pending', settlement, receipt };
  }

  /**
   * Asks the ledger once about a pending settlement and records a final answer. Never resubmits. `latest`: the latest
   * ledger when the caller has just read it (else it is asked when needed).
   */
  async function confirmOnce(s: SettlementRecord, attempt?: AttemptRecord | null, latest?: number): Promise<'settled' | 'failed' | 'pending'> {
    const state = await deps.ledger.transaction(s.network, s.transactionHash);
    if (state.status === 'SUCCESS') {
      if (await deps.repo.finalizeSettled(s.id, state.ledger, state.closedAt, deps.networks.settlementEvidence(s.network))) {
        deps.events.confirmed(s.network, (Date.now() - s.createdAt.getTime()) / 1000);
      }
      return 'settled';
    }
    if (state.status === 'FAILED') {
      if (await deps.repo.finalizeFailed(s.id, 'SETTLEMENT_FAILED', shortReason(state.reason))) deps.events.submissionFailed(s.network, state.reason);
      return 'failed';
    }
    // NOT_FOUND: only once the authorization has expired can the transaction never apply; then failing is safe.
    const a = attempt ?? (await deps.repo.findAttempt(s.paymentAttemptId));
    if (a) {
      if ((latest ?? (await deps.ledger.latestLedger(s.network))) > a.expiresAtLedger) {
        if (await deps.repo.finalizeFailed(s.id, 'SETTLEMENT_FAILED', 'transaction not found on the ledger after the authorization expired')) {
          deps.events.submissionFailed(s.network, 'not_found_after_expiry');
        }
        return 'failed';
      }
    }
    return 'pending';
  }

  /**
   * Waits for the transaction's fate: asks once a ledger newer than the one open at submission (`openLedger - 1` was
   * the latest then) has closed, then once per closed ledger (and at least every `maxWait`), until the deadline.
   */
  async function confirmLoop(s: SettlementRecord, attempt: AttemptRecord, lease: ChannelLease, latestAtSubmit: number): Promise<SettleOutcome> {
    let final = false;
    try {
      const deadline = Date.now() + deps.confirmTimeoutMs;
      const maxWait = Math.max(deps.pollMs, 1000);
      let seen = latestAtSubmit;
      for (;;) {
        seen = await ledgerAfter(attempt.network, seen, Math.min(maxWait, Math.max(1, deadline - Date.now())));
        let state: 'settled' | 'failed' | 'pending' = 'pending';
        try {
          state = await confirmOnce(s, attempt, seen > 0 ? seen : undefined);
        } catch {
          state = 'pending'; // RPC hiccup: ask again; the worker finishes it if this process gives up
        }
        if (state !== 'pending') final = true;
        if (state !== 'pending' || Date.now() > deadline) break;
      }
    } finally {
      // With a final answer recorded, the channel was freed with it (only the heartbeat stops and waiting settles are
      // woken); otherwise a no-op while the transaction is pinned to the lease (the worker records the answer later).
      await lease.release({ freed: final }).catch(() => undefined);
    }
    const out = await outcomeOf(attempt.id);
    if (!out) throw new Error('settlement record vanished');
    return out;
  }

  /** Submits; a transport error means the RPC may or may not have taken it: 'unknown' (never resubmitted). */
  async function submitOnce(network: string, envelopeXdr: string): Promise<SubmitResult | { status: 'UNKNOWN' }> {
    try {
      return await deps.ledger.submit(network, envelopeXdr);
    } catch {
      return { status: 'UNKNOWN' };
    }
  }

  async function submitClaimed(
    attempt: AttemptRecord,
    preparing: Promise<PreparedSettlement | { error: string }>,
    terms: ResourceTermsRef | null,
    lease: ChannelLease,
  ): Promise<SettleOutcome> {
    let leaseHandedOver = false;
    let recorded = false;
    try {
      await deps.afterClaim?.(attempt.id);
      const prepared = await preparing;
      if ('error' in prepared) {
        await deps.repo.failClaimedAttempt(attempt.id, 'SETTLEMENT_FAILED', shortReason(prepared.error));
        deps.events.submissionFailed(attempt.network, 'simulation');
        throw new DomainError('SETTLEMENT_FAILED', `The settlement transaction could not be built: ${shortReason(prepared.error)}`);
      }
      // What the pending settlement and its receipt share: the money moved, the hash, and that it is not final yet.
      const unconfirmed = {
        paymentAttemptId: attempt.id,
        transactionHash: prepared.hash,
        ledger: null,
        network: attempt.network,
        amount: attempt.amount,
        assetCode: attempt.assetCode,
        assetIssuer: attempt.assetIssuer,
        status: 'pending' as const,
        evidence: 'pending_settlement' as const,
        settledAt: null,
        createdAt: new Date(),
      };
      const settlement: SettlementRecord = { ...unconfirmed, id: newId('settlement'), channelAccount: prepared.channel };
      const receipt: ReceiptRecord = {
        ...unconfirmed,
        id: newId('receipt'),
        settlementId: settlement.id,
        // The receipt pins the resource version whose terms this payment was checked against; an uncataloged x402
        // payment (no resource) has none: its own verified terms are what was settled.
        resourceId: terms?.id ?? null,
        sellerId: terms?.sellerId ?? null,
        versionId: terms?.versionId ?? null,
        failureCode: null,
        failureReason: null,
      };
      // Crash safety: the record (with the hash) exists before the transaction can reach the ledger.
      if (!(await deps.repo.insertPendingSettlement(settlement, receipt, lease.token))) {
        throw new DomainError('SETTLEMENT_FAILED', 'The settlement was abandoned before submission; sign a new payment');
      }
      recorded = true;
      // The latest ledger this process knew before submitting: the transaction can only be in a later one.
      const latestAtSubmit = watched.get(attempt.network)?.latest ?? 0;
      let sent = await submitOnce(attempt.network, prepared.envelopeXdr);
      // TRY_AGAIN_LATER means the RPC did not take it: resubmitting the same envelope (same hash) is safe.
      for (let i = 0; sent.status === 'TRY_AGAIN_LATER' && i < MAX_TRY_AGAIN; i++) {
        await sleep(Math.max(deps.pollMs, 100));
        sent = await submitOnce(attempt.network, prepared.envelopeXdr);
      }
      if (sent.status === 'ERROR' || sent.status === 'TRY_AGAIN_LATER') {
        await deps.repo.finalizeFailed(settlement.id, 'SETTLEMENT_FAILED', shortReason(sent.reason));
        deps.events.submissionFailed(attempt.network, sent.reason);
        throw new DomainError('SETTLEMENT_FAILED', `The settlement transaction was rejected: ${shortReason(sent.reason)}`);
      }
      // UNKNOWN (the RPC failed while we submitted): it may have been taken. Never resubmitted: the settlement stays
      // pending and the confirmation (here, then the worker) learns its fate from the ledger; the answer is 202.
      if (sent.status === 'UNKNOWN') deps.events.submissionFailed(attempt.network, 'unknown');
      await deps.afterSubmit?.(prepared.hash);
      const confirmation = confirmLoop(settlement, attempt, lease, latestAtSubmit);
      leaseHandedOver = true;
      const pending: SettleOutcome = { status: 'settlement_pending', settlement, receipt };
      let timer: NodeJS.Timeout | undefined;
      const waited = await Promise.race([
        confirmation,
        new Promise<SettleOutcome>((resolve) => {
          timer = setTimeout(() => resolve(pending), deps.confirmWaitMs);
        }),
      ]);
      clearTimeout(timer);
      if (waited === pending) confirmation.catch(() => undefined);
      return waited;
    } catch (err) {
      // Nothing reached the ledger before the pending settlement was recorded: the claim ends settlement_failed now
      // (and if even that write fails, the cleanup worker does it later).
      if (!recorded) {
        const reason = err instanceof DomainError ? err.message : 'the settlement was interrupted before submission';
        await deps.repo.failClaimedAttempt(attempt.id, 'SETTLEMENT_FAILED', shortReason(reason)).catch(() => undefined);
      }
      throw err;
    } finally {
      if (!leaseHandedOver) await lease.release().catch(() => undefined);
    }
  }

  /** The resource version the payment is settled against: the one verified with, else the current one. */
  async function termsFor(attempt: AttemptRecord, resource: ResourceTermsRef): Promise<ResourceTermsRef> {
    if (!attempt.versionId) return resource;
    const pinned = await deps.repo.versionTerms(attempt.versionId);
    if (!pinned || pinned.id !== resource.id) throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The payment attempt was verified for another resource');
    return pinned;
  }

  /**
   * resourceId is required by POST /v1/settle (its handler always passes one). The x402 face passes null for a URL
   * that is not cataloged: when neither the request nor the attempt names a resource, the resource-terms checks are
   * skipped and the attempt's own verified terms (amount, asset, payTo of the verified authorization) are settled.
   */
  async function settle(input: { paymentAttemptId: string; paymentPayload: PaymentPayloadInput; resourceId?: string | null }): Promise<SettleOutcome> {
    const payload = input.paymentPayload;
    const attempt = await deps.repo.findAttempt(input.paymentAttemptId);
    if (!attempt) throw new DomainError('NOT_FOUND', `No payment attempt with id ${input.paymentAttemptId}`);
    const parsed = parseAuthorization(payload.authorization.format, payload.authorization.xdr);
    const hash = paymentHash(parsed.entryXdr);
    if (hash !== attempt.paymentHash) {
      const others = await deps.repo.findByHash(hash);
      if (others.some((o) => o.id !== attempt.id && o.status !== 'verification_failed' && o.status !== 'created')) {
        throw new DomainError('REPLAY_DETECTED', 'This authorization belongs to another payment attempt');
      }
      throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The payload is not the one verified for this payment attempt');
    }
    if (
      payload.network !== attempt.network ||
      payload.payTo !== attempt.payTo ||
      payload.asset.code !== attempt.assetCode ||
      payload.asset.issuer !== attempt.assetIssuer ||
      toStroops(payload.amount) !== toStroops(attempt.amount) ||
      payload.expiresAtLedger !== attempt.expiresAtLedger
    ) {
      throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The payload terms differ from the verified payment attempt');
    }
    const resourceId = input.resourceId ?? attempt.resourceId ?? null;
    let terms: ResourceTermsRef | null = null;
    if (resourceId) {
      const resource = await deps.resourceById(resourceId);
      if (!resource) throw new DomainError('RESOURCE_NOT_FOUND', `No resource with id ${resourceId}`);
      if (attempt.resourceId && attempt.resourceId !== resource.id) throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The payment attempt was verified for another resource');
      // The receipt is evidence that THIS resource's terms were paid: network, recipient, asset and amount of the
      // version it pins must all be the attempt's.
      terms = await termsFor(attempt, resource);
      if (terms.network !== attempt.network || terms.payTo !== attempt.payTo) throw new DomainError('RECIPIENT_MISMATCH', 'The resource is paid to another recipient');
      if (terms.assetCode !== attempt.assetCode || terms.assetIssuer !== attempt.assetIssuer) throw new DomainError('ASSET_MISMATCH', 'The resource is priced in another asset');
      if (toStroops(terms.amount) !== toStroops(attempt.amount)) {
        throw new DomainError('AMOUNT_MISMATCH', `The payment amount ${attempt.amount} differs from the resource price ${terms.amount}`);
      }
    }

    refuseUnlessVerified(attempt);
    const net = deps.networks.get(attempt.network);
    if (!net) throw new DomainError('UNSUPPORTED_NETWORK', `Network ${attempt.network} is not supported`);
    if (!deps.networks.settlementEnabled(attempt.network)) throw new DomainError('SERVICE_UNAVAILABLE', `Settlement is not enabled on ${attempt.network}`);
    if (!verifyAuthorizationSignature(parsed, net.passphrase)) throw new DomainError('INVALID_SIGNATURE', 'The authorization signature does not verify for the payer');
    const latest = await deps.ledger.latestLedger(attempt.network);
    try {
      checkNotExpired(attempt.expiresAtLedger, latest);
    } catch (err) {
      await deps.repo.expireAttempt(attempt.id, (err as Error).message);
      throw err;
    }
    // A channel first (none free: 503, the attempt stays verified). While waiting, a settle whose attempt was claimed
    // by another (or is no longer verified) stops with that attempt's refusal instead of queueing for a channel.
    let lastRead = Date.now();
    waitingAttempts.set(attempt.id, (waitingAttempts.get(attempt.id) ?? 0) + 1);
    let lease: ChannelLease;
    try {
      lease = await deps.channels.acquire(attempt.network, {
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
    // The transaction is prepared (read-only: the channel's sequence number and a simulation) while the claim runs;
    // nothing is recorded or submitted unless the claim is won.
    const preparing = deps.ledger.prepareSettlement(attempt.network, lease, parsed.entryXdr);
    preparing.catch(() => undefined); // awaited (and its error handled) only by the claim's winner
    // One winner across every process; everyone else (concurrent or later) is refused and gives its channel back.
    let claimed = false;
    try {
      claimed = await deps.repo.claimForSettlement(attempt.id, terms);
    } finally {
      if (!claimed) await lease.release().catch(() => undefined);
    }
    if (!claimed) throw replayed(attempt);
    return submitClaimed(attempt, preparing, terms, lease);
  }

  return { settle, confirmOnce };
}

export type SettlePayment = ReturnType<typeof createSettlePayment>;
