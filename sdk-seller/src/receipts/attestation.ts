/**
 * GENERATED FILE: DO NOT EDIT. Source: sdk-buyer/src/receipts/attestation.ts, copied by scripts/generate.mjs.
 * Change the source and run `npm run generate` (`npm run check:generated` fails when this copy differs).
 */
/**
 * The two signed documents a buyer can check offline, separately:
 *
 * - the facilitator's ATTESTATION (the marketplace says: this transaction moved `amount` of `asset` from `payer` to
 *   `payTo` in `ledger`): compact JWS, header `{alg: "EdDSA", kid, typ: "x402-facilitator-attestation"}`, payload
 *   the JCS canonical JSON of `{kind: "facilitator-attestation", version: 1, network, transaction, ledger, asset,
 *   amount, payer, payTo, issuedAt, resource?}`, keys at the marketplace's `GET /.well-known/jwks.json`;
 * - the SELLER's receipt (the seller says: this payer paid and was served), in the x402 offer-and-receipt format:
 *   `{format: "jws", signature}` whose JWS payload is `{version: 1, network, resourceUrl, payer, issuedAt,
 *   transaction?}`, signed with the seller's own receipt key, published at
 *   `GET /v1/sellers/{sellerId}/receipt-keys` (a JWK Set).
 *
 * Neither replaces the ledger: `verifyReceiptOnLedger` checks the transfer itself.
 */
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from 'jose';

const MAX_JWS_LENGTH = 8192;

export interface AttestationPayload {
  kind: 'facilitator-attestation';
  version: 1;
  network: string;
  transaction: string;
  ledger: number;
  asset: string;
  amount: string;
  payer: string;
  payTo: string;
  issuedAt: number;
  resource?: { id: string; url: string };
}

export interface SellerReceiptPayload {
  version: number;
  network: string;
  resourceUrl: string;
  payer: string;
  issuedAt: number;
  transaction?: string;
}

export type SignedDocumentCheck<P> =
  | { valid: true; kid: string; payload: P }
  | { valid: false; reason: 'malformed' | 'unknown_key' | 'bad_signature' | 'bad_payload' | 'wrong_type' };

function decodePayload(jws: string): unknown {
  try {
    return JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8'));
  } catch {
    return null;
  }
}

/** The claims of an attestation WITHOUT checking its signature (use verifyAttestation for that), or null. */
export function attestationClaims(jws: unknown): AttestationPayload | null {
  if (typeof jws !== 'string' || jws.length > MAX_JWS_LENGTH) return null;
  const p = decodePayload(jws);
  return isAttestation(p) ? p : null;
}

function isAttestation(p: unknown): p is AttestationPayload {
  const o = p as Record<string, unknown> | null;
  return (
    !!o &&
    o.kind === 'facilitator-attestation' &&
    o.version === 1 &&
    typeof o.network === 'string' &&
    typeof o.transaction === 'string' &&
    typeof o.ledger === 'number' &&
    typeof o.asset === 'string' &&
    typeof o.amount === 'string' &&
    /^\d+$/.test(o.amount) &&
    typeof o.payer === 'string' &&
    typeof o.payTo === 'string' &&
    typeof o.issuedAt === 'number'
  );
}

function isSellerReceipt(p: unknown): p is SellerReceiptPayload {
  const o = p as Record<string, unknown> | null;
  return (
    !!o &&
    o.version === 1 &&
    typeof o.network === 'string' &&
    typeof o.resourceUrl === 'string' &&
    typeof o.payer === 'string' &&
    typeof o.issuedAt === 'number' &&
    (o.transaction === undefined || typeof o.transaction === 'string')
  );
}

async function verifyJws<P>(jws: unknown, jwks: JSONWebKeySet, typ: string | null, check: (p: unknown) => p is P): Promise<SignedDocumentCheck<P>> {
  if (typeof jws !== 'string' || jws.length > MAX_JWS_LENGTH || jws.split('.').length !== 3) return { valid: false, reason: 'malformed' };
  try {
    const header = decodeProtectedHeader(jws);
    if (typ !== null && header.typ !== typ) return { valid: false, reason: 'wrong_type' };
  } catch {
    return { valid: false, reason: 'malformed' };
  }
  let result;
  try {
    result = await compactVerify(jws, createLocalJWKSet(jwks), { algorithms: ['EdDSA'] });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_JWKS_NO_MATCHING_KEY' || code === 'ERR_JWKS_MULTIPLE_MATCHING_KEYS') return { valid: false, reason: 'unknown_key' };
    if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') return { valid: false, reason: 'bad_signature' };
    return { valid: false, reason: 'malformed' };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder().decode(result.payload));
  } catch {
    return { valid: false, reason: 'bad_payload' };
  }
  if (!check(payload)) return { valid: false, reason: 'bad_payload' };
  return { valid: true, kid: String(result.protectedHeader.kid ?? ''), payload };
}

/** Verifies the facilitator's attestation against the marketplace's JWK Set (GET /.well-known/jwks.json), offline. */
export function verifyAttestation(jws: unknown, marketplaceJwks: JSONWebKeySet): Promise<SignedDocumentCheck<AttestationPayload>> {
  return verifyJws(jws, marketplaceJwks, 'x402-facilitator-attestation', isAttestation);
}

/**
 * Verifies a seller's offer-and-receipt receipt (`{format: "jws", signature}` or the JWS itself) against the
 * seller's published receipt keys (GET /v1/sellers/{sellerId}/receipt-keys), offline. The marketplace's keys do not
 * verify it: only the seller's do.
 */
export function verifySellerReceipt(receipt: unknown, sellerJwks: JSONWebKeySet): Promise<SignedDocumentCheck<SellerReceiptPayload>> {
  const r = receipt as { format?: unknown; signature?: unknown } | null;
  const jws = typeof receipt === 'string' ? receipt : r && r.format === 'jws' ? r.signature : null;
  return verifyJws(jws, sellerJwks, null, isSellerReceipt);
}

/** The seller receipt in a settlement response (`extensions["offer-receipt"].info.receipt`), when there is one. */
export function sellerReceiptOf(settlement: unknown): { format: 'jws'; signature: string } | null {
  const ext = (settlement as { extensions?: Record<string, unknown> } | null)?.extensions?.['offer-receipt'] as { info?: { receipt?: unknown } } | undefined;
  const r = ext?.info?.receipt as { format?: unknown; signature?: unknown } | undefined;
  return r && r.format === 'jws' && typeof r.signature === 'string' ? { format: 'jws', signature: r.signature } : null;
}

/** The marketplace's attestation in a settlement response (`extensions.marketplace.attestation`), when there is one. */
export function attestationOf(settlement: unknown): string | null {
  const s = settlement as { extensions?: { marketplace?: { attestation?: unknown } }; attestation?: unknown } | null;
  const jws = s?.extensions?.marketplace?.attestation ?? s?.attestation;
  return typeof jws === 'string' ? jws : null;
}
