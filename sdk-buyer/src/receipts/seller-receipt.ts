/**
 * The SELLER's receipt (the seller says: this payer paid and was served), in the x402 offer-and-receipt format:
 * `{format: "jws", signature}` whose JWS payload is `{version: 1, network, resourceUrl, payer, issuedAt,
 * transaction?}` plus the terms paid, `{scheme, amount, asset, payTo}` (as in the spec's signed offer), signed with
 * the seller's own receipt key, published at `GET /v1/sellers/{sellerId}/receipt-keys` (a JWK Set).
 * `verifySellerReceipt` checks the signature AND that the receipt states what the buyer paid: the network, the URL it
 * called (the seller signs its configured URL, possibly a route template that the called URL fits), the amount, the
 * asset, the payTo (and the payer and transaction when given). A receipt that names other terms, or none, does not
 * verify. The marketplace's own signed document is the attestation (./attestation.ts); neither replaces the ledger.
 * One source: sdk-buyer/src/receipts, copied into sdk-seller/src/receipts by scripts/generate.mjs.
 */
import type { JSONWebKeySet } from 'jose';
import { verifyJws, type SignedDocumentCheck } from './jws.js';

export interface SellerReceiptPayload {
  version: number;
  network: string;
  /** The resource URL the seller configured (a route template such as `https://shop.example/items/{id}` stays one). */
  resourceUrl: string;
  payer: string;
  issuedAt: number;
  transaction?: string;
  scheme?: string;
  /** Atomic units (stroops). */
  amount?: string;
  /** The asset's contract id (C...). */
  asset?: string;
  payTo?: string;
}

/** What the buyer paid, that a seller receipt must state (PaidFetchResult.receiptTerms has it after payAndFetch). */
export interface SellerReceiptExpectation {
  network: string;
  /** The URL the buyer called: the receipt's `resourceUrl` is it, or the seller's route template that it fits. */
  url: string;
  /** Atomic units (stroops), e.g. "500000" for 0.05. */
  amount: string;
  /** The asset's contract id (C...). */
  asset: string;
  payTo: string;
  payer?: string;
  transaction?: string;
}

export function isSellerReceipt(p: unknown): p is SellerReceiptPayload {
  const o = p as Record<string, unknown> | null;
  return (
    !!o &&
    o.version === 1 &&
    typeof o.network === 'string' &&
    typeof o.resourceUrl === 'string' &&
    typeof o.payer === 'string' &&
    typeof o.issuedAt === 'number' &&
    (o.transaction === undefined || typeof o.transaction === 'string') &&
    ['scheme', 'amount', 'asset', 'payTo'].every((f) => o[f] === undefined || typeof o[f] === 'string')
  );
}

/**
 * Verifies a seller's offer-and-receipt receipt (`{format: "jws", signature}` or the JWS itself) against the
 * seller's published receipt keys (GET /v1/sellers/{sellerId}/receipt-keys), offline, and that it states the terms
 * the buyer paid (`expected`; `terms_mismatch` names the first field that differs, or that is missing, as in
 * receipts signed before the terms were added). The marketplace's keys do not verify it: only the seller's do.
 */
export async function verifySellerReceipt(
  receipt: unknown,
  sellerJwks: JSONWebKeySet,
  expected: SellerReceiptExpectation,
): Promise<SignedDocumentCheck<SellerReceiptPayload>> {
  const r = receipt as { format?: unknown; signature?: unknown } | null;
  const jws = typeof receipt === 'string' ? receipt : r && r.format === 'jws' ? r.signature : null;
  const checked = await verifyJws(jws, sellerJwks, null, isSellerReceipt);
  if (!checked.valid) return checked;
  const problem = sellerReceiptTermsProblem(checked.payload, expected);
  return problem ? { valid: false, reason: 'terms_mismatch', ...problem } : checked;
}

/** The first field where a seller receipt does not state what the buyer paid, or null. */
export function sellerReceiptTermsProblem(
  p: SellerReceiptPayload,
  expected: SellerReceiptExpectation,
): { field: string; message: string } | null {
  const differs = (field: string, got: unknown, want: string) => ({
    field,
    message:
      `the receipt says ${field} ${got === undefined ? '(none)' : JSON.stringify(got)}, the buyer paid ` +
      `${JSON.stringify(want)}`,
  });
  if (p.network !== expected.network) return differs('network', p.network, expected.network);
  if (!urlFitsTemplate(p.resourceUrl, expected.url)) return differs('resourceUrl', p.resourceUrl, expected.url);
  if (p.amount !== expected.amount) return differs('amount', p.amount, expected.amount);
  if (p.asset !== expected.asset) return differs('asset', p.asset, expected.asset);
  if (p.payTo !== expected.payTo) return differs('payTo', p.payTo, expected.payTo);
  if (p.scheme !== undefined && p.scheme !== 'exact') return differs('scheme', p.scheme, 'exact');
  if (expected.payer !== undefined && p.payer !== expected.payer) return differs('payer', p.payer, expected.payer);
  if (expected.transaction !== undefined && p.transaction !== expected.transaction)
    return differs('transaction', p.transaction, expected.transaction);
  return null;
}

/**
 * Whether `called` is `configured`, or fits it as a route template: same origin, same number of path segments,
 * every literal segment equal and every `{param}` segment non-empty (a configured query must be equal too).
 */
export function urlFitsTemplate(configured: string, called: string): boolean {
  if (configured === called) return true;
  let t: URL;
  let c: URL;
  try {
    t = new URL(configured);
    c = new URL(called);
  } catch {
    return false;
  }
  if (t.origin !== c.origin || (t.search && t.search !== c.search)) return false;
  const ts = t.pathname.split('/');
  const cs = c.pathname.split('/');
  return (
    ts.length === cs.length &&
    ts.every((seg, i) => (/^%7B[A-Za-z0-9_]+%7D$/i.test(seg) ? cs[i].length > 0 : seg === cs[i]))
  );
}

/** The seller receipt in a settlement response (`extensions["offer-receipt"].info.receipt`), when there is one. */
export function sellerReceiptOf(settlement: unknown): { format: 'jws'; signature: string } | null {
  const ext = (settlement as { extensions?: Record<string, unknown> } | null)?.extensions?.['offer-receipt'] as
    { info?: { receipt?: unknown } } | undefined;
  const r = ext?.info?.receipt as { format?: unknown; signature?: unknown } | undefined;
  return r && r.format === 'jws' && typeof r.signature === 'string' ? { format: 'jws', signature: r.signature } : null;
}
