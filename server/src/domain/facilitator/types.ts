import type { SettlementFees } from './settlement-fees';
import type { PaymentAttempt } from '../payments/types';
import type { EvidenceLabel } from '../payments/types';
import type { xdr } from '@stellar/stellar-sdk';
import type { ErrorCode } from '../errors';
import type { SimulationOutcome } from './rules/simulation';
import type { Stroops } from '../amount';
import type { AssetContractId } from '../network-registry';

export type { SimulationOutcome };

/** Records and ports of the facilitator. Domain code talks only to these; data/ and ledger/ implement them. */
export type { EvidenceLabel } from '../payments/types';

export interface AttemptRecord extends PaymentAttempt {
  nonce: string;
}

/** A new attempt row: the attempt's fields as recorded at verify, with its nonce and signed authorization. */
export interface NewAttempt extends Omit<PaymentAttempt, 'status' | 'failureCode' | 'createdAt' | 'updatedAt'> {
  nonce: string;
  status: 'verified' | 'verification_failed';
  failureCode: ErrorCode | null;
  authorizationXdr: string;
}

export type SettlementStatus = 'pending' | 'settled' | 'failed';

export interface SettlementRecord {
  id: string;
  paymentAttemptId: string;
  transactionHash: string;
  ledger: number | null;
  network: string;
  amount: Stroops;
  assetCode: string;
  assetIssuer: string;
  status: SettlementStatus;
  evidence: EvidenceLabel;
  channelAccount: string | null;
  settledAt: Date | null;
  createdAt: Date;
  /** The transaction's time bound: once a ledger closed past it, a transaction the ledger never saw cannot land. */
  validUntil?: Date | null;
  /** The channel account's sequence number the transaction uses. */
  txSequence?: string | null;
  /** The seller accountable for the settlement (its fees are counted against that seller). */
  sellerId?: string | null;
  /** The most the transaction could cost in fees, stroops (committed against the seller's fee budget). */
  maxFee?: bigint | null;
  /** The inclusion fee bid and the simulated resource fee, stroops, and the getFeeStats percentile bid at (evidence).
   * */
  inclusionFee?: bigint | null;
  resourceFee?: bigint | null;
  feePercentile?: string | null;
  /** What the ledger charged, stroops, once final (read back; written when the fee is spent). */
  feeCharged?: bigint | null;
  /** The payer and the anonymous client address the fee was also committed against (issue #29). */
  feePayer?: string | null;
  feeClient?: string | null;
  /** The RPC's history no longer covers the transaction's window: an operator must reconcile it. */
  needsReconciliation?: boolean;
}

/** A receipt: the settlement's ledger facts (as in SettlementRecord), what was bought and why it failed. */
export interface ReceiptRecord extends Pick<
  SettlementRecord,
  | 'paymentAttemptId'
  | 'transactionHash'
  | 'ledger'
  | 'network'
  | 'amount'
  | 'assetCode'
  | 'assetIssuer'
  | 'status'
  | 'evidence'
  | 'settledAt'
> {
  id: string;
  settlementId: string;
  resourceId: string | null;
  sellerId: string | null;
  versionId: string | null;
  failureCode: ErrorCode | null;
  failureReason: string | null;
  createdAt: Date;
}

/** The terms of a cataloged resource's current version, as verify and settle compare them. */
export interface ResourceTermsRef {
  id: string;
  sellerId: string;
  versionId: string;
  network: string;
  payTo: string;
  assetCode: string;
  assetIssuer: string;
  /** The current price (the row's NUMERIC, read once by the repository). */
  amount: Stroops;
}

/** Payment attempts (data/attempt-repository.ts). Every state change is a compare-and-set on the current status. */
export interface AttemptRepository {
  findAttempt(id: string): Promise<AttemptRecord | null>;
  /** Inserts a verified attempt; on a replay answers the id of the attempt holding the authorization (null if gone).
   * `deferCommit` (verify only: the record moves no money): the commit need not wait for its WAL flush, so a crash of
   * the database may lose it (server/README.md "Verify's commits"); settle's own record is always flushed.
   * `termsGuard` (verify): a record linked to a resource is inserted only while that resource is active with the
   * record's version and terms, in the same statement; otherwise nothing is inserted and, when no attempt holds the
   * authorization, the answer says `termsChanged`. */
  insertVerifiedAttempt(
    a: NewAttempt,
    opts?: { deferCommit?: boolean; termsGuard?: boolean },
  ): Promise<{ attempt: AttemptRecord } | { replayOf: string | null; termsChanged?: true }>;
  /** The attempt that holds the replay key (network, payer, nonce), among attempts that verified. */
  findByReplayKey(network: string, payer: string, nonce: string): Promise<AttemptRecord | null>;
  findByHash(paymentHash: string): Promise<AttemptRecord[]>;
  /** Inserts; answers 'replay' when the unique replay index already holds (network, payer, nonce). */
  insertAttempt(a: NewAttempt): Promise<'inserted' | 'replay'>;
  /** Compare-and-set verified -> settlement_pending (and fills the resource when it was null); true for the one winner.
   * */
  claimForSettlement(
    id: string,
    resource: ResourceTermsRef | null,
    sellerId: string,
    payerTurnSince: Date,
  ): Promise<'claimed' | 'lost' | 'payer_busy'>;
  /** The database's time now, and whether the payer has a settlement in flight (claimed, not final) for this asset on
   * this network. */
  payerTurn(
    network: string,
    payer: string,
    assetCode: string,
    assetIssuer: string,
  ): Promise<{ at: Date; busy: boolean }>;
  /** verified -> expired with AUTH_EXPIRED. */
  expireAttempt(id: string, reason: string): Promise<void>;
  /** settlement_pending -> settlement_failed before any transaction was submitted (no settlement row). */
  failClaimedAttempt(id: string, code: ErrorCode, reason: string): Promise<void>;
  /**
   * settlement_pending attempts with no settlement row whose claim is older than `olderThanSeconds` ->
   * settlement_failed. Safe: the settlement row is written before any submission, so none of them reached the ledger.
   */
  failAbandonedClaims(olderThanSeconds: number, limit: number): Promise<number>;
  /** verified attempts of the network with expiresAtLedger < latestLedger -> expired. */
  expireStale(network: string, latestLedger: number): Promise<number>;
}

/** Settlements and the sellers' fee accounting (data/settlement-repository.ts). */
export interface SettlementRepository {
  /**
   * Writes the pending settlement and pending receipt in one transaction, before submission, and pins the channel
   * lease (token) to the transaction hash. False (nothing written) when the attempt is no longer settlement_pending
   * (the cleanup worker failed a claim it judged abandoned): the caller must then not submit.
   */
  insertPendingSettlement(s: SettlementRecord, r: ReceiptRecord, leaseToken: string | null): Promise<boolean>;
  /** pending -> settled for settlement, attempt and receipt in one transaction; false when it was already final. */
  finalizeSettled(settlementId: string, ledger: number, settledAt: Date, evidence: EvidenceLabel): Promise<boolean>;
  /** pending -> failed for settlement, attempt (settlement_failed) and receipt (failed_settlement). */
  finalizeFailed(settlementId: string, code: ErrorCode, reason: string): Promise<boolean>;
  /** Marks a pending settlement whose window the RPC no longer covers for reconciliation, and frees its channel. */
  markReconciliation(settlementId: string): Promise<boolean>;
  findSettlementByAttempt(attemptId: string): Promise<SettlementRecord | null>;
  findSettlementByHash(hash: string): Promise<SettlementRecord | null>;
  findSettlement(id: string): Promise<SettlementRecord | null>;
  pendingSettlements(olderThanSeconds: number, limit: number): Promise<SettlementRecord[]>;
  /**
   * Commits `fee` stroops against the seller's fees of today (UTC) on the network, only while committed + spent +
   * fee stays within `budget` (null: no budget). Compare-and-set: false (nothing written) when it would not.
   */
  reserveFees(
    parties: FeeParties,
    network: string,
    fee: bigint,
    budgets: FeeBudgets,
  ): Promise<{ exhausted: FeeScope | null; globalUsed: bigint | null }>;
  /** The first budget of these parties already spent today (checked before a settle queues), or null. */
  exhaustedFeeBudget(parties: FeeParties, network: string, budgets: FeeBudgets): Promise<FeeScope | null>;
  /** Gives back a reservation whose settlement was never recorded. */
  releaseFees(parties: FeeParties, network: string, fee: bigint): Promise<void>;
  /**
   * A final answer's fee: the settlement's committed maximum becomes what it cost (`charged`; 0 if never included),
   * spent by the payer, its client address and the global figure, and by the seller unless `chargeTo` is 'payer'
   * (a failure the payer caused).
   */
  settleFee(settlementId: string, charged: bigint, chargeTo?: 'seller' | 'payer'): Promise<void>;
  /** Fees per seller and network for one UTC day (YYYY-MM-DD), and the settlements awaiting reconciliation. */
  sellerFees(day: string): Promise<{
    items: Array<{
      sellerId: string;
      network: string;
      committedStroops: string;
      spentStroops: string;
      settlements: number;
    }>;
    needingReconciliation: number;
  }>;
}

/** Receipts (data/receipt-repository.ts). */
export interface ReceiptRepository {
  findReceipt(id: string): Promise<ReceiptRecord | null>;
  findReceiptByAttempt(attemptId: string): Promise<ReceiptRecord | null>;
  /** Settled attempts whose receipt is missing or not settled. */
  settledWithoutSettledReceipt(limit: number): Promise<Array<{ attempt: AttemptRecord; settlement: SettlementRecord }>>;
  /** Creates or updates the receipt of a settled settlement to settled (idempotent). */
  upsertSettledReceipt(attempt: AttemptRecord, settlement: SettlementRecord, versionId: string | null): Promise<void>;
}

/** The catalog's terms as payments look them up (data/resource-repository.ts, createResourceTermsRepository). */
export interface ResourceTermsRepository {
  /** The current terms of an active resource; null when unknown. */
  resourceRef(id: string): Promise<ResourceTermsRef | null>;
  /**
   * The active resource of the seller paid at `payTo` whose URL (or route template) matches `url` (null when none or
   * ambiguous), and whether the URL is cataloged on the network with another payTo (a payment naming it must not
   * be settled on a stranger's terms).
   */
  findResourceByUrl(
    network: string,
    payTo: string,
    url: string,
  ): Promise<{ resource: ResourceTermsRef | null; listedWithOtherPayTo: boolean }>;
  /** The version of a resource that was current at `at` (for receipts written after the fact). */
  versionAt(resourceId: string, at: Date): Promise<string | null>;
}

/**
 * A process's cache of catalog terms by resource id (data/resource-repository.ts `cachedResourceTerms`). Only verify's
 * recorded path reads it, and only because its insert checks the terms again (insertVerifiedAttempt's termsGuard).
 */
export interface CachedTerms {
  resourceRef(id: string): Promise<ResourceTermsRef | null>;
  forget(id: string): void;
}

/**
 * The shared channel pool's lease table (data/channel-lease-repository.ts). A free row is one with no holder (or an
 * expired holder) and no pinned transaction.
 */
export interface ChannelLeaseRepository {
  register(network: string, addresses: string[]): Promise<void>;
  /** Takes a free channel among `addresses` for `ttlSeconds`; null when all are busy. */
  take(network: string, addresses: string[], token: string, ttlSeconds: number): Promise<string | null>;
  renew(network: string, address: string, token: string, ttlSeconds: number): Promise<void>;
  /** Frees the lease unless a transaction is pinned to it (finalizeSettled/finalizeFailed free those). */
  release(network: string, address: string, token: string): Promise<void>;
  /** Busy channels of the network (held or pinned), for the metric. */
  busy(network: string): Promise<number>;
  /**
   * Takes a free channel among `addresses` for `claim.party` unless that party (its seller, payer or client) already
   * holds its cap of the network's busy channels, counted across every process under the network's row locks.
   */
  takeFor(
    network: string,
    addresses: string[],
    token: string,
    ttlSeconds: number,
    claim: LeaseClaim | null,
  ): Promise<LeaseTake>;
}

/** Fair capacity: who a lease is for and how many busy channels of the network each of its parties may hold. */
export interface LeaseClaim {
  party: SettleParty;
  caps: Record<PartyKind, number>;
}

export type PartyKind = 'seller' | 'payer' | 'client';

/** A lease taken, or why not: no channel free ('pool'), or the party kind that holds its cap already. */
export type LeaseTake = { address: string } | { address: null; full: 'pool' | PartyKind };

/** Ledger port (see ledger/soroban-ledger.ts). */
export interface AssetRef {
  code: string;
  issuer: string;
  contractId: AssetContractId;
}

export type SubmitResult =
  { status: 'PENDING' | 'DUPLICATE' } | { status: 'ERROR' | 'TRY_AGAIN_LATER'; reason: string };

/** What the RPC's history covers when it answers (getTransaction reports it with every status). */
export interface LedgerWindow {
  latestLedger: number;
  /** Close time of the latest ledger. */
  latestLedgerCloseTime: Date;
  /** The oldest ledger the RPC still keeps transactions of, and its close time. */
  oldestLedger: number;
  oldestLedgerCloseTime: Date;
}

export type TransactionState =
  | { status: 'SUCCESS'; ledger: number; closedAt: Date; feeCharged: bigint | null }
  | { status: 'FAILED'; ledger: number; reason: string; feeCharged: bigint | null }
  | ({ status: 'NOT_FOUND' } & Partial<LedgerWindow>);

export interface PreparedSettlement {
  hash: string;
  envelopeXdr: string;
  /** The channel account (source) that signed it. */
  channel: string;
  /** The transaction's time bound (maxTime): after a ledger closes past it, it can never be included. */
  validUntil: Date;
  /** The channel account's sequence number the transaction uses. */
  sequence: string;
  /** The most it can cost in fees (inclusion + resource fee, fee-bump included), stroops. */
  maxFee: bigint;
  /** The inclusion bid (getFeeStats percentile) and the simulated resource fee it carries (settlement-fees.ts). */
  fees?: SettlementFees;
  /** The simulation it was assembled from (settle checks its events like verify does). */
  simulation: SimulationOutcome;
}

export interface ChannelLease {
  address: string;
  /** Identifies this lease in the shared lease table (null for leases that are not stored). */
  token: string | null;
  /**
   * Gives the channel back unless a transaction is pinned to it (then the ledger's final answer frees it). `freed`:
   * that final answer was just recorded (the channel is free already): only the holder's bookkeeping is left.
   */
  release(opts?: { freed?: boolean }): Promise<void>;
  /** Extends the lease's expiry while its holder still works with it. */
  renew(): Promise<void>;
}

export interface LedgerPort {
  latestLedger(network: string): Promise<number>;
  /**
   * One simulateTransaction (enforce mode) of the host function with the signed auth entries, from `source` (a
   * facilitator account: the transaction we would submit), against the current ledger state.
   */
  simulate(
    network: string,
    hostFunction: xdr.HostFunction,
    auth: xdr.SorobanAuthorizationEntry[],
    source: string,
  ): Promise<SimulationOutcome>;
  /** Builds, simulates and signs the transfer from the leased channel account; the signed auth entry is kept as is. */
  prepareSettlement(
    network: string,
    lease: ChannelLease,
    entryXdr: string,
  ): Promise<PreparedSettlement | { error: string; simulation?: SimulationOutcome }>;
  submit(network: string, envelopeXdr: string): Promise<SubmitResult>;
  /** An account's current sequence number; null when the account does not exist. */
  accountSequence(network: string, address: string): Promise<bigint | null>;
  transaction(network: string, hash: string): Promise<TransactionState>;
}

/** The budgets a sponsored fee is charged against (issue #29). */
export type FeeScope = 'seller' | 'payer' | 'client' | 'global';

/** The parties of one settlement's fee: the accountable seller, the payer, the caller's address (null: not counted). */
export interface FeeParties {
  sellerId: string;
  payer: string;
  client: string | null;
}

/** Daily fee budgets in stroops per UTC day and network; null = unlimited (an explicit choice: 0 in configuration). */
export type FeeBudgets = Record<FeeScope, bigint | null>;

/** Who a settle is for: the parties a channel or queue place is charged to (fair capacity, issue #29). */
export interface SettleParty {
  sellerId: string;
  payer: string;
  /** The caller's address (anonymous callers), or `key:<sellerId>` / `operator` for a keyed caller. */
  client: string;
}

export interface AcquireOptions {
  /** Runs between two tries while every channel is busy; throwing stops the wait with that error. */
  whileWaiting?(): Promise<void>;
  /** Who the channel is for: channels and queue places are shared fairly per seller, payer and client. */
  party?: SettleParty;
  /** The payment attempt settled: duplicates of one payment waiting together take one queue place. */
  attemptId?: string;
}

export interface ChannelLeaser {
  /** A free channel, waiting a bounded time for one; SERVICE_UNAVAILABLE (with Retry-After) when none frees up. */
  acquire(network: string, opts?: AcquireOptions): Promise<ChannelLease>;
}
