import { DomainError, type ErrorCode } from '../../errors';

/**
 * One rule of the x402 `exact` Stellar scheme (or of our accountability policy): a stable id, the error code it
 * answers with, the x402 reason string the `/x402` face reports for it, and the spec's words. Every failed check
 * throws a DomainError whose first detail carries the rule id (`details[0].code`), so a caller (and a test) can
 * tell which rule refused, whatever the message says.
 */
export interface Rule {
  id: string;
  code: ErrorCode;
  /** x402 `invalidReason` / `errorReason` (the reference facilitator's strings where one exists). */
  x402Reason: string;
  /** What the rule requires, in the spec's words (server/README.md "Payment guarantees" lists these). */
  requires: string;
}

export function refuse(rule: Rule, message: string): DomainError {
  return new DomainError(rule.code, message, [{ code: rule.id, message }]);
}

/** Throws the rule's error with `message` unless `ok`. */
export function ensure(rule: Rule, ok: boolean, message: string): void {
  if (!ok) throw refuse(rule, message);
}
