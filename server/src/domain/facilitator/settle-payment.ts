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
  ReceiptRecord,
  ResourceTermsRef,
  SettlementRecord,
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

/**
 * POST /v1/settle. Re-verifies the payload against the stored attempt, claims it with a compare-and-set (one winner
 * across all processes), builds the transfer from a channel account, writes the pending settlement (hash known
 * before submission) and only then submits. Losers of the claim wait for the winner's outcome.
 */
export function createSettlePayment(deps: SettleDeps) {
  /** Settles claimed in this process, so concurrent callers await the winner instead of polling the database. */
  const inFlight = new Map<string, Promise<SettleOutcome>>();

  async function outcomeOf(attemptId: string): Promise<SettleOutcome | null> {
    const settlement = await deps.repo.findSettlementByAttempt(attemptId);
    if (!settlement) return null;
    const receipt = await deps.repo.findReceiptByAttempt(attemptId);
    if (!receipt) return null;
    if (settlement.status === 'failed') throw new DomainError('SETTLEMENT_FAILED', `The settlement transaction failed: ${receipt.failureReason ?? 'failed on the ledger'}`);
    return { status: settlement.status === 'settled' ? 'settled' : 'settlement_pending', settlement, receipt };
  }

  /** Waits for another caller's settlement of this attempt (in this process or another). */
  async function awaitWinner(attemptId: string): Promise<SettleOutcome> {
    const local = inFlight.get(attemptId);
    if (local) return local;
    const started = Date.now();
    for (;;) {
      const out = await outcomeOf(attemptId);
      if (out && (out.status === 'settled' || Date.now() - started >= deps.confirmWaitMs)) return out;
      if (!out) {
        const attempt = await deps.repo.findAttempt(attemptId);
        if (attempt?.status === 'settlement_failed') {
          throw new DomainError('SETTLEMENT_FAILED', `The settlement transaction could not be submitted: ${attempt.failureReason ?? 'unknown reason'}`);
        }
        if (Date.now() - started > Math.max(deps.confirmWaitMs, 10_000)) {
          throw new DomainError('SERVICE_UNAVAILABLE', 'This payment is being settled by another request; retry shortly');
        }
      }
      await sleep(deps.pollMs);
    }
  }

  /** Asks the ledger once about a pending settlement and records a final answer. Never resubmits. */
  async function confirmOnce(s: SettlementRecord, attempt?: AttemptRecord | null): Promise<'settled' | 'failed' | 'pending'> {
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
      const latest = await deps.ledger.latestLedger(s.network);
      if (latest > a.expiresAtLedger) {
        if (await deps.repo.finalizeFailed(s.id, 'SETTLEMENT_FAILED', 'transaction not found on the ledger after the authorization expired')) {
          deps.events.submissionFailed(s.network, 'not_found_after_expiry');
        }
        return 'failed';
      }
    }
    return 'pending';
  }

  async function confirmLoop(s: SettlementRecord, attempt: AttemptRecord, lease: ChannelLease): Promise<SettleOutcome> {
    try {
      const deadline = Date.now() + deps.confirmTimeoutMs;
      for (;;) {
        let state: 'settled' | 'failed' | 'pending' = 'pending';
        try {
          state = await confirmOnce(s, attempt);
        } catch {
          state = 'pending'; // RPC hiccup: ask again; the worker finishes it if this process gives up
        }
        if (state !== 'pending' || Date.now() > deadline) break;
        await sleep(deps.pollMs);
      }
    } finally {
      lease.release();
    }
    const out = await outcomeOf(attempt.id);
    if (!out) throw new Error('settlement record vanished');
    return out;
  }

  async function submitClaimed(attempt: AttemptRecord, entryXdr: string, resource: ResourceTermsRef): Promise<SettleOutcome> {
    const lease = await deps.channels.acquire(attempt.network);
    let leaseHandedOver = false;
    try {
      const prepared = await deps.ledger.prepareSettlement(attempt.network, lease, entryXdr);
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
        resourceId: resource.id,
        sellerId: resource.sellerId,
        versionId: resource.versionId,
        failureCode: null,
        failureReason: null,
      };
      // Crash safety: the record (with the hash) exists before the transaction can reach the ledger.
      await deps.repo.insertPendingSettlement(settlement, receipt);
      let sent = await deps.ledger.submit(attempt.network, prepared.envelopeXdr);
      // TRY_AGAIN_LATER means the RPC did not take it: resubmitting the same envelope (same hash) is safe.
      for (let i = 0; sent.status === 'TRY_AGAIN_LATER' && i < 10; i++) {
        await sleep(Math.max(deps.pollMs, 100));
        sent = await deps.ledger.submit(attempt.network, prepared.envelopeXdr);
      }
      if (sent.status === 'ERROR' || sent.status === 'TRY_AGAIN_LATER') {
        await deps.repo.finalizeFailed(settlement.id, 'SETTLEMENT_FAILED', shortReason(sent.reason));
        deps.events.submissionFailed(attempt.network, sent.reason);
        throw new DomainError('SETTLEMENT_FAILED', `The settlement transaction was rejected: ${shortReason(sent.reason)}`);
      }
      await deps.afterSubmit?.(prepared.hash);
      const confirmation = confirmLoop(settlement, attempt, lease);
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
    } finally {
      if (!leaseHandedOver) lease.release();
    }
  }

  async function settle(input: { paymentAttemptId: string; paymentPayload: PaymentPayloadInput; resourceId: string }): Promise<SettleOutcome> {
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
    const resource = await deps.resourceById(input.resourceId);
    if (!resource) throw new DomainError('RESOURCE_NOT_FOUND', `No resource with id ${input.resourceId}`);
    if (attempt.resourceId && attempt.resourceId !== resource.id) throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The payment attempt was verified for another resource');
    if (resource.network !== attempt.network || resource.payTo !== attempt.payTo) throw new DomainError('RECIPIENT_MISMATCH', 'The resource is paid to another recipient');

    switch (attempt.status) {
      case 'verified':
        break;
      case 'settled':
      case 'settlement_pending':
        return awaitWinner(attempt.id);
      case 'settlement_failed':
        throw new DomainError('SETTLEMENT_FAILED', `The settlement failed: ${attempt.failureReason ?? 'unknown reason'}`);
      case 'expired':
        throw new DomainError('AUTH_EXPIRED', 'The authorization expired before settlement');
      case 'replayed':
        throw new DomainError('REPLAY_DETECTED', 'This authorization was settled through another attempt');
      default:
        throw new DomainError('PAYMENT_REQUIRED', 'This payment attempt was never verified');
    }
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
    if (!(await deps.repo.claimForSettlement(attempt.id, resource))) return awaitWinner(attempt.id);
    const running = submitClaimed(attempt, parsed.entryXdr, resource);
    inFlight.set(attempt.id, running);
    try {
      return await running;
    } finally {
      inFlight.delete(attempt.id);
    }
  }

  return { settle, confirmOnce };
}

export type SettlePayment = ReturnType<typeof createSettlePayment>;
