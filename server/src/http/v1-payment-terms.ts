import type { components } from '../generated/openapi';
import { DomainError } from '../domain/errors';
import { isAmount, toStroops } from '../domain/amount';
import type { PaymentPayloadInput, PaymentRequirementsInput } from '../domain/facilitator/verify-payment';

type S = components['schemas'];

/**
 * The /v1 face's payment terms as the facilitator takes them: the contract's decimal amounts (the `Amount` schema,
 * already checked by the request validator) become Stroops here, once; nothing else changes. Amounts go back out as
 * decimal strings in the presenters (formatAmount).
 */
export function v1Payload(p: S['PaymentPayload']): PaymentPayloadInput {
  // Not an amount (only without the validator): null, which the declared-terms rule refuses.
  return { ...p, amount: isAmount(p.amount) ? toStroops(p.amount) : null };
}

export function v1Requirements(r: S['PaymentRequirements']): PaymentRequirementsInput {
  if (!isAmount(r.amount))
    throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The required amount must be a positive decimal amount');
  return { ...r, amount: toStroops(r.amount) };
}
