import { DomainError, type ErrorCode } from '../errors';
import { newId } from '../ids';
import { paymentHash } from './payment-hash';
import { RULES } from './rules/catalog';
import { ensure } from './rules/rule';
import { simulationErrorCode } from './rules/simulation';
import type { CheckedPayment, RequiredTerms } from './rules/offline';
import { checkPayment, type CheckDeps, type PaymentPayloadInput, type PaymentRequirementsInput } from './check-payment';
import type {
  AttemptRecord,
  AttemptRepository,
  CachedTerms,
  NewAttempt,
  ResourceTermsRef,
  ResourceTermsRepository,
} from './types';
import type { SellerRepository } from '../sellers/types';
import type { Principal } from '../auth/principal';
import { findAccountableParty, requireSellerAsked, type AccountableParty, type CatalogDeps } from './catalog-terms';

export type { AssetInput, NetworkLookup, PaymentPayloadInput, PaymentRequirementsInput } from './check-payment';
export { resolveAsset } from './check-payment';

export interface FacilitatorEvents {
  /** Called for every failed check (metrics). */
  failed(operation: 'verify' | 'settle', network: string, code: ErrorCode): void;
}

export interface VerifyDeps extends CheckDeps {
  /** The process's cache of catalog terms by resource id (data/resource-repository.ts); none: every verify reads. */
  cachedTerms?: CachedTerms;
  attempts: Pick<AttemptRepository, 'insertVerifiedAttempt' | 'findByReplayKey' | 'insertAttempt'>;
  /** The current terms of a cataloged resource (by id, or by URL for the seller paid); null when unknown. */
  resources: Pick<ResourceTermsRepository, 'resourceRef' | 'findResourceByUrl'>;
  sellers: Pick<SellerRepository, 'sellerIdByWallet'>;
  events: FacilitatorEvents;
}

export interface PaymentInput {
  paymentPayload: PaymentPayloadInput;
  paymentRequirements: PaymentRequirementsInput;
  resourceId?: string;
  /** Who asks (an anonymous verify of an uncataloged URL is attributed to no seller). */
  principal?: Principal;
}

/** Simulation errors that the host raises after the payer's authorization was checked: the payer really signed. */
const AFTER_AUTH: ReadonlySet<ErrorCode> = new Set(['INSUFFICIENT_BALANCE', 'TRUSTLINE_REQUIRED']);

/**
 * POST /v1/verify and /x402/verify: the x402 `exact` Stellar rules (check-payment.ts), the catalog's terms
 * (catalog-terms.ts), the accountable seller, and (on /v1 only) the record. A valid verify costs one RPC call (the
 * simulation, whose latest ledger serves the expiry window) and,
 * besides the resource/seller lookup that runs during the simulation, one SQL statement: the insert that claims
 * the authorization (the unique replay index decides across processes: any later verify of it is REPLAY_DETECTED).
 * It commits without waiting for its WAL flush (it moves no money; server/README.md "Verify's commits").
 *
 * Failures are recorded only when the payer's signature is proven (the simulation got past its authorization) and
 * the payment is for a cataloged resource: an anonymous caller cannot write into a seller's payment list with
 * made-up signatures. Every failure is counted by code (metric).
 */
export function createVerifyPayment(deps: VerifyDeps) {
  /** The catalog's terms from the process's cache, for a verify whose record's insert checks them (termsGuard). */
  const cachedDeps: CatalogDeps | null = deps.cachedTerms
    ? { ...deps, resources: { ...deps.resources, resourceRef: deps.cachedTerms.resourceRef } }
    : null;

  async function run(input: PaymentInput, persist: boolean): Promise<AttemptRecord | NewAttempt> {
    const { paymentPayload: payload, paymentRequirements: req } = input;
    // What the check learned on its way, for the record of a failure (proven: the payer really signed).
    const seen: Seen = { party: null, proven: null, resource: null, cached: false };
    try {
      const check = await checkPayment(deps, payload, req, {
        async beforeSimulation() {
          // The resource and seller are looked up during the simulation, looked at after it (contract order of errors).
          seen.party = partyOf(deps, cachedDeps, input, persist, seen);
          seen.party.catch(() => undefined);
        },
        async afterSimulation(checked, required, simulation) {
          if (simulation.error === null || AFTER_AUTH.has(simulationErrorCode(simulation.error)))
            seen.proven = { checked, required };
          // A payment already verified or settled (its nonce consumed on the ledger) is a replay, whatever the ledger
          // says.
          if (
            simulation.error !== null &&
            (await deps.attempts.findByReplayKey(required.network, checked.payer, checked.nonce))
          ) {
            throw new DomainError('REPLAY_DETECTED', 'This authorization was already used');
          }
          seen.resource = (await seen.party!).resource;
          return seen.resource !== null;
        },
      });
      const { checked, required } = check!;
      const found = await seen.party!;
      ensure(RULES.payeeIsSeller, found.sellerId !== null, NOBODY_ACCOUNTABLE);
      // /x402 verify answers what /x402 settle would: an uncataloged URL needs the payTo seller's key there too.
      if (!persist) {
        requireSellerAsked(seen.resource, found.sellerId!, input.principal);
        return attemptRecord(newId('payment'), checked, required, seen.resource ?? { sellerId: found.attributed });
      }
      return await claim(deps, input, { checked, required, found }, seen);
    } catch (err) {
      if (err instanceof DomainError) {
        deps.events.failed('verify', payload.network, err.code);
        // (most refusals, an invalid signature among them, have nothing proven to record: no call, no await)
        if (
          persist &&
          seen.proven &&
          seen.resource &&
          err.code !== 'REPLAY_DETECTED' &&
          err.code !== 'SERVICE_UNAVAILABLE'
        )
          await recordFailure(deps, input, seen, err);
      }
      throw err;
    }
  }

  return {
    /** /v1/verify: checks and records the verified attempt (the unique replay index claims the authorization). */
    verify: (input: PaymentInput) => run(input, true) as Promise<AttemptRecord>,
    /** /x402/verify: the same checks, nothing recorded (settle records the attempt when it claims it). */
    check: (input: PaymentInput) => run(input, false),
  };
}

/** A recorded verify's catalog terms are re-read at most this many times when they change under it. */
const MAX_TERMS_TRIES = 3;
const NOBODY_ACCOUNTABLE = 'The payTo belongs to no signed-up seller: nobody accountable asked for this payment';

/** What a verify learned on its way (for its record, and the record of a failure). */
interface Seen {
  party: Promise<AccountableParty> | null;
  proven: { checked: CheckedPayment; required: RequiredTerms } | null;
  resource: ResourceTermsRef | null;
  /** The party's terms came from the cache. */
  cached: boolean;
}

interface Passed {
  checked: CheckedPayment;
  required: RequiredTerms;
  found: AccountableParty;
}

/**
 * The accountable party. A recorded verify (/v1) of a resource named by id reads its terms from the cache: its
 * insert checks them (termsGuard), and when the cached terms refuse the payment they are read again and the
 * payment judged on those (no refusal, and no pass, is ever decided on cached terms alone).
 */
async function partyOf(
  deps: VerifyDeps,
  cachedDeps: CatalogDeps | null,
  input: PaymentInput,
  persist: boolean,
  seen: Seen,
): Promise<AccountableParty> {
  if (persist && cachedDeps && input.resourceId) {
    try {
      const party = await findAccountableParty(cachedDeps, input);
      seen.cached = true;
      return party;
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      deps.cachedTerms!.forget(input.resourceId);
    }
  }
  seen.cached = false;
  return findAccountableParty(deps, input);
}

/**
 * Claims the authorization with the verified record. The insert checks that the resource still has the record's
 * terms (termsGuard): when they changed since they were read (or cached), the payment is judged again on the fresh
 * terms and claimed with them; a resource whose terms keep changing is answered 503 after MAX_TERMS_TRIES.
 */
async function claim(deps: VerifyDeps, input: PaymentInput, passed: Passed, seen: Seen): Promise<AttemptRecord> {
  let found = passed.found;
  for (let tries = 1; ; tries += 1) {
    const { checked, required } = passed;
    const record = attemptRecord(newId('payment'), checked, required, found.resource ?? { sellerId: found.attributed });
    const claimed = await deps.attempts.insertVerifiedAttempt(record, { deferCommit: true, termsGuard: true });
    if ('attempt' in claimed) return claimed.attempt;
    if (!claimed.termsChanged) {
      throw new DomainError(
        'REPLAY_DETECTED',
        'This authorization was already used',
        claimed.replayOf ? [{ field: 'paymentAttemptId', message: claimed.replayOf }] : [],
      );
    }
    if (input.resourceId) deps.cachedTerms?.forget(input.resourceId);
    if (tries >= MAX_TERMS_TRIES) {
      throw new DomainError('SERVICE_UNAVAILABLE', "The resource's terms changed during this verify; retry", [], {
        'Retry-After': '1',
      });
    }
    seen.cached = false;
    seen.resource = null; // the terms it was judged on are gone: a refusal below is not recorded against them
    found = await findAccountableParty(deps, input); // the catalog's refusal when the payment no longer matches
    seen.resource = found.resource;
    ensure(RULES.payeeIsSeller, found.sellerId !== null, NOBODY_ACCOUNTABLE);
  }
}

/** The record of a refused payment whose payer really signed, for a cataloged resource (its terms read fresh when
 * they came from the cache: a record is never linked to terms the resource no longer has). */
async function recordFailure(deps: VerifyDeps, input: PaymentInput, seen: Seen, err: DomainError): Promise<void> {
  const { proven } = seen;
  if (!proven) return;
  const resource = seen.cached
    ? await findAccountableParty(deps, input).then(
        (p) => p.resource,
        () => null,
      )
    : seen.resource;
  if (!resource) return;
  await deps.attempts
    .insertAttempt(attemptRecord(newId('payment'), proven.checked, proven.required, resource, err))
    .catch(() => undefined);
}

/** The attempt row of a checked payment: verified, or verification_failed with the refusal. */
export function attemptRecord(
  id: string,
  checked: CheckedPayment,
  required: RequiredTerms,
  resource: { id?: string; versionId?: string; sellerId: string | null },
  failure: DomainError | null = null,
): NewAttempt {
  return {
    id,
    resourceId: resource.id ?? null,
    versionId: resource.versionId ?? null,
    sellerId: resource.sellerId,
    paymentHash: paymentHash(checked.entryXdr),
    network: required.network,
    payer: checked.payer,
    nonce: checked.nonce,
    assetCode: required.asset.code,
    assetIssuer: required.asset.issuer,
    amount: checked.amount,
    payTo: checked.to,
    status: failure ? 'verification_failed' : 'verified',
    failureCode: failure?.code ?? null,
    failureReason: failure ? failure.message.slice(0, 500) : null,
    expiresAtLedger: Math.max(1, checked.signatureExpirationLedger),
    authorizationXdr: checked.entryXdr,
  };
}
