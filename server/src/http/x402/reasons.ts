import type { ErrorCode } from '../../domain/errors';

/**
 * Our error codes -> x402 reason strings (`invalidReason` of verify, `errorReason` of settle). The one table; the
 * contract (openapi/paths/x402_verify.yaml) and README "x402 facilitator API" show the same. x402 v2 standard
 * reasons where one fits (insufficient_funds, invalid_network, invalid_payload, invalid_payment_requirements,
 * unexpected_*), the `exact` Stellar reasons of @x402/stellar for scheme checks, and the cross-SDK
 * `duplicate_settlement` for a replay.
 */
export const X402_REASONS: Partial<Record<ErrorCode, string>> = {
  INVALID_PAYMENT_PAYLOAD: 'invalid_payload',
  INVALID_REQUEST: 'invalid_payload',
  UNSUPPORTED_NETWORK: 'invalid_network',
  UNSUPPORTED_ASSET: 'invalid_exact_stellar_payload_wrong_asset',
  ASSET_MISMATCH: 'invalid_exact_stellar_payload_wrong_asset',
  AMOUNT_MISMATCH: 'invalid_exact_stellar_payload_wrong_amount',
  RECIPIENT_MISMATCH: 'invalid_exact_stellar_payload_wrong_recipient',
  INVALID_SIGNATURE: 'invalid_exact_stellar_payload_missing_payer_signature',
  AUTH_EXPIRED: 'invalid_exact_stellar_payload_signature_expired',
  REPLAY_DETECTED: 'duplicate_settlement',
  INSUFFICIENT_BALANCE: 'insufficient_funds',
  TRUSTLINE_REQUIRED: 'invalid_exact_stellar_payload_trustline_required',
  RESOURCE_NOT_FOUND: 'invalid_payment_requirements',
  SETTLEMENT_FAILED: 'settle_exact_stellar_transaction_failed',
};

export function x402Reason(code: ErrorCode | null, operation: 'verify' | 'settle'): string {
  return (
    (code && X402_REASONS[code]) ?? (operation === 'verify' ? 'unexpected_verify_error' : 'unexpected_settle_error')
  );
}
