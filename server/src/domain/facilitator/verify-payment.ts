import { DomainError, type ErrorCode } from '../errors';
import { isAmount, normalizeAmount, toStroops } from '../amount';
import { newId } from '../ids';
import { parseAuthorization, verifyAuthorizationSignature, type ParsedAuthorization } from './authorization';
import { paymentHash } from './payment-hash';
import { MAX_TIMEOUT_SECONDS } from '../catalog/resource-service';
import type { AssetRef, AttemptRecord, Holding, LedgerPort, NewAttempt, PaymentRepository, ResourceTermsRef } from './types';

/**
 * Faster paths a ledger adapter or repository may offer (SorobanLedger and the PostgreSQL payment repository do);
 * verify falls back to the LedgerPort / PaymentRepository calls when they are absent (test doubles).
 */
interface RecentLedgerSource {
  recentLatestLedger(network: string): Promise<{ sequence: number; ageMs: number; marginLedgers: number }>;
  holdings(network: string, accounts: string[], asset: AssetRef): Promise<Holding[]>;
}
interface VerifiedAttemptWriter {
  insertVerifiedAttempt(a: NewAttempt): Promise<{ attempt: AttemptRecord } | { replayOf: string | null }>;
  dropVerifiedAttempt(id: string): Promise<void>;
}
const hasRecentLedger = (l: LedgerPort): l is LedgerPort & RecentLedgerSource =>
  typeof (l as Partial<RecentLedgerSource>).recentLatestLedger === 'function' && typeof (l as Partial<RecentLedgerSource>).holdings === 'function';
const hasVerifiedWriter = (r: PaymentRepository): r is PaymentRepository & VerifiedAttemptWriter =>
  typeof (r as Partial<VerifiedAttemptWriter>).insertVerifiedAttempt === 'function';

/** The expiry and validity-window checks at one candidate latest ledger: the error they throw, or null. */
function expiryOutcome(expiresAtLedger: number, latestLedger: number, maxTimeoutSeconds: number | undefined, resourceKnown: boolean): DomainError | null {
  try {
    checkNotExpired(expiresAtLedger, latestLedger);
    checkValidityWindow(expiresAtLedger, latestLedger, maxTimeoutSeconds, resourceKnown);
    return null;
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
}

export interface AssetInput {
  code: string;
  issuer: string;
}

export interface PaymentPayloadInput {
  scheme: string;
  network: string;
  asset: AssetInput;
  amount: string;
  payTo: string;
  expiresAtLedger: number;
  authorization: { format: string; xdr: string; payer?: string };
}

export interface PaymentRequirementsInput {
  scheme: string;
  network: string;
  amount: string;
  payTo: string;
  asset?: AssetInput;
  resource?: string;
  maxTimeoutSeconds?: number;
}

/** maxTimeoutSeconds assumed when the requirements carry none (the catalog's announced value). */
export const DEFAULT_MAX_TIMEOUT_SECONDS = MAX_TIMEOUT_SECONDS;
/** No authorization may stay valid longer than this, whatever the requirements say. */
export const MAX_TIMEOUT_CAP_SECONDS = 3600;
/**
 * Ledger close time the validity window is converted with: the fastest a Stellar client estimates (x402 clients
 * round their estimate up to whole seconds), so a client following maxTimeoutSeconds is never refused.
 */
export const MIN_LEDGER_CLOSE_SECONDS = 1;

/**
 * Fails with INVALID_PAYMENT_PAYLOAD when the authorization stays valid longer than the requirements allow:
 * expiresAtLedger - latest ledger must be at most ceil(maxTimeoutSeconds / MIN_LEDGER_CLOSE_SECONDS).
 */
export function checkValidityWindow(expiresAtLedger: number, latestLedger: number, maxTimeoutSeconds: number | undefined, resourceKnown: boolean): void {
  let limit = Math.min(maxTimeoutSeconds ?? DEFAULT_MAX_TIMEOUT_SECONDS, MAX_TIMEOUT_CAP_SECONDS);
  if (resourceKnown) limit = Math.min(limit, MAX_TIMEOUT_SECONDS);
  const maxLedgers = Math.ceil(limit / MIN_LEDGER_CLOSE_SECONDS);
  if (expiresAtLedger - latestLedger > maxLedgers) {
    throw new DomainError(
      'INVALID_PAYMENT_PAYLOAD',
      `The authorization stays valid until ledger ${expiresAtLedger}, more than ${maxLedgers} ledgers after the latest (${latestLedger}): maxTimeoutSeconds is ${limit}`,
    );
  }
}

export interface NetworkLookup {
  get(network: string): { network: string; passphrase: string; assets: AssetRef[] } | undefined;
  asset(network: string, code: string, issuer: string): AssetRef | undefined;
}

export interface FacilitatorEvents {
  /** Called for every failed check (metrics). */
  failed(operation: 'verify' | 'settle', network: string, code: ErrorCode): void;
}

export interface VerifyDeps {
  repo: PaymentRepository;
  ledger: LedgerPort;
  networks: NetworkLookup;
  /** The current terms of a cataloged resource; null when unknown. */
  resourceById(id: string): Promise<ResourceTermsRef | null>;
  events: FacilitatorEvents;
}

export interface VerifiedPayment {
  attempt: AttemptRecord;
}

/** The checks both verify and settle run on a payload, in the contract's order, up to (and including) the signature. */
export function checkPayload(
  networks: NetworkLookup,
  payload: PaymentPayloadInput,
  required: { network: string; amount: string; payTo: string; asset?: AssetInput },
  /** The authorization already parsed from this payload (verify parses it once); parsed here when absent. */
  alreadyParsed?: ParsedAuthorization,
): { parsed: ParsedAuthorization; asset: AssetRef; passphrase: string } {
  // 1. shape (the HTTP validator already checked the JSON schema; here the parts it cannot).
  if (payload.scheme !== 'exact' || required.network === undefined) throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'Only the exact scheme is supported');
  if (!isAmount(payload.amount) || toStroops(payload.amount) <= 0n) throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'amount must be a positive decimal amount');
  // 2. network
  const net = networks.get(payload.network);
  if (!net) throw new DomainError('UNSUPPORTED_NETWORK', `Network ${payload.network} is not supported`);
  if (required.network !== payload.network) {
    if (!networks.get(required.network)) throw new DomainError('UNSUPPORTED_NETWORK', `Network ${required.network} is not supported`);
    throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The payload network differs from the required network');
  }
  // 3. asset
  const asset = networks.asset(payload.network, payload.asset.code, payload.asset.issuer);
  if (!asset) throw new DomainError('UNSUPPORTED_ASSET', `Asset ${payload.asset.code} is not supported on ${payload.network}`);
  const requiredAsset = required.asset ?? net.assets.find((a) => a.code === 'USDC') ?? net.assets[0];
  if (required.asset && !networks.asset(payload.network, required.asset.code, required.asset.issuer)) {
    throw new DomainError('UNSUPPORTED_ASSET', `Asset ${required.asset.code} is not supported on ${payload.network}`);
  }
  // 4. amount, 5. recipient, 6. asset against the requirements
  if (toStroops(payload.amount) !== toStroops(required.amount)) throw new DomainError('AMOUNT_MISMATCH', `The payment amount ${payload.amount} differs from the required ${required.amount}`);
  if (payload.payTo !== required.payTo) throw new DomainError('RECIPIENT_MISMATCH', 'The payment recipient differs from the required payTo');
  if (!requiredAsset || requiredAsset.code !== asset.code || requiredAsset.issuer !== asset.issuer) {
    throw new DomainError('ASSET_MISMATCH', 'The payment asset differs from the required asset');
  }
  // 7. the signed authorization: a single transfer of exactly these terms, signed by the payer
  const parsed = alreadyParsed ?? parseAuthorization(payload.authorization.format, payload.authorization.xdr);
  if (payload.authorization.payer && payload.authorization.payer !== parsed.payer) {
    throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'authorization.payer differs from the address that signed the authorization');
  }
  if (parsed.contractId !== asset.contractId) throw new DomainError('ASSET_MISMATCH', 'The authorized transfer is on another asset contract');
  if (parsed.to !== payload.payTo) throw new DomainError('RECIPIENT_MISMATCH', 'The authorized transfer pays another recipient than payTo');
  if (parsed.amount !== toStroops(payload.amount)) throw new DomainError('AMOUNT_MISMATCH', 'The authorized transfer amount differs from the payment amount');
  if (!verifyAuthorizationSignature(parsed, net.passphrase)) throw new DomainError('INVALID_SIGNATURE', 'The authorization signature does not verify for the payer');
  if (parsed.signatureExpirationLedger !== payload.expiresAtLedger) {
    throw new DomainError('AUTH_EXPIRED', 'The authorization expiration ledger differs from expiresAtLedger');
  }
  return { parsed, asset, passphrase: net.passphrase };
}

/** Fails with AUTH_EXPIRED when the network's latest ledger reached the authorization's expiry. */
export function checkNotExpired(expiresAtLedger: number, latestLedger: number): void {
  if (expiresAtLedger <= latestLedger) {
    throw new DomainError('AUTH_EXPIRED', `The authorization expired at ledger ${expiresAtLedger} (latest ledger ${latestLedger})`);
  }
}

/**
 * Reads the holdings, answering TRUSTLINE_REQUIRED / INSUFFICIENT_BALANCE. Issuers hold unlimited amounts. Both
 * holdings come from one getLedgerEntries call when the adapter offers it.
 */
async function checkLedgerState(ledger: LedgerPort, network: string, asset: AssetRef, payer: string, payTo: string, amount: bigint): Promise<void> {
  const checkPayer = payer !== asset.issuer;
  const checkPayTo = payTo !== asset.issuer && payTo.startsWith('G');
  if (hasRecentLedger(ledger) && checkPayer && checkPayTo) {
    const [payerHolding, payToHolding] = await ledger.holdings(network, [payer, payTo], asset);
    if (!payerHolding.trustline) throw new DomainError('TRUSTLINE_REQUIRED', `The payer has no trustline for ${asset.code}`);
    if (payerHolding.balance < amount) throw new DomainError('INSUFFICIENT_BALANCE', `The payer's ${asset.code} balance is below the amount`);
    if (!payToHolding.trustline) throw new DomainError('TRUSTLINE_REQUIRED', `The recipient has no trustline for ${asset.code}`);
    return;
  }
  if (checkPayer) {
    const payerHolding = await ledger.holding(network, payer, asset);
    if (!payerHolding.trustline) throw new DomainError('TRUSTLINE_REQUIRED', `The payer has no trustline for ${asset.code}`);
    if (payerHolding.balance < amount) throw new DomainError('INSUFFICIENT_BALANCE', `The payer's ${asset.code} balance is below the amount`);
  }
  if (checkPayTo) {
    const payToHolding = await ledger.holding(network, payTo, asset);
    if (!payToHolding.trustline) throw new DomainError('TRUSTLINE_REQUIRED', `The recipient has no trustline for ${asset.code}`);
  }
}

function sameTerms(r: ResourceTermsRef, req: PaymentRequirementsInput): void {
  if (r.network !== req.network) throw new DomainError('UNSUPPORTED_NETWORK', `The resource is sold on ${r.network}, not ${req.network}`);
  if (toStroops(normalizeAmount(r.amount)) !== toStroops(req.amount)) throw new DomainError('AMOUNT_MISMATCH', 'The required amount differs from the resource price');
  if (r.payTo !== req.payTo) throw new DomainError('RECIPIENT_MISMATCH', 'The required payTo differs from the resource payTo');
  if (req.asset && (req.asset.code !== r.assetCode || req.asset.issuer !== r.assetIssuer)) throw new DomainError('ASSET_MISMATCH', 'The required asset differs from the resource asset');
}

/**
 * POST /v1/verify: checks the payload in the contract's order and records the attempt (verified, or
 * verification_failed with the code once the authorization could be read). An authorization is verified once: any
 * later or concurrent verify of it answers REPLAY_DETECTED (the unique replay index decides across processes).
 */
export function createVerifyPayment(deps: VerifyDeps) {
  return async function verify(input: { paymentPayload: PaymentPayloadInput; paymentRequirements: PaymentRequirementsInput; resourceId?: string }): Promise<AttemptRecord> {
    const { paymentPayload: payload, paymentRequirements: req } = input;
    const parsedForRecord = readableAuthorization(deps.networks, payload);
    let resource: ResourceTermsRef | null = null;
    /** The attempt this verify inserted while its ledger check may still fail it. */
    let claimedId: string | null = null;
    try {
      if (req.scheme !== 'exact') throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'Only the exact scheme is supported');
      const { parsed, asset } = checkPayload(deps.networks, payload, req, parsedForRecord?.parsed);
      // The ledger read of step 10 starts now, while the resource terms, the expiry and the replay claim (steps 8-9)
      // are checked, so a verify waits for the longer of the two instead of their sum. Its outcome is looked at only
      // at step 10: an earlier failure still answers first (contract order), and its ledger read is dropped.
      let ledgerState: Promise<void> | null = null;
      if (hasRecentLedger(deps.ledger) && hasVerifiedWriter(deps.repo)) {
        ledgerState = checkLedgerState(deps.ledger, payload.network, asset, parsed.payer, payload.payTo, parsed.amount);
        ledgerState.catch(() => undefined); // handled at step 10, or dropped when an earlier check fails
      }
      if (input.resourceId) {
        resource = await deps.resourceById(input.resourceId);
        if (!resource) throw new DomainError('RESOURCE_NOT_FOUND', `No resource with id ${input.resourceId}`);
        sameTerms(resource, req);
      } else if (req.resource) {
        resource = await deps.repo.findResourceByUrl(req.network, req.payTo, req.resource);
      }
      // 8. ledger expiry and validity window, against the latest ledger kept current (at most 1 s old): decided
      // from it when the answer is the same for every ledger that may be the latest by now, else from the network
      if (hasRecentLedger(deps.ledger)) {
        const recent = await deps.ledger.recentLatestLedger(payload.network);
        const check = (latest: number) => expiryOutcome(payload.expiresAtLedger, latest, req.maxTimeoutSeconds, resource !== null);
        const low = check(recent.sequence);
        const high = check(recent.sequence + recent.marginLedgers);
        if (low && low.code === 'AUTH_EXPIRED') throw low; // expired at the oldest candidate: expired now
        if (low?.code !== high?.code) {
          const exact = check(await deps.ledger.latestLedger(payload.network));
          if (exact) throw exact;
        } else if (high) throw high;
      } else {
        const latest = await deps.ledger.latestLedger(payload.network);
        checkNotExpired(payload.expiresAtLedger, latest);
        checkValidityWindow(payload.expiresAtLedger, latest, req.maxTimeoutSeconds, resource !== null);
      }
      if (hasVerifiedWriter(deps.repo)) {
        // 9. replay state and the record in one statement: the unique replay index lets one verify of an
        // authorization insert its attempt; every other one (concurrent or later) is REPLAY_DETECTED.
        const id = newId('payment');
        const claimed = await deps.repo.insertVerifiedAttempt(verifiedAttempt(id, payload, parsed, asset, resource));
        if ('replayOf' in claimed) {
          throw new DomainError('REPLAY_DETECTED', 'This authorization was already used', claimed.replayOf ? [{ field: 'paymentAttemptId', message: claimed.replayOf }] : []);
        }
        claimedId = id;
        // 10. ledger state; on a failure the attempt just inserted is removed and the failure recorded (catch below)
        await (ledgerState ?? checkLedgerState(deps.ledger, payload.network, asset, parsed.payer, payload.payTo, parsed.amount));
        claimedId = null;
        return claimed.attempt;
      }
      // 9. replay state: one signed payment is verified once. A second verify of the same authorization (or of its
      // nonce) is refused, even while the first attempt is only verified: it buys one delivery. A retry of the same
      // request is answered by the Idempotency-Key replay instead.
      const existing = await deps.repo.findByReplayKey(payload.network, parsed.payer, parsed.nonce);
      if (existing) throw new DomainError('REPLAY_DETECTED', 'This authorization was already used', [{ field: 'paymentAttemptId', message: existing.id }]);
      // 10. ledger state
      await checkLedgerState(deps.ledger, payload.network, asset, parsed.payer, payload.payTo, parsed.amount);
      const id = newId('payment');
      const outcome = await deps.repo.insertAttempt(verifiedAttempt(id, payload, parsed, asset, resource));
      // A concurrent verify of the same authorization won the unique replay index: this one is refused.
      if (outcome === 'replay') throw new DomainError('REPLAY_DETECTED', 'This authorization was already used');
      const created = await deps.repo.findAttempt(id);
      if (!created) throw new Error('attempt vanished after insert');
      return created;
    } catch (err) {
      if (err instanceof DomainError) deps.events.failed('verify', payload.network, err.code);
      // the attempt inserted above leaves (a verified attempt cannot become verification_failed): the failure is
      // recorded below like any other, outside the replay index
      if (claimedId && hasVerifiedWriter(deps.repo)) await deps.repo.dropVerifiedAttempt(claimedId);
      if (err instanceof DomainError && parsedForRecord && err.code !== 'RESOURCE_NOT_FOUND' && err.code !== 'SERVICE_UNAVAILABLE') {
        await recordFailure(deps.repo, payload, parsedForRecord, resource, err);
      }
      throw err;
    }
  };
}

function verifiedAttempt(id: string, payload: PaymentPayloadInput, parsed: ParsedAuthorization, asset: AssetRef, resource: ResourceTermsRef | null): NewAttempt {
  return {
    id,
    resourceId: resource?.id ?? null,
    versionId: resource?.versionId ?? null,
    sellerId: resource?.sellerId ?? null,
    paymentHash: paymentHash(parsed.entryXdr),
    network: payload.network,
    payer: parsed.payer,
    nonce: parsed.nonce,
    assetCode: asset.code,
    assetIssuer: asset.issuer,
    amount: normalizeAmount(payload.amount),
    payTo: payload.payTo,
    status: 'verified',
    failureCode: null,
    failureReason: null,
    expiresAtLedger: payload.expiresAtLedger,
    authorizationXdr: parsed.entryXdr,
  };
}

/** The authorization and asset when they can be read, so that a failed verify can be recorded; else null. */
function readableAuthorization(networks: NetworkLookup, payload: PaymentPayloadInput): { parsed: ParsedAuthorization; asset: AssetRef } | null {
  try {
    const asset = networks.asset(payload.network, payload.asset.code, payload.asset.issuer);
    if (!asset || !isAmount(payload.amount) || toStroops(payload.amount) <= 0n || !Number.isInteger(payload.expiresAtLedger)) return null;
    return { parsed: parseAuthorization(payload.authorization.format, payload.authorization.xdr), asset };
  } catch {
    return null;
  }
}

async function recordFailure(
  repo: PaymentRepository,
  payload: PaymentPayloadInput,
  checked: { parsed: ParsedAuthorization; asset: AssetRef },
  resource: ResourceTermsRef | null,
  err: DomainError,
): Promise<void> {
  // verification_failed attempts are outside the replay index, so recording one never blocks a later valid payment.
  await repo.insertAttempt({
    id: newId('payment'),
    resourceId: resource?.id ?? null,
    versionId: resource?.versionId ?? null,
    sellerId: resource?.sellerId ?? null,
    paymentHash: paymentHash(checked.parsed.entryXdr),
    network: payload.network,
    payer: checked.parsed.payer,
    nonce: checked.parsed.nonce,
    assetCode: checked.asset.code,
    assetIssuer: checked.asset.issuer,
    amount: normalizeAmount(payload.amount),
    payTo: payload.payTo,
    status: 'verification_failed',
    failureCode: err.code,
    failureReason: err.message.slice(0, 500),
    expiresAtLedger: Math.max(1, payload.expiresAtLedger),
    authorizationXdr: checked.parsed.entryXdr,
  });
}
