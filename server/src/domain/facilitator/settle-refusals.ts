import { DomainError } from '../errors';
import { RULES } from './rules/catalog';
import type { AttemptRecord, FeeScope } from './types';

/** Settle's refusals that are not a rule of the scheme: the attempt's state, the fee budgets, the payer's turn. */

export function replayed(attempt: AttemptRecord): DomainError {
  return new DomainError(
    'REPLAY_DETECTED',
    `This payment was already claimed for settlement (payment attempt ${attempt.id}); one signed payment settles once`,
    [{ field: 'paymentAttemptId', message: attempt.id }],
  );
}

/** Only a `verified` attempt can be settled; every other state has its own refusal. */
export function refuseUnlessVerified(attempt: AttemptRecord): void {
  switch (attempt.status) {
    case 'verified':
      return;
    case 'settled':
    case 'settlement_pending':
    case 'replayed':
      throw replayed(attempt);
    case 'settlement_failed':
      throw new DomainError('SETTLEMENT_FAILED', `The settlement failed: ${attempt.failureReason ?? 'unknown reason'}`);
    case 'expired':
      throw new DomainError('AUTH_EXPIRED', 'The authorization expired before settlement');
    default:
      throw new DomainError('PAYMENT_REQUIRED', 'This payment attempt was never verified');
  }
}

const BUDGET_WORDS: Record<FeeScope, string> = {
  seller: "The seller's network-fee budget for today is spent",
  payer: "This payer's network-fee budget for today is spent",
  client: "This client address's network-fee budget for today is spent (every seller key used from it counts together)",
  global: "The facilitator's network-fee budget for today is spent",
};

export function budgetExhausted(scope: FeeScope): DomainError {
  const now = new Date();
  const retryAfter = Math.ceil(
    (Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000,
  );
  return new DomainError(
    'FEE_BUDGET_EXHAUSTED',
    `${BUDGET_WORDS[scope]}; nothing was submitted`,
    [{ code: RULES.feeBudget.id, field: scope, message: `daily ${scope} fee budget` }],
    {
      'Retry-After': String(retryAfter),
    },
  );
}

/** Thrown inside a channel's cycle when the payer's other settlement holds the payer's turn: settle tries again, then
 * 503. */
export class PayerBusy extends Error {}

export function payerBusy(): DomainError {
  return new DomainError(
    'SERVICE_UNAVAILABLE',
    'This payer has another settlement in flight on this asset; the payment was not used: retry the same ' +
      'settle shortly',
    [{ code: RULES.payerTurn.id, message: 'one transfer in flight per payer and asset' }],
    { 'Retry-After': '5' },
  );
}
