/**
 * @deprecated The service no longer signs this format: it signs facilitator ATTESTATIONS (verifyAttestation in
 * ./attestation.ts), and sellers sign their own offer-and-receipt receipts (verifySellerReceipt). Kept for receipts
 * signed before.
 *
 * Offline verification of the marketplace's earlier signed receipts, through the one JWS check (./jws.ts) (one
 * source: sdk-buyer/src/receipts, copied into sdk-seller/src/receipts as generated code by scripts/generate.mjs).
 *
 * A signed receipt is a compact JWS in the format of the x402 offer-and-receipt extension: protected header
 * `{alg: "EdDSA", kid}`, payload `{version, network, resourceUrl, payer, issuedAt, transaction}`. The keys are the
 * service's JWK Set (`GET /.well-known/jwks.json`); fetch it once and keep it: verification needs no network.
 */
import type { JSONWebKeySet } from 'jose';
import { verifyJws } from './jws.js';

export interface SignedReceiptPayload {
  version: number;
  network: string;
  resourceUrl: string;
  payer: string;
  /** Unix seconds. */
  issuedAt: number;
  transaction: string;
}

export type ReceiptVerification =
  | { valid: true; kid: string; payload: SignedReceiptPayload }
  | { valid: false; reason: 'malformed' | 'unknown_key' | 'bad_signature' | 'bad_payload' };

function isPayload(p: unknown): p is SignedReceiptPayload {
  if (!p || typeof p !== 'object') return false;
  const o = p as Record<string, unknown>;
  return (
    typeof o.version === 'number' &&
    typeof o.network === 'string' &&
    typeof o.resourceUrl === 'string' &&
    typeof o.payer === 'string' &&
    typeof o.issuedAt === 'number' &&
    typeof o.transaction === 'string'
  );
}

/** Verifies a signed receipt against a JWK Set, offline. Never throws for a bad receipt: it says why. */
export async function verifyReceiptSignature(jws: string, jwks: JSONWebKeySet): Promise<ReceiptVerification> {
  // Any header typ (these receipts had none), so never wrong_type; no terms are compared, so never terms_mismatch.
  return (await verifyJws(jws, jwks, null, isPayload)) as ReceiptVerification;
}
