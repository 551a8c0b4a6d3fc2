/**
 * Domain errors. Domain code throws these; only http/ turns them into HTTP responses. Codes are the contract's
 * stable strings (see openapi/components/schemas/ErrorCode.yaml, which lists them all with their HTTP status).
 */
export const ERROR_CODES = [
  'RESOURCE_NOT_FOUND',
  'SELLER_DOMAIN_UNVERIFIED',
  'CATALOG_VALIDATION_FAILED',
  'ROUTE_TEMPLATE_INVALID',
  'UNSUPPORTED_NETWORK',
  'UNSUPPORTED_ASSET',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
  'INVALID_PAYMENT_PAYLOAD',
  'INVALID_SIGNATURE',
  'AUTH_EXPIRED',
  'REPLAY_DETECTED',
  'AMOUNT_MISMATCH',
  'ASSET_MISMATCH',
  'RECIPIENT_MISMATCH',
  'SETTLEMENT_FAILED',
  'TRUSTLINE_REQUIRED',
  'PAYMENT_REQUIRED',
  'INVALID_REQUEST',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'CONFLICT',
  'IDEMPOTENCY_CONFLICT',
  'PAYLOAD_TOO_LARGE',
  'INSUFFICIENT_BALANCE',
  'SERVICE_UNAVAILABLE',
  'ACCOUNT_NOT_FOUND',
  'SIMULATION_FAILED',
  'PAYEE_NOT_SELLER',
  'SELF_PAYMENT',
  'AMOUNT_BELOW_MINIMUM',
  'FEE_BUDGET_EXHAUSTED',
  'UNSUPPORTED_MEDIA_TYPE',
  'DUPLICATE_RESOURCE',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorDetail {
  field?: string;
  message: string;
  code?: string;
}

/**
 * A refusal with a contract code. It captures no stack (issue #31): a refusal is an answer, not a fault, the error
 * handler never logs a DomainError's stack, and V8's stack capture was a measurable share of a refused request's CPU
 * (hostile traffic is refused by the thousand per second).
 */
export class DomainError extends Error {
  constructor(
    public readonly code: ErrorCode,
    message: string,
    public readonly details: ErrorDetail[] = [],
    /** Extra response headers, e.g. Retry-After for RATE_LIMITED. */
    public readonly headers: Record<string, string> = {},
  ) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = 'DomainError';
  }
}

export const notFound = (kind: string, id: string): DomainError =>
  new DomainError(kind === 'resource' ? 'RESOURCE_NOT_FOUND' : 'NOT_FOUND', `No ${kind} with id ${id}`);
