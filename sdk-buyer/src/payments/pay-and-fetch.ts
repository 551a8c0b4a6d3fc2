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
import { readPaymentRequired, fromResourceRequirements, type NormalizedRequirements } from './requirements.js';
import { signPayment, type PaymentPayload, type PaymentSigner } from './sign-payment.js';
import { Budget } from './budget.js';

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
  paymentRequirements?: {
    network: string;
    amount: string;
    payTo: string;
    asset?: { code: string; issuer: string; contractId?: string };
    maxTimeoutSeconds?: number;
    resource?: string;
  };
}

export interface PayAndFetchInit extends RequestInit {
  /** Most this call may pay (decimal); overrides the client's per-call budget. */
  maxAmount?: string;
}

export interface PayerDeps {
  signer: PaymentSigner;
  budget: Budget;
  fetch: typeof globalThis.fetch;
  rpcUrlFor(network: string): Promise<string>;
  /** Fills in asset code and issuer from the marketplace's network list when the 402 names only the contract. */
  resolveAsset(network: string, contractId: string): Promise<{ code: string; issuer: string } | null>;
  validForLedgers?: number;
}

export function decodeReceiptHeader(value: string | null): PaymentReceiptHeader | null {
  if (!value) return null;
  try {
    const doc = JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as Record<string, unknown>;
    const transactionHash = (doc.transactionHash ?? doc.transaction) as string | undefined;
    if (typeof transactionHash !== 'string') return null;
    return { ...doc, transactionHash } as PaymentReceiptHeader;
  } catch {
    return null;
  }
}

export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

/** Fills in the asset code and issuer of a requirement that names only the contract (shared with payAndCallTool). */
export async function withAssetCode(deps: Pick<PayerDeps, 'resolveAsset'>, requirements: NormalizedRequirements, body: unknown): Promise<NormalizedRequirements> {
  if (requirements.asset.code && requirements.asset.issuer) return requirements;
  const asset = await deps.resolveAsset(requirements.network, requirements.asset.contractId);
  if (!asset) throw new PaymentFailedError(`Unknown asset contract ${requirements.asset.contractId} on ${requirements.network}`, 'UNKNOWN_ASSET', 402, body);
  return { ...requirements, asset: { ...requirements.asset, ...asset } };
}

export function createPayAndFetch(deps: PayerDeps) {
  return async function payAndFetch(target: string | URL | ResourceLike, init: PayAndFetchInit = {}): Promise<PaidFetchResult> {
    const { maxAmount, ...requestInit } = init;
    const url = typeof target === 'string' || target instanceof URL ? String(target) : target.url;
    if (/\{[^}]*\}/.test(url)) throw new Error(`${url} is a route template: pass the concrete URL to call`);
    const first = await deps.fetch(url, requestInit);
    if (first.status !== 402) return { response: first, paid: false, receipt: null, payment: null, requirements: null };

    const body = await first.clone().json().catch(() => undefined);
    const offered = readPaymentRequired(first.headers, body);
    let requirements = offered?.accepts[0] ?? null;
    if (!requirements && typeof target === 'object' && !(target instanceof URL) && target.paymentRequirements) {
      requirements = fromResourceRequirements(target.paymentRequirements);
    }
    if (!requirements) throw new PaymentFailedError(`${url} answered 402 without an exact Stellar payment requirement this SDK can pay`, 'NO_PAYABLE_REQUIREMENT', 402, body);
    requirements = await withAssetCode(deps, requirements, body);

    deps.budget.reserve(requirements.stroops, maxAmount);
    let settled = false;
    try {
      const payment = await signPayment(requirements, { signer: deps.signer, rpcUrl: await deps.rpcUrlFor(requirements.network), validForLedgers: deps.validForLedgers });
      const headers = new Headers(requestInit.headers);
      headers.set(requirements.x402Version === 1 ? 'X-PAYMENT' : 'PAYMENT-SIGNATURE', encodeHeader(payment));
      const response = await deps.fetch(url, { ...requestInit, headers });
      const receipt = decodeReceiptHeader(response.headers.get('payment-response') ?? response.headers.get('x-payment-response'));
      if (response.status === 402) {
        const refusal = (await response.clone().json().catch(() => undefined)) as { error?: unknown } | undefined;
        const err = refusal?.error as { code?: string; message?: string } | string | undefined;
        const code = typeof err === 'string' ? err : (err?.code ?? 'PAYMENT_REJECTED');
        const message = typeof err === 'object' && err?.message ? err.message : `the seller refused the payment (${code})`;
        throw new PaymentFailedError(`Payment for ${url} was refused: ${message}`, code, 402, refusal);
      }
      settled = receipt !== null;
      return { response, paid: settled, receipt, payment, requirements };
    } finally {
      if (!settled) deps.budget.release(requirements.stroops);
    }
  };
}
