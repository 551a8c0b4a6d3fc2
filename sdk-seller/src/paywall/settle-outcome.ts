/**
 * The settlement outcome a paywall may act on, shared by paywall() and paidTool(). The rule: content leaves only
 * on a CONFIRMED settlement; a definite failure is a refusal with its reason; anything in between (a cut
 * connection, `409` "still in progress", `202 settlement_pending`, a 5xx) is not an answer, so the service is asked
 * for the payment's outcome within a bounded wait:
 *
 * 1. POST /v1/settle with one Idempotency-Key for this payment (the transport retries network errors, 429, 502 and
 *    503 with the same key; the service replays the first answer or says "still in progress").
 * 2. `200 settled` -> settled. A definite refusal (400, 402, 404, 422, SETTLEMENT_FAILED) -> failed, with its code.
 * 3. Otherwise GET /v1/payments/{paymentAttemptId} (every `pollMs`): `settled` -> settled; `settlement_failed`,
 *    `expired`, `verification_failed`, `cancelled`, `replayed` -> failed; `verified` (never claimed: the settle did
 *    not arrive) -> the same settle is sent again; `settlement_pending` -> wait.
 * 4. When `waitMs` runs out: unknown. The paywall then withholds the content and answers 503 with the payment id
 *    (the buyer's money may still move: it is not asked to pay again).
 *
 * A settle call that gets no answer within `facilitatorTimeoutMs` (default 30 s, the stock middleware's bound) is
 * indeterminate, never a failure: the outcome is `unknown` at once (the payment may still settle).
 */
import crypto from 'node:crypto';
import type { components } from '../generated/openapi.js';
import { ApiError } from '../core/errors.js';

type Schemas = components['schemas'];

/** What the paywall needs of the marketplace: verify and settle (a payments-scoped key is enough) and reading its own
 * payments. */
export interface SettlingClient {
  facilitator: {
    settle(input: Schemas['SettleRequest'], o?: { idempotencyKey?: string }): Promise<Schemas['SettleResponse']>;
  };
  payments?: { get(paymentId: string): Promise<Schemas['PaymentDetail']> };
  /** Reads the receipt's attestation when the outcome was learnt from the payment (optional). */
  receipts?: { get(receiptId: string): Promise<{ attestation?: string }> };
}

export type SettleOutcome =
  | {
      kind: 'settled';
      transactionHash: string;
      receiptId: string | null;
      settlementId: string | null;
      ledger: number | null;
      network: string;
      evidence?: string;
      attestation?: string;
      answer?: Schemas['SettleResponse'];
    }
  | { kind: 'failed'; code: string; message: string; status: number; error?: unknown }
  | { kind: 'unknown'; code: string; message: string; paymentAttemptId: string };

export interface SettleWait {
  /** Most time spent finding out the outcome after the first settle. Default 30 s. */
  waitMs?: number;
  /** Between two reads of the payment. Default 500 ms. */
  pollMs?: number;
  /** Longest wait for one facilitator call (verify, settle); no answer by then is indeterminate. Default 30 s. */
  facilitatorTimeoutMs?: number;
}

export const FACILITATOR_TIMEOUT_MS = 30_000;

/** Thrown when a facilitator call gets no answer in time: its outcome is unknown (never read it as a refusal). */
export class FacilitatorTimeout extends Error {
  constructor(
    readonly operation: 'verify' | 'settle',
    readonly timeoutMs: number,
  ) {
    super(`The marketplace's facilitator did not answer ${operation} within ${Math.round(timeoutMs / 1000)} s`);
    this.name = 'FacilitatorTimeout';
  }
}

/** `call()`, or FacilitatorTimeout after `timeoutMs` (the call itself goes on; its late answer is ignored). */
export async function withFacilitatorTimeout<T>(
  operation: 'verify' | 'settle',
  timeoutMs: number,
  call: () => Promise<T>,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const running = call();
  running.catch(() => undefined);
  try {
    return await Promise.race([
      running,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new FacilitatorTimeout(operation, timeoutMs)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * POST /v1/verify of one payment against the seller's terms, bounded by `facilitatorTimeoutMs` (default 30 s; no
 * answer by then throws FacilitatorTimeout: indeterminate, not a refusal). Shared by paywall() and paidTool().
 */
export function verifyWithFacilitator(
  client: { facilitator: { verify(input: Schemas['VerifyRequest']): Promise<Schemas['VerifyResponse']> } },
  payload: Schemas['PaymentPayload'],
  paymentRequirements: Schemas['PaymentRequirements'],
  resourceId: string | undefined,
  wait: Pick<SettleWait, 'facilitatorTimeoutMs'> = {},
): Promise<Schemas['VerifyResponse']> {
  const request = { x402Version: payload.x402Version, paymentPayload: payload, paymentRequirements, resourceId };
  return withFacilitatorTimeout('verify', wait.facilitatorTimeoutMs ?? FACILITATOR_TIMEOUT_MS, () =>
    client.facilitator.verify(request),
  );
}

/** What a buyer is told when a facilitator call timed out: the outcome is pending, the content withheld, do not pay
 * again. */
export function pendingMessage(err: FacilitatorTimeout): string {
  return (
    `${err.message}: the payment's outcome is pending, not failed. The content is withheld; do not pay again, ` +
    `retry later`
  );
}

const DEFINITE_STATUSES = new Set([400, 402, 404, 413, 422]);
const FAILED_PAYMENT_STATES = new Set(['settlement_failed', 'expired', 'verification_failed', 'cancelled', 'replayed']);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function definiteFailure(err: unknown): SettleOutcome | null {
  if (!(err instanceof ApiError)) return null;
  if (DEFINITE_STATUSES.has(err.status) || err.code === 'SETTLEMENT_FAILED')
    return {
      kind: 'failed',
      code: err.code,
      message: err.message,
      status: err.status === 502 ? 402 : err.status,
      error: err,
    };
  return null;
}

export async function settleOutcome(
  client: SettlingClient,
  request: Schemas['SettleRequest'],
  wait: SettleWait = {},
): Promise<SettleOutcome> {
  const waitMs = wait.waitMs ?? 30_000;
  const pollMs = wait.pollMs ?? 500;
  const deadline = Date.now() + waitMs;
  const idempotencyKey = crypto.randomUUID();
  const id = request.paymentAttemptId;
  let lastProblem = 'no answer from the marketplace';
  for (;;) {
    let answer: Schemas['SettleResponse'] | null = null;
    try {
      answer = await withFacilitatorTimeout('settle', wait.facilitatorTimeoutMs ?? FACILITATOR_TIMEOUT_MS, () =>
        client.facilitator.settle(request, { idempotencyKey }),
      );
    } catch (err) {
      if (err instanceof FacilitatorTimeout)
        return { kind: 'unknown', code: 'SETTLEMENT_UNCONFIRMED', message: pendingMessage(err), paymentAttemptId: id };
      const definite = definiteFailure(err);
      if (definite) return definite;
      lastProblem = err instanceof ApiError ? `${err.code}: ${err.message}` : (err as Error).message;
    }
    if (answer?.status === 'settled' && answer.ledger !== null) {
      return {
        kind: 'settled',
        transactionHash: answer.transactionHash,
        receiptId: answer.receiptId,
        settlementId: answer.settlementId,
        ledger: answer.ledger,
        network: answer.network,
        evidence: answer.evidence,
        attestation: (answer as { attestation?: string }).attestation,
        answer,
      };
    }
    if (answer) lastProblem = `settlement ${answer.status}`;
    if (!client.payments)
      return {
        kind: 'unknown',
        code: 'SETTLEMENT_UNCONFIRMED',
        message: `${lastProblem}; the paywall's client cannot read payments to find out`,
        paymentAttemptId: id,
      };
    // Ask the service what became of the payment until it is final, or the attempt was never claimed.
    for (;;) {
      if (Date.now() >= deadline)
        return {
          kind: 'unknown',
          code: 'SETTLEMENT_UNCONFIRMED',
          message: `The settlement is not confirmed yet (${lastProblem}); the content is withheld`,
          paymentAttemptId: id,
        };
      await sleep(Math.min(pollMs, Math.max(0, deadline - Date.now())));
      let payment: Schemas['PaymentDetail'];
      try {
        payment = await client.payments.get(id);
      } catch (err) {
        lastProblem = err instanceof ApiError ? `${err.code}: ${err.message}` : (err as Error).message;
        continue;
      }
      if (payment.status === 'settled' && payment.transactionHash) {
        const receipt =
          payment.receiptId && client.receipts ? await client.receipts.get(payment.receiptId).catch(() => null) : null;
        const r = receipt as { attestation?: string; ledger?: number | null; evidence?: string } | null;
        return {
          kind: 'settled',
          transactionHash: payment.transactionHash,
          receiptId: payment.receiptId,
          settlementId: payment.settlementId,
          ledger: r?.ledger ?? null,
          network: payment.network,
          evidence: r?.evidence,
          attestation: r?.attestation,
        };
      }
      if (FAILED_PAYMENT_STATES.has(payment.status)) {
        return {
          kind: 'failed',
          code: payment.failureCode ?? 'SETTLEMENT_FAILED',
          message: payment.failureReason ?? `The payment is ${payment.status}`,
          status: 402,
        };
      }
      // never claimed: send the same settle again
      if (payment.status === 'verified' || payment.status === 'created') break;
    }
  }
}

/** The x402 SettlementResponse of a confirmed settlement (PAYMENT-RESPONSE header, MCP
 * `_meta["x402/payment-response"]`). */
export function confirmedSettlementResponse(
  outcome: Extract<SettleOutcome, { kind: 'settled' }>,
  payer: string,
  extra: Record<string, unknown> = {},
) {
  return {
    success: true,
    transaction: outcome.transactionHash,
    transactionHash: outcome.transactionHash,
    receiptId: outcome.receiptId,
    settlementId: outcome.settlementId,
    network: outcome.network,
    payer,
    status: 'settled' as const,
    ledger: outcome.ledger,
    ...extra,
  };
}
