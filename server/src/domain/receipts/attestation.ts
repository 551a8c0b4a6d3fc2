/**
 * GENERATED FILE: DO NOT EDIT. Source: sdk-buyer/src/receipts/attestation.ts, copied by scripts/generate.mjs.
 * Change the source and run `npm run generate` (`npm run check:generated` fails when this copy differs).
 */
/**
 * The facilitator's ATTESTATION, one definition for the server that signs it and the SDKs that check it (one source:
 * sdk-buyer/src/receipts, copied into sdk-seller/src/receipts and server/src/domain/receipts by
 * scripts/generate.mjs). The marketplace says: this transaction moved `amount` of `asset` from `payer` to `payTo` in
 * `ledger`. A compact JWS, protected header `{alg: "EdDSA", kid, typ: "x402-facilitator-attestation"}`, payload the
 * JCS canonical JSON of `{kind: "facilitator-attestation", version: 1, network, transaction, ledger, asset, amount,
 * payer, payTo, issuedAt, resource?, fees?}`; the keys are the marketplace's `GET /.well-known/jwks.json`.
 *
 * The seller's own receipts are another document (./seller-receipt.ts), and neither replaces the ledger:
 * `verifyReceiptOnLedger` checks the transfer itself.
 */
import type { JSONWebKeySet } from 'jose';
import { decodeJwsPayload, verifyJws, type SignedDocumentCheck } from './jws.js';

export type { SignedDocumentCheck } from './jws.js';

/** The protected header's `typ` of an attestation. */
export const ATTESTATION_TYPE = 'x402-facilitator-attestation';
/** The payload's `kind` and `version`. */
export const ATTESTATION_KIND = 'facilitator-attestation';
export const ATTESTATION_VERSION = 1;

/** What the facilitator attests: only what it verified on the ledger (the payload without `kind` and `version`). */
export interface AttestationClaims {
  /** The x402 network id, e.g. stellar:testnet. */
  network: string;
  /** The settlement transaction's hash (hex) and the ledger that included it. */
  transaction: string;
  ledger: number;
  /** The SEP-41 asset contract (C...) and the amount in its atomic units (stroops), as a decimal string. */
  asset: string;
  amount: string;
  payer: string;
  payTo: string;
  /** Unix seconds: when the settlement was confirmed. */
  issuedAt: number;
  /** The cataloged resource paid for; absent when the URL is not in the catalog. */
  resource?: { id: string; url: string };
  /**
   * The fees the settlement transaction bid (stroops, decimal strings): the inclusion fee (the getFeeStats Soroban
   * inclusion fee at `percentile`, capped) and the resource fee its settle-time simulation asked (capped). Absent for
   * settlements recorded before they were kept.
   */
  fees?: { inclusion: string; resource: string; percentile: string };
}

/** The signed payload. */
export interface AttestationPayload extends AttestationClaims {
  kind: typeof ATTESTATION_KIND;
  version: typeof ATTESTATION_VERSION;
}

/** The payload of `claims`, as the facilitator signs it. */
export function attestationPayload(claims: AttestationClaims): AttestationPayload {
  return { kind: ATTESTATION_KIND, version: ATTESTATION_VERSION, ...claims };
}

const isString = (v: unknown): v is string => typeof v === 'string';

/** Whether `p` is an attestation payload (the optional `resource` and `fees` checked when present). */
export function isAttestation(p: unknown): p is AttestationPayload {
  const o = p as Record<string, unknown> | null;
  if (!o || typeof o !== 'object') return false;
  const resource = o.resource as Record<string, unknown> | undefined;
  const fees = o.fees as Record<string, unknown> | undefined;
  return (
    o.kind === ATTESTATION_KIND &&
    o.version === ATTESTATION_VERSION &&
    ['network', 'transaction', 'asset', 'payer', 'payTo'].every((f) => isString(o[f])) &&
    typeof o.ledger === 'number' &&
    isString(o.amount) &&
    /^\d+$/.test(o.amount) &&
    typeof o.issuedAt === 'number' &&
    (resource === undefined || (!!resource && isString(resource.id) && isString(resource.url))) &&
    (fees === undefined || (!!fees && ['inclusion', 'resource', 'percentile'].every((f) => isString(fees[f]))))
  );
}

/** The claims of an attestation WITHOUT checking its signature (use verifyAttestation for that), or null. */
export function attestationClaims(jws: unknown): AttestationPayload | null {
  const p = decodeJwsPayload(jws);
  return isAttestation(p) ? p : null;
}

/** Verifies the facilitator's attestation against the marketplace's JWK Set (GET /.well-known/jwks.json), offline. */
export function verifyAttestation(
  jws: unknown,
  marketplaceJwks: JSONWebKeySet,
): Promise<SignedDocumentCheck<AttestationPayload>> {
  return verifyJws(jws, marketplaceJwks, ATTESTATION_TYPE, isAttestation);
}

/** The marketplace's attestation in a settlement response (`extensions.marketplace.attestation`), when there is one. */
export function attestationOf(settlement: unknown): string | null {
  const s = settlement as { extensions?: { marketplace?: { attestation?: unknown } }; attestation?: unknown } | null;
  const jws = s?.extensions?.marketplace?.attestation ?? s?.attestation;
  return typeof jws === 'string' ? jws : null;
}
