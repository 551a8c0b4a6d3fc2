import { readObservation, type ObservationOutcome } from '../../domain/discovery/bazaar';
import {
  identifierScope,
  type IdentifiedOperation,
  type PaymentIdentifierKey,
  type PaymentIdentifiers,
} from '../../domain/facilitator/payment-identifier';
import type { Principal } from '../../domain/auth/principal';
import type { X402Payload, X402Requirements } from './translate';

/**
 * x402 extension outcomes (coinbase/x402 specs/extensions/bazaar.md, "Verify and Settlement Response Header"): the
 * `EXTENSION-RESPONSES` header, base64 of a JSON object keyed by extension name. `bazaar`: `success` (cataloged:
 * learned now, or already in the catalog), `processing` (verify: the discovery info validates and is learned when the
 * payment settles; settle: answered `settlement_pending`, learned with the final answer), `rejected` with
 * `rejectedReason`. A payload without the extension gets no key; a failed payment no outcome at all.
 */
export type ExtensionResponses = Record<
  string,
  { status: 'success' | 'processing' | 'rejected'; rejectedReason?: string }
>;

export const EXTENSION_RESPONSES_HEADER = 'EXTENSION-RESPONSES';

export function bazaarAtVerify(
  payload: X402Payload,
  requirements: X402Requirements,
  payer: string | undefined,
): ExtensionResponses {
  const ext = payload.extensions?.bazaar;
  if (ext === undefined || ext === null) return {};
  const read = readObservation({
    network: requirements.network,
    payTo: requirements.payTo,
    payer: payer ?? '',
    resourceUrl: payload.resource?.url,
    bazaarExtension: ext,
    amount: String(requirements.amount),
    asset: requirements.asset,
    transaction: '',
  });
  return { bazaar: read.ok ? { status: 'processing' } : { status: 'rejected', rejectedReason: read.reason } };
}

export function bazaarAtSettle(outcome: ObservationOutcome | 'pending' | undefined): ExtensionResponses {
  if (outcome === 'pending') return { bazaar: { status: 'processing' } };
  if (!outcome || outcome.status === 'ignored') return {};
  if (outcome.status === 'rejected') return { bazaar: { status: 'rejected', rejectedReason: outcome.reason } };
  return { bazaar: { status: 'success' } };
}

/** The header for these outcomes (none when empty). */
export function extensionResponsesHeader(r: ExtensionResponses): Record<string, string> {
  return Object.keys(r).length === 0
    ? {}
    : { [EXTENSION_RESPONSES_HEADER]: Buffer.from(JSON.stringify(r), 'utf8').toString('base64') };
}

/** The payment-identifier key of an x402 verify or settle request (null: no id), scoped to who asks and the payer. */
export function paymentIdentifierKey(
  identifiers: PaymentIdentifiers | undefined,
  operation: IdentifiedOperation,
  body: { paymentPayload: unknown; paymentRequirements: unknown },
  caller: { principal: Principal; clientAddress: string },
  /** The payer the payload's transaction names (translate.ts decodeX402: decoded once per request). */
  payer: string | undefined,
): PaymentIdentifierKey | null {
  if (!identifiers) return null;
  const payload = body.paymentPayload as X402Payload;
  const req = body.paymentRequirements as X402Requirements;
  const p = caller.principal;
  const scope = identifierScope(
    {
      sellerId: p.role === 'seller' ? p.sellerId : null,
      operator: p.role === 'operator',
      clientAddress: caller.clientAddress,
    },
    payer,
  );
  const terms = {
    scheme: req.scheme,
    network: req.network,
    asset: req.asset,
    amount: String(req.amount),
    payTo: req.payTo,
    resource: payload.resource?.url ?? null,
  };
  return identifiers.keyOf(operation, payload.extensions, scope, terms, body.paymentPayload);
}
