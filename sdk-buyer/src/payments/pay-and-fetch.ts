/**
 * payAndFetch: call a paid HTTP resource, and when it answers 402, pay within the budget and call again.
 *
 * 1. The request is sent as is. Anything but 402 is returned unpaid.
 * 2. On 402 the requirements are read from the x402 v2 `PAYMENT-REQUIRED` header (base64 JSON), else from a v1
 *    JSON body with `accepts`; the first `exact` Stellar requirement is taken (or the resource's own
 *    `paymentRequirements` when a ResourceDetail was given and the 402 names none).
 * 3. The budget is reserved (BudgetExceededError before anything is signed), the authorization is signed
 *    (see sign-payment.ts) and the request is sent again with `PAYMENT-SIGNATURE` (v2) or `X-PAYMENT` (v1): base64
 *    JSON of our PaymentPayload.
 * 4. The settlement is read from `PAYMENT-RESPONSE` (v2) or `X-PAYMENT-RESPONSE` (v1). Without one no money moved,
 *    so the reservation is released.
 *
 * The request body must be re-sendable (a string, bytes, URLSearchParams or FormData; not a stream).
 */
import { xdr } from '@stellar/stellar-sdk';
import {
  AssetMismatchError,
  assertAssetShown,
  readPaymentRequired,
  fromResourceRequirements,
  type ListedRequirements,
  type NormalizedRequirements,
} from './requirements.js';
import { signPayment, signerPublicKey, type PaymentPayload, type PaymentSigner } from './sign-payment.js';
import { Budget, type Commitment } from './budget.js';
import { toStroops } from '../core/amounts.js';
import type { LedgerReader } from '../core/soroban-rpc.js';
import type { SellerReceiptExpectation } from '../receipts/seller-receipt.js';

export interface PaymentReceiptHeader {
  /** Settlement transaction hash (hex). */
  transactionHash: string;
  receiptId?: string;
  network?: string;
  payer?: string;
  success?: boolean;
  [key: string]: unknown;
}

export interface PaidFetchResult {
  response: Response;
  /** True when a payment was sent and the seller settled it (a receipt header came back). */
  paid: boolean;
  receipt: PaymentReceiptHeader | null;
  /** The payload that was sent, if one was. */
  payment: PaymentPayload | null;
  /** What was asked for, when the first answer was 402. */
  requirements: NormalizedRequirements | null;
  /**
   * What was paid, as a seller receipt must state it: `verifySellerReceipt(sellerReceiptOf(receipt), sellerKeys,
   * receiptTerms)`. Null when nothing was paid.
   */
  receiptTerms: SellerReceiptExpectation | null;
}

/** A 402 the SDK could not satisfy (no payable requirement) or that the seller refused after payment. */
export class PaymentFailedError extends Error {
  override readonly name = 'PaymentFailedError';
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(message);
  }
}

export interface ResourceLike {
  url: string;
  paymentRequirements?: ListedRequirements;
}

/** The terms a caller inspected: the live 402 must not ask more, nor pay anyone or anything else. */
export interface ExpectedTerms {
  network: string;
  payTo: string;
  /** The asset contract id (C...). */
  asset: string;
  /** The most it may cost (decimal units of the asset). */
  amount: string;
}

export interface PayAndFetchInit extends RequestInit {
  /** Most this call may pay (decimal); overrides the client's per-call budget. */
  maxAmount?: string;
  /** Refuse (TERMS_CHANGED, before signing) unless the 402 matches these terms (see ExpectedTerms). */
  expect?: ExpectedTerms;
  /** The fetch for this call (e.g. safeFetch); default the client's. */
  fetch?: typeof globalThis.fetch;
}

export interface PayerDeps {
  signer: PaymentSigner;
  budget: Budget;
  fetch: typeof globalThis.fetch;
  ledger: LedgerReader;
  rpcUrlFor(network: string): Promise<string>;
  /** Fills in asset code and issuer from the marketplace's network list when the 402 names only the contract. */
  resolveAsset(network: string, contractId: string): Promise<{ code: string; issuer: string } | null>;
  validForLedgers?: number;
}

export function decodeReceiptHeader(value: string | null): PaymentReceiptHeader | null {
  if (!value || value.length > 65_536) return null;
  try {
    const doc = JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as Record<string, unknown>;
    if (doc.success === false) return null;
    const transactionHash = (doc.transactionHash ?? doc.transaction) as string | undefined;
    if (typeof transactionHash !== 'string' || !/^[0-9a-f]{64}$/i.test(transactionHash)) return null;
    return { ...doc, transactionHash } as PaymentReceiptHeader;
  } catch {
    return null;
  }
}

export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

/** Fills in the asset code and issuer of a requirement that names only the contract (shared with payAndCallTool). */
export async function withAssetCode(
  deps: Pick<PayerDeps, 'resolveAsset'>,
  requirements: NormalizedRequirements,
  body: unknown,
): Promise<NormalizedRequirements> {
  if (requirements.asset.code && requirements.asset.issuer) return requirements;
  const asset = await deps.resolveAsset(requirements.network, requirements.asset.contractId);
  if (!asset)
    throw new PaymentFailedError(
      `Unknown asset contract ${requirements.asset.contractId} on ${requirements.network}`,
      'UNKNOWN_ASSET',
      402,
      body,
    );
  const filled = { ...requirements, asset: { ...requirements.asset, ...asset } };
  assertAssetShown(filled);
  return filled;
}

/**
 * The requirement to pay among a 402's: the first that matches `expect` (when given), else the first. A 402 whose
 * only exact Stellar requirements show an asset other than the one they would sign is refused (ASSET_MISMATCH).
 */
export function chooseRequirement(
  offered: ReturnType<typeof readPaymentRequired>,
  expect: ExpectedTerms | undefined,
  body: unknown,
  what: string,
): NormalizedRequirements | null {
  const accepts = offered?.accepts ?? [];
  if (!accepts.length && offered?.refused.some((e) => e instanceof AssetMismatchError)) {
    const err = offered.refused.find((e) => e instanceof AssetMismatchError) as AssetMismatchError;
    throw new PaymentFailedError(err.message, err.code, 402, body);
  }
  if (!expect) return accepts[0] ?? null;
  const match = accepts.find((r) => termsProblem(r, expect) === null);
  if (match) return match;
  if (!accepts.length) return null;
  throw new PaymentFailedError(
    `Refused before signing: ${what} asks for other terms than inspected (${termsProblem(accepts[0], expect)})`,
    'TERMS_CHANGED',
    402,
    body,
  );
}

/** Why `r` is not what was inspected, or null. A lower price is accepted; anything else must be equal. */
export function termsProblem(r: NormalizedRequirements, expect: ExpectedTerms): string | null {
  if (r.network !== expect.network) return `network ${r.network}, inspected ${expect.network}`;
  if (r.payTo !== expect.payTo) return `recipient ${r.payTo}, inspected ${expect.payTo}`;
  if (r.asset.contractId !== expect.asset) return `asset contract ${r.asset.contractId}, inspected ${expect.asset}`;
  if (r.stroops > toStroops(expect.amount)) return `amount ${r.amount}, inspected ${expect.amount}`;
  return null;
}

/**
 * Counts the payment against the budget, then signs it. The commitment stays counted once signed (see budget.ts):
 * only a settlement or the ledger moves it. Shared with payAndCallTool.
 */
export async function commitAndSign(
  deps: Omit<PayerDeps, 'fetch'>,
  requirements: NormalizedRequirements,
  maxAmount: string | undefined,
): Promise<{ payment: PaymentPayload; commitment: Commitment }> {
  assertAssetShown(requirements);
  const payer = signerPublicKey(deps.signer);
  const commitment = await deps.budget.reserve(
    { network: requirements.network, asset: requirements.asset.contractId, payTo: requirements.payTo, payer },
    requirements.stroops,
    maxAmount,
  );
  let payment: PaymentPayload;
  let latest: number;
  try {
    latest = await deps.ledger.latestLedger(requirements.network);
    payment = await signPayment(requirements, {
      signer: deps.signer,
      latestLedger: latest,
      validForLedgers: deps.validForLedgers,
    });
  } catch (err) {
    await deps.budget.abandon(commitment);
    throw err;
  }
  const nonce = xdr.SorobanAuthorizationEntry.fromXDR(payment.authorization.xdr, 'base64')
    .credentials()
    .address()
    .nonce()
    .toString();
  await deps.budget.signed(commitment, { nonce, signedAtLedger: latest, expiresAtLedger: payment.expiresAtLedger });
  return { payment, commitment };
}

export function createPayAndFetch(deps: PayerDeps) {
  return async function payAndFetch(
    target: string | URL | ResourceLike,
    init: PayAndFetchInit = {},
  ): Promise<PaidFetchResult> {
    const { maxAmount, expect, fetch: callFetch, ...requestInit } = init;
    const fetchFn = callFetch ?? deps.fetch;
    const url = typeof target === 'string' || target instanceof URL ? String(target) : target.url;
    if (/\{[^}]*\}/.test(url)) throw new Error(`${url} is a route template: pass the concrete URL to call`);
    const first = await fetchFn(url, requestInit);
    if (first.status !== 402)
      return { response: first, paid: false, receipt: null, payment: null, requirements: null, receiptTerms: null };

    const body = await first
      .clone()
      .json()
      .catch(() => undefined);
    let requirements = chooseRequirement(readPaymentRequired(first.headers, body), expect, body, url);
    if (!requirements && typeof target === 'object' && !(target instanceof URL) && target.paymentRequirements) {
      requirements = fromResourceRequirements(target.paymentRequirements);
    }
    if (!requirements)
      throw new PaymentFailedError(
        `${url} answered 402 without an exact Stellar payment requirement this SDK can pay`,
        'NO_PAYABLE_REQUIREMENT',
        402,
        body,
      );
    requirements = await withAssetCode(deps, requirements, body);
    if (expect && termsProblem(requirements, expect))
      throw new PaymentFailedError(
        `Refused before signing: ${url} asks for other terms than inspected (${termsProblem(requirements, expect)})`,
        'TERMS_CHANGED',
        402,
        body,
      );

    const { payment, commitment } = await commitAndSign(deps, requirements, maxAmount);
    const headers = new Headers(requestInit.headers);
    headers.set(requirements.x402Version === 1 ? 'X-PAYMENT' : 'PAYMENT-SIGNATURE', encodeHeader(payment));
    // From here the signature is out: whatever happens, it stays counted until settled or proven unusable.
    const response = await fetchFn(url, { ...requestInit, headers });
    const receipt = decodeReceiptHeader(
      response.headers.get('payment-response') ?? response.headers.get('x-payment-response'),
    );
    if (receipt) await deps.budget.settled(commitment, receipt.transactionHash);
    if (response.status === 402) {
      const refusal = (await response
        .clone()
        .json()
        .catch(() => undefined)) as { error?: unknown } | undefined;
      const err = refusal?.error as { code?: string; message?: string } | string | undefined;
      const code = typeof err === 'string' ? err : (err?.code ?? 'PAYMENT_REJECTED');
      const message =
        typeof err === 'object' && err?.message ? err.message : `the seller refused the payment (${code})`;
      throw new PaymentFailedError(`Payment for ${url} was refused: ${message}`, code, 402, refusal);
    }
    const receiptTerms: SellerReceiptExpectation | null = receipt
      ? {
          network: requirements.network,
          url,
          amount: requirements.stroops.toString(),
          asset: requirements.asset.contractId,
          payTo: requirements.payTo,
          payer: signerPublicKey(deps.signer),
          transaction: receipt.transactionHash,
        }
      : null;
    return { response, paid: receipt !== null, receipt, payment, requirements, receiptTerms };
  };
}
