/**
 * @deprecated The service no longer signs this format: it signs facilitator ATTESTATIONS (verifyAttestation in
 * ./attestation.ts), and sellers sign their own offer-and-receipt receipts (verifySellerReceipt). Kept for receipts
 * signed before.
 *
 * Offline verification of the marketplace's signed receipts (one source: sdk-buyer/src/receipts, copied into
 * sdk-seller/src/receipts as generated code by scripts/generate.mjs).
 *
 * A signed receipt is a compact JWS in the format of the x402 offer-and-receipt extension: protected header
 * `{alg: "EdDSA", kid}`, payload `{version, network, resourceUrl, payer, issuedAt, transaction}`. The keys are the
 * service's JWK Set (`GET /.well-known/jwks.json`); fetch it once and keep it: verification needs no network.
 */
import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from 'jose';

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

const MAX_JWS_LENGTH = 8192;

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
  if (typeof jws !== 'string' || jws.length > MAX_JWS_LENGTH || jws.split('.').length !== 3)
    return { valid: false, reason: 'malformed' };
  let result;
  try {
    result = await compactVerify(jws, createLocalJWKSet(jwks), { algorithms: ['EdDSA'] });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_JWKS_NO_MATCHING_KEY' || code === 'ERR_JWKS_MULTIPLE_MATCHING_KEYS')
      return { valid: false, reason: 'unknown_key' };
    if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') return { valid: false, reason: 'bad_signature' };
    return { valid: false, reason: 'malformed' };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder().decode(result.payload));
  } catch {
    return { valid: false, reason: 'bad_payload' };
  }
  if (!isPayload(payload)) return { valid: false, reason: 'bad_payload' };
  return { valid: true, kid: String(result.protectedHeader.kid ?? ''), payload };
}
