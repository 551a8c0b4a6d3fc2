import { DomainError, type ErrorCode } from '../errors';
import { newId } from '../ids';
import { paymentHash } from './payment-hash';
import { RULES } from './rules/catalog';
import { ensure } from './rules/rule';
import { simulationErrorCode } from './rules/simulation';
import type { CheckedPayment, RequiredTerms } from './rules/offline';
import { checkPayment, type CheckDeps, type PaymentPayloadInput, type PaymentRequirementsInput } from './check-payment';
import type { AttemptRecord, AttemptRepository, NewAttempt, ResourceTermsRef, ResourceTermsRepository } from './types';
import type { SellerRepository } from '../sellers/types';
import type { Principal } from '../auth/principal';
import { findAccountableParty, requireSellerAsked, type AccountableParty } from './catalog-terms';

export type { AssetInput, NetworkLookup, PaymentPayloadInput, PaymentRequirementsInput } from './check-payment';
export { resolveAsset } from './check-payment';

export interface FacilitatorEvents {
  /** Called for every failed check (metrics). */
  failed(operation: 'verify' | 'settle', network: string, code: ErrorCode): void;
}

export interface VerifyDeps extends CheckDeps {
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
  async function run(input: PaymentInput, persist: boolean): Promise<AttemptRecord | NewAttempt> {
    const { paymentPayload: payload, paymentRequirements: req } = input;
    // What the check learned on its way, for the record of a failure (proven: the payer really signed).
    const seen: {
      party: Promise<AccountableParty> | null;
      proven: { checked: CheckedPayment; required: RequiredTerms } | null;
      resource: ResourceTermsRef | null;
    } = { party: null, proven: null, resource: null };
    try {
      const check = await checkPayment(deps, payload, req, {
        async beforeSimulation() {
          // The resource and seller are looked up during the simulation, looked at after it (contract order of errors).
          seen.party = findAccountableParty(deps, input);
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
      const resource = seen.resource;
      ensure(
        RULES.payeeIsSeller,
        found.sellerId !== null,
        'The payTo belongs to no signed-up seller: nobody accountable asked for this payment',
      );
      // /x402 verify answers what /x402 settle would: an uncataloged URL needs the payTo seller's key there too.
      if (!persist) requireSellerAsked(resource, found.sellerId!, input.principal);
      const record = attemptRecord(
        newId('payment'),
        checked,
        required,
        resource ?? { sellerId: found.attributed },
        null,
      );
      if (!persist) return record;
      const claimed = await deps.attempts.insertVerifiedAttempt(record, { deferCommit: true });
      if ('replayOf' in claimed) {
        throw new DomainError(
          'REPLAY_DETECTED',
          'This authorization was already used',
          claimed.replayOf ? [{ field: 'paymentAttemptId', message: claimed.replayOf }] : [],
        );
      }
      return claimed.attempt;
    } catch (err) {
      if (err instanceof DomainError) {
        deps.events.failed('verify', payload.network, err.code);
        const { proven, resource } = seen;
        if (persist && proven && resource && err.code !== 'REPLAY_DETECTED' && err.code !== 'SERVICE_UNAVAILABLE') {
          await deps.attempts
            .insertAttempt(attemptRecord(newId('payment'), proven.checked, proven.required, resource, err))
            .catch(() => undefined);
        }
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

/** The attempt row of a checked payment: verified, or verification_failed with the refusal. */
export function attemptRecord(
  id: string,
  checked: CheckedPayment,
  required: RequiredTerms,
  resource: { id?: string; versionId?: string; sellerId: string | null },
  failure: DomainError | null,
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
