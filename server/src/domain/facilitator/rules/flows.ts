import { RULES } from './catalog';
import { ensure } from './rule';

/**
 * x402 payment flows (issue #30). @x402/core 2.2x names three (`PaymentFlowName`): `authorization` (verify before
 * the resource handler, settle after it: the flow the `exact` Stellar spec describes, and the default when
 * `extra.paymentFlow` is absent), `upfront` (settle before the handler, no verify) and `escrow` (deposit before the
 * handler, settle again after it). A resource server writes a flow other than the default into the requirements'
 * `extra.paymentFlow`.
 *
 * This facilitator settles `authorization` and `upfront` for `exact` on Stellar: both are the one SEP-41
 * `transfer(from, to, amount)` the payer signed, and settle runs every verification rule on its own whenever it is
 * called, so settling before the handler needs nothing but the token's contract. `escrow` is refused: holding the
 * funds and releasing them in a second settle needs an escrow contract, which the `exact` Stellar scheme does not
 * define (its payload is a transfer straight to `payTo`). Any other name is not a flow at all.
 */
export const SUPPORTED_PAYMENT_FLOWS = ['authorization', 'upfront'] as const;
export type SupportedPaymentFlow = (typeof SUPPORTED_PAYMENT_FLOWS)[number];

/** The flow `extra` names (`authorization` when it names none), refused by rule `protocol.payment_flow_supported`
 * unless supported. */
export function paymentFlowOf(extra: unknown, where: string): SupportedPaymentFlow {
  const named =
    extra !== null && typeof extra === 'object' ? (extra as Record<string, unknown>).paymentFlow : undefined;
  if (named === undefined) return 'authorization';
  const flow = typeof named === 'string' ? named : JSON.stringify(named);
  ensure(
    RULES.paymentFlowSupported,
    flow !== 'escrow',
    `${where}.extra.paymentFlow "escrow" is not settled here: the exact scheme on Stellar pays payTo directly ` +
      `and defines no escrow contract to hold the funds (supported: ${SUPPORTED_PAYMENT_FLOWS.join(', ')})`,
  );
  ensure(
    RULES.paymentFlowSupported,
    (SUPPORTED_PAYMENT_FLOWS as readonly string[]).includes(flow),
    `${where}.extra.paymentFlow ${JSON.stringify(flow).slice(0, 80)} is not an x402 payment flow this ` +
      `facilitator settles (supported: ${SUPPORTED_PAYMENT_FLOWS.join(', ')})`,
  );
  return flow as SupportedPaymentFlow;
}

/** The flow of an x402 payment: the requirements' and the payload's accepted requirements' flows must be supported and
 * the same. */
export function checkPaymentFlow(requirementsExtra: unknown, acceptedExtra: unknown): SupportedPaymentFlow {
  const required = paymentFlowOf(requirementsExtra, 'paymentRequirements');
  const accepted = paymentFlowOf(acceptedExtra, 'paymentPayload.accepted');
  ensure(
    RULES.paymentFlowSupported,
    accepted === required,
    `The payload accepted the ${accepted} flow; the requirements ask for ${required}`,
  );
  return required;
}
