import type { RequestHandler } from 'express';
import type { Principal } from '../domain/auth/principal';
import { DomainError } from '../domain/errors';
import type { MatchedOperation, RouteMatch } from './operation-matcher';

/**
 * Who may call which operation: the one place it is decided (issue #34 "policy in one layer"). The domain never sees
 * an operationId; its use cases check only whom the data belongs to (`assertActsFor`). Checked once per request,
 * before the body is parsed or validated, for every operation of the spec (the MCP endpoint included).
 *
 * - An operation whose `security` has no anonymous alternative needs a key (401 UNAUTHORIZED).
 * - Operator-only operations need the operator key (403 FORBIDDEN for a seller key).
 * - A seller key with the `payments` scope may call PAYMENTS_SCOPE_OPERATIONS only (403 FORBIDDEN); an `admin` key
 *   may call every operation that is not operator-only.
 */

/**
 * The operations a `payments` key may call: the facilitator face (verify, settle, supported, on /v1 and /x402, and
 * the x402 Bazaar list and search, which stock x402 clients call with the same auth headers), the signing keys of the
 * attestations, and reads of the seller's own payments, settlements and receipts.
 */
export const PAYMENTS_SCOPE_OPERATIONS: ReadonlySet<string> = new Set([
  'verifyPayment',
  'settlePayment',
  'verifyPaymentPayload',
  'settlePaymentPayload',
  'getSupported',
  'getSupportedKinds',
  'getFacilitatorDescription',
  'listBazaarResources',
  'searchBazaarResources',
  'getReceiptKeys',
  'listPayments',
  'getPayment',
  'listSellerPayments',
  'getSettlement',
  'getReceipt',
]);

/** Operations for the operator key only: metrics, the dashboard, conformance runs and fees per seller. */
export const OPERATOR_ONLY_OPERATIONS: ReadonlySet<string> = new Set([
  'getMetrics',
  'getOperationsDashboard',
  'listConformanceRuns',
  'createConformanceRun',
  'getConformanceRun',
  'listSellerFees',
]);

/** Throws the refusal for `principal` calling `operation`, or returns when it may. */
export function authorize(principal: Principal, operation: MatchedOperation): void {
  const operatorOnly = OPERATOR_ONLY_OPERATIONS.has(operation.operationId);
  if (principal.role === 'public' && (operation.keyRequired || operatorOnly)) {
    throw new DomainError(
      'UNAUTHORIZED',
      operatorOnly
        ? 'The operator key is required'
        : 'This operation requires an API key (Authorization: Bearer <key>)',
    );
  }
  if (principal.role !== 'seller') return;
  if (operatorOnly) throw new DomainError('FORBIDDEN', 'This operation is for the operator key only');
  if (principal.scope === 'admin' || PAYMENTS_SCOPE_OPERATIONS.has(operation.operationId)) return;
  throw new DomainError(
    'FORBIDDEN',
    'This API key has the payments scope: it may verify, settle and read its own payments only; use an admin key',
  );
}

/**
 * The policy as middleware, after the key lookup and before the body parser. Paths and methods the spec does not
 * know are left to the 404 handler; the match is kept in `res.locals.route` for the handlers' mount.
 */
export function enforceAccessPolicy(match: (method: string, path: string) => RouteMatch | null): RequestHandler {
  return (req, res, next) => {
    const route = match(req.method, req.path);
    res.locals.route = route;
    if (!route?.operation) return next();
    try {
      authorize(res.locals.principal as Principal, route.operation);
      next();
    } catch (err) {
      next(err);
    }
  };
}
