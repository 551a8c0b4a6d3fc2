import type { components } from '../generated/openapi';
import { DomainError } from '../domain/errors';
import { isAmount, toStroops } from '../domain/amount';
import {
  resolveAsset,
  type NetworkLookup,
  type PaymentPayloadInput,
  type PaymentRequirementsInput,
} from '../domain/facilitator/verify-payment';

type S = components['schemas'];
type Assets = Pick<NetworkLookup, 'asset'>;

/**
 * The /v1 face's payment terms as the facilitator takes them, converted here once: the contract's decimal amounts
 * (the `Amount` schema, already checked by the request validator) become Stroops, and an asset named by code and
 * issuer is resolved against the configured networks (its contract id, or null when not registered there). Amounts
 * go back out as decimal strings in the presenters (formatAmount).
 */
export function v1Payload(networks: Assets, p: S['PaymentPayload']): PaymentPayloadInput {
  return {
    ...p,
    // Not an amount (only without the validator): null, which the declared-terms rule refuses.
    amount: isAmount(p.amount) ? toStroops(p.amount) : null,
    asset: resolveAsset(networks, p.network, p.asset.code, p.asset.issuer),
  };
}

export function v1Requirements(networks: Assets, r: S['PaymentRequirements']): PaymentRequirementsInput {
  if (!isAmount(r.amount))
    throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The required amount must be a positive decimal amount');
  const { asset, ...terms } = r;
  return {
    ...terms,
    amount: toStroops(r.amount),
    ...(asset ? { asset: resolveAsset(networks, r.network, asset.code, asset.issuer) } : {}),
  };
}
